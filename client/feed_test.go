package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// streams serves h, ending each change stream after its first events, as
// the server's shutdown or a proxy does. It records each stream's
// Last-Event-ID; before, when set, runs as stream n (from 1) is asked for
// and may answer it instead (returning false).
type streams struct {
	h      http.Handler
	events int // per stream
	before func(n int, w http.ResponseWriter) bool

	mu      sync.Mutex
	lastIDs []string
}

func (s *streams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/changes/stream") {
		s.h.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	n := len(s.lastIDs)
	s.mu.Unlock()
	if s.before != nil && !s.before(n, w) {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s.h.ServeHTTP(&endingWriter{ResponseWriter: w, left: s.events, end: cancel}, r.WithContext(ctx))
}

// endingWriter passes on the first left events written to it, then ends
// the stream (the handler's context) and drops the rest.
type endingWriter struct {
	http.ResponseWriter
	left int
	end  func()
}

func (w *endingWriter) Write(b []byte) (int, error) {
	cut := 0
	for w.left > 0 && cut < len(b) {
		i := bytes.Index(b[cut:], []byte("\n\n"))
		if i < 0 {
			cut = len(b)
			break
		}
		cut += i + 2
		w.left--
	}
	if _, err := w.ResponseWriter.Write(b[:cut]); err != nil {
		return 0, err
	}
	if w.left == 0 {
		w.end()
	}
	return len(b), nil
}

func (w *endingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// feedServer is a project with table t, served through s, and an admin
// client of it.
func feedServer(t *testing.T, s *streams) (*pd.Store, string, *client.Client) {
	store, dir := pdtest.Open(t, nil)
	_, admin, err := store.CreateProject(ctx, "acme", "Acme")
	if err != nil {
		t.Fatal(err)
	}
	s.h = httpapi.New(store, nil)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, admin.Token, nil)
	if _, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}}); err != nil {
		t.Fatal(err)
	}
	return store, dir, c
}

// follow collects the changes the feed yields until it has n or yields an
// error (returned).
func follow(t *testing.T, c *client.Client, q pd.ChangeQuery, n int) ([]int64, error) {
	fctx, cancel := context.WithTimeout(ctx, time.Minute) // only against hanging
	defer cancel()
	var ids []int64
	for ch, err := range c.FollowChanges(fctx, "acme", q) {
		if err != nil {
			return ids, err
		}
		if ids = append(ids, ch.ID); len(ids) == n {
			break
		}
	}
	return ids, fctx.Err()
}

// TestFeedReopensItsStream: a stream that ends is opened again after the
// last change yielded (Last-Event-ID), through a 503, and yields each
// change once.
func TestFeedReopensItsStream(t *testing.T) {
	is := is.New(t)
	s := &streams{events: 2, before: func(n int, w http.ResponseWriter) bool {
		if n != 2 {
			return true
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"ok":false,"data":null,"error":{"code":"server_busy","message":"the server is shutting down"}}`)
		return false
	}}
	_, _, c := feedServer(t, s)
	for i := range 7 {
		_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": i}})
		is.NoErr(err)
	}
	ids, err := follow(t, c, pd.ChangeQuery{}, 8)
	is.NoErr(err)
	is.Equal(ids, []int64{1, 2, 3, 4, 5, 6, 7, 8})        // the table's creation and 7 inserts, each once
	is.Equal(s.lastIDs, []string{"", "2", "2", "4", "6"}) // reopened after the last change yielded, through the 503
}

// TestFeedStopsOnAnswers: an answer to the request itself ends the feed
// with its error: the resume point expired (410), the token revoked (401).
func TestFeedStopsOnAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(t *testing.T, store *pd.Store, dir string)
		want pd.Code
	}{
		{"Expired", func(t *testing.T, store *pd.Store, dir string) {
			pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), `DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`)
		}, pd.ErrChangesExpired},
		{"Revoked", func(t *testing.T, store *pd.Store, dir string) {
			toks, err := store.ListTokens(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range toks {
				if _, err := store.RevokeToken(ctx, "acme", tok.ID); err != nil {
					t.Fatal(err)
				}
			}
		}, pd.ErrInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var store *pd.Store
			var dir string
			s := &streams{events: 1}
			s.before = func(n int, w http.ResponseWriter) bool {
				if n == 2 {
					tc.then(t, store, dir)
				}
				return true
			}
			store, dir, c := feedServer(t, s)
			for i := range 3 {
				_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": i}})
				is.NoErr(err)
			}
			ids, err := follow(t, c, pd.ChangeQuery{}, 4)
			is.Equal(ids, []int64{1}) // the first stream's
			is.True(errors.Is(err, tc.want))
		})
	}
}

// cutter is a TCP proxy to addr that cuts each connection after passing
// on limit bytes of the server's answer: mid-event, mostly.
func cutter(t *testing.T, addr string, limit int64) string {
	url, _ := cuttingProxy(t, func() string { return addr }, func(int) int64 { return limit })
	return url
}

// TestFeedSurvivesCutStreams: streams cut mid-event are opened again and
// yield every change once, the cut event included.
func TestFeedSurvivesCutStreams(t *testing.T) {
	is := is.New(t)
	store, admin := pdtest.NewProject(t, nil)
	srv := httptest.NewServer(httpapi.New(store, nil))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)
	for i := range 20 {
		_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": strings.Repeat("x", i*10)}})
		is.NoErr(err)
	}
	cut := client.New(cutter(t, srv.Listener.Addr().String(), 1000), admin, nil)
	var want []int64
	for id := range 21 {
		want = append(want, int64(id+1))
	}
	ids, err := follow(t, cut, pd.ChangeQuery{}, 21)
	is.NoErr(err)
	is.Equal(ids, want)
}

// TestFeedYieldsLargeChanges: a change whose event is one line longer
// than a line scanner's usual cap (3 MiB of <, HTML-escaped by the server
// to 18 MiB) is yielded whole.
func TestFeedYieldsLargeChanges(t *testing.T) {
	is := is.New(t)
	_, _, c := feedServer(t, &streams{events: 100})
	big := strings.Repeat("<", 3<<20)
	_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": big}})
	is.NoErr(err)
	fctx, cancel := context.WithTimeout(ctx, time.Minute) // only against hanging
	defer cancel()
	for ch, err := range c.FollowChanges(fctx, "acme", pd.ChangeQuery{After: 1}) {
		is.NoErr(err)
		is.Equal(ch.Row["v"], big)
		break
	}
}

// TestFeedEndsWithItsContext: a feed waiting for changes ends, without an
// error, when its context does.
func TestFeedEndsWithItsContext(t *testing.T) {
	is := is.New(t)
	_, _, c := feedServer(t, &streams{events: 100})
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		var last error
		for _, err := range c.FollowChanges(fctx, "acme", pd.ChangeQuery{After: 1}) {
			last = err
		}
		done <- last
	}()
	cancel()
	select {
	case err := <-done:
		is.NoErr(err)
	case <-time.After(time.Minute): // only against hanging
		t.Fatal("the feed did not end")
	}
}

// TestFeedResumesPastOtherTables: a feed of some tables opens its stream
// again after the point past the other tables' changes that the server's
// pings name, not after its own last change (which the log's retention
// may have pruned since, ending the feed with ErrChangesExpired).
func TestFeedResumesPastOtherTables(t *testing.T) {
	is := is.New(t)
	store, admin := pdtest.NewProject(t, nil)
	s := &streams{events: 50, h: httpapi.New(store, &httpapi.Options{StreamPing: 5 * time.Millisecond})}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	for _, name := range []string{"t", "other"} {
		_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: name, Columns: []pd.ColumnDef{{Name: "v"}}})
		is.NoErr(err)
	}
	from, err := store.LastChangeID(ctx, "acme") // after the tables' creation
	is.NoErr(err)
	_, err = c.Insert(ctx, "acme", "t", []pd.Row{{"v": "mine"}})
	is.NoErr(err)
	_, err = c.Insert(ctx, "acme", "other", []pd.Row{{"v": "a"}, {"v": "b"}})
	is.NoErr(err)
	last, err := store.LastChangeID(ctx, "acme")
	is.NoErr(err)

	fctx, cancel := context.WithTimeout(ctx, time.Minute) // only against hanging
	defer cancel()
	go func() { // insert next once the stream has opened again
		for fctx.Err() == nil {
			s.mu.Lock()
			n := len(s.lastIDs)
			s.mu.Unlock()
			if n >= 2 {
				c.Insert(fctx, "acme", "t", []pd.Row{{"v": "next"}})
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var got []string
	for ch, err := range c.FollowChanges(fctx, "acme", pd.ChangeQuery{After: from, Tables: []string{"t"}}) {
		is.NoErr(err)
		if got = append(got, ch.Row["v"].(string)); len(got) == 2 {
			break
		}
	}
	is.Equal(got, []string{"mine", "next"})
	s.mu.Lock()
	defer s.mu.Unlock()
	is.True(len(s.lastIDs) >= 2)
	is.Equal(s.lastIDs[1], strconv.FormatInt(last, 10)) // past other's inserts
}

// refusals serves h and signals each 503 it answered (statusWriter is
// document_test.go's).
type refusals struct {
	h       http.Handler
	refused chan struct{}
}

func (s *refusals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.h.ServeHTTP(sw, r)
	if sw.status == http.StatusServiceUnavailable {
		select {
		case s.refused <- struct{}{}:
		default:
		}
	}
}

// TestFeedWaitsForAPlaceAmongItsTokenStreams: a feed whose token holds
// every change stream the server allows it (503 server_busy with
// Retry-After) goes on opening its stream, after Retry-After, and follows
// once a place is free, rather than ending with the 503.
func TestFeedWaitsForAPlaceAmongItsTokenStreams(t *testing.T) {
	is := is.New(t)
	store, _ := pdtest.Open(t, &pd.Options{MaxChangeStreamsPerToken: 1})
	_, admin, err := store.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	s := &refusals{h: httpapi.New(store, nil), refused: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	// Every 503 reaches the feed's own loop (no retry inside one
	// request), and Retry-After's second is cut short.
	c := client.New(srv.URL, admin.Token, &client.Options{MaxRetries: -1, MaxRetryWait: 10 * time.Millisecond})
	_, _, err = c.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
	is.NoErr(err)

	// Another stream of the token holds its one place.
	hctx, release := context.WithCancel(ctx)
	defer release()
	req, err := http.NewRequestWithContext(hctx, "GET", srv.URL+"/projects/acme/changes/stream", nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+admin.Token)
	res, err := srv.Client().Do(req)
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, 200)

	got := make(chan error, 1)
	go func() {
		ids, err := follow(t, c, pd.ChangeQuery{}, 1)
		if err == nil && (len(ids) != 1 || ids[0] != 1) {
			err = errors.New("the feed yielded " + strconv.Itoa(len(ids)) + " changes, want the table's creation")
		}
		got <- err
	}()
	for range 3 { // refused, and opened again, three times
		select {
		case <-s.refused:
		case err := <-got:
			t.Fatalf("the feed ended while its token's place was held: %v", err)
		}
	}
	release() // the place is free: the feed's next try follows
	is.NoErr(<-got)
}

// TestLastChangeIDResumesAnExpiredFeed: the client's LastChangeID is the
// Store's, and is where a follower told changes_expired follows from: it
// then yields the changes after it and none before. Asked many times in a
// row, it leaves no stream open behind it (the token's streams are
// bounded).
func TestLastChangeIDResumesAnExpiredFeed(t *testing.T) {
	is := is.New(t)
	store, dir, c := feedServer(t, &streams{events: 1 << 30})
	want := func() int64 {
		last, err := store.LastChangeID(ctx, "acme")
		is.NoErr(err)
		return last
	}
	last, err := c.LastChangeID(ctx, "acme")
	is.NoErr(err)
	is.Equal(last, want()) // the table's creation
	for i := range 3 {
		_, err := c.Insert(ctx, "acme", "t", []pd.Row{{"v": i}})
		is.NoErr(err)
	}
	pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), `DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`)
	_, err = follow(t, c, pd.ChangeQuery{After: last}, 1)
	is.True(errors.Is(err, pd.ErrChangesExpired))

	for range 40 { // past the 16 streams a token may hold (Options.MaxChangeStreamsPerToken)
		last, err = c.LastChangeID(ctx, "acme")
		is.NoErr(err)
		is.Equal(last, want())
	}
	_, err = c.Insert(ctx, "acme", "t", []pd.Row{{"v": "after"}})
	is.NoErr(err)
	ids, err := follow(t, c, pd.ChangeQuery{After: last}, 1)
	is.NoErr(err)
	is.Equal(ids, []int64{last + 1}) // the insert after it, and nothing before

	_, err = c.LastChangeID(ctx, "nope")
	is.True(errors.Is(err, pd.ErrProjectNotFound))
}

// TestFeedCallsFollowingAndPassed: as the Store's FollowChanges does, the
// client's calls q.Following once its stream is open, and q.Passed with
// the points past other tables' changes that the server's pings name, so
// that a follower of a quiet table can keep its resume point within the
// log's retention.
func TestFeedCallsFollowingAndPassed(t *testing.T) {
	is := is.New(t)
	store, admin := pdtest.NewProject(t, nil)
	srv := httptest.NewServer(httpapi.New(store, &httpapi.Options{StreamPing: 5 * time.Millisecond}))
	defer srv.Close()
	c := client.New(srv.URL, admin, nil)
	for _, name := range []string{"quiet", "busy"} {
		_, _, err := c.CreateTable(ctx, "acme", pd.TableDef{Name: name, Columns: []pd.ColumnDef{{Name: "v"}}})
		is.NoErr(err)
	}
	from, err := store.LastChangeID(ctx, "acme")
	is.NoErr(err)

	fctx, cancel := context.WithTimeout(ctx, 20*time.Second) // only against hanging
	defer cancel()
	var following atomic.Int32
	var passed atomic.Int64
	var head atomic.Int64 // the log's last change once busy has changed
	q := pd.ChangeQuery{After: from, Tables: []string{"quiet"},
		Following: func() {
			following.Add(1)
			go func() { // busy changes; the feed ends once it has passed them
				defer cancel()
				if _, err := c.Insert(fctx, "acme", "busy", []pd.Row{{"v": "a"}, {"v": "b"}}); err != nil {
					return
				}
				id, _ := store.LastChangeID(fctx, "acme")
				head.Store(id)
				for passed.Load() < id && fctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
			}()
		},
		Passed: func(id int64) { passed.Store(id) },
	}
	for ch, err := range c.FollowChanges(fctx, "acme", q) {
		t.Fatalf("yielded %+v, %v: quiet never changed", ch, err)
	}
	is.Equal(following.Load(), int32(1))
	is.True(head.Load() > from)
	is.Equal(passed.Load(), head.Load()) // past busy's changes
}

// TestFeedEndsOnAnAnswerThatIsNotAStream: a 200 that is not an event
// stream (a proxy's page) ends the feed with an error, rather than being
// opened again until its context ends.
func TestFeedEndsOnAnAnswerThatIsNotAStream(t *testing.T) {
	is := is.New(t)
	var opened atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opened.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>sign in</html>")
	}))
	defer srv.Close()
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second) // only against hanging
	defer cancel()
	n := 0
	for _, err := range client.New(srv.URL, "pat_x", nil).FollowChanges(fctx, "acme", pd.ChangeQuery{}) {
		n++
		is.True(err != nil && strings.Contains(err.Error(), "not an event stream"))
	}
	is.Equal(n, 1)
	is.Equal(opened.Load(), int32(1))
	is.NoErr(fctx.Err()) // it ended by itself
}
