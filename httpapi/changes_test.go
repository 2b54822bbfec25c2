package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// sseEvent is one event of a change stream, or a comment (Comment set).
type sseEvent struct {
	ID, Event, Data, Comment string
}

// sseStream is a change stream opened over a real connection.
type sseStream struct {
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// streamServer serves h over loopback until the test ends. Its Close is
// registered before any stream the test opens, so the streams close first
// (httptest.Server.Close waits for every request in flight).
func streamServer(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// openStream opens GET path (a change stream) with the token and headers
// (name/value pairs) and returns the response; the stream is closed when
// the test ends or by close.
func openStream(t testing.TB, srv *httptest.Server, path, token string, headers ...string) *sseStream {
	t.Helper()
	// A minute bounds a stream that never sends what a test waits for:
	// the test fails with a read error instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

// started reads the ping that opens a stream from now, and returns the id
// it names: the point the stream starts after.
func (s *sseStream) started(t testing.TB) string {
	t.Helper()
	ev, err := s.next()
	if err != nil || ev.Comment != "ping" {
		t.Fatalf("the stream opened with %+v, %v; want a ping", ev, err)
	}
	if ev, err = s.next(); err != nil || ev.ID == "" || ev.Event != "" || ev.Data != "" {
		t.Fatalf("the opening ping's id line is %+v, %v", ev, err)
	}
	return ev.ID
}

func (s *sseStream) close() {
	s.cancel()
	s.res.Body.Close()
}

// next reads the next event or comment; io.EOF when the server ended the
// stream.
func (s *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			return sseEvent{Comment: strings.TrimSpace(line[1:])}, nil
		default:
			field, value, _ := strings.Cut(line, ": ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Event = value
			case "data":
				ev.Data = value
			}
		}
	}
}

// change decodes an event's data.
func (ev sseEvent) change(t testing.TB) (c struct {
	ID    int64          `json:"id"`
	Table string         `json:"table"`
	Op    string         `json:"op"`
	Key   any            `json:"key"`
	Row   map[string]any `json:"row"`
	At    string         `json:"at"`
}) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(ev.Data))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	if strconv.FormatInt(c.ID, 10) != ev.ID || c.Op != ev.Event {
		t.Fatalf("event id %s / event %s do not match its data %s", ev.ID, ev.Event, ev.Data)
	}
	return c
}

// itemsTable creates table items (name, qty) in project acme.
func itemsTable(t testing.TB, store *projectdata.Store) {
	t.Helper()
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestListChanges(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	itemsTable(t, a.store)
	a.must(a.do("POST", "/projects/acme/records/items", a.write, `[{"name":"a","qty":1},{"name":"b","qty":2}]`), 201, "")

	res := a.must(a.do("GET", "/projects/acme/changes?limit=2", a.read, ""), 200, "")
	var page struct {
		Changes []map[string]any `json:"changes"`
		Next    int64            `json:"next_after"`
	}
	is.NoErr(json.Unmarshal(res.Env.Data, &page))
	is.Equal(len(page.Changes), 2)
	is.Equal(page.Next, int64(2))
	is.Equal(page.Changes[1]["op"], "insert")
	is.Equal(page.Changes[1]["row"], map[string]any{"id": 1.0, "name": "a", "qty": 1.0})
	is.Equal(page.Changes[1]["at"], "2026-11-21T14:05:09.123Z")

	res = a.must(a.do("GET", "/projects/acme/changes?after=2&tables=items,other", a.read, ""), 200, "")
	is.NoErr(json.Unmarshal(res.Env.Data, &page))
	is.Equal(len(page.Changes), 1)
	is.Equal(page.Next, int64(3))

	a.must(a.do("GET", "/projects/acme/changes?after=x", a.read, ""), 400, "invalid_request")
	a.must(a.do("GET", "/projects/acme/changes?tables=a-b", a.read, ""), 400, "invalid_table_name")
	a.must(a.do("GET", "/projects/acme/changes", "", ""), 401, "invalid_token")
	a.must(a.do("GET", "/projects/nope/changes", a.read, ""), 404, "project_not_found")
}

func TestChangesExpired(t *testing.T) {
	store, dir := pdtest.Open(t, nil)
	_, tok, err := store.CreateProject(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	a := &api{t: t, store: store, h: httpapi.New(store, nil), admin: tok.Token, read: tok.Token, write: tok.Token}
	itemsTable(t, a.store)
	for range 3 {
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"a"}`), 201, "")
	}
	// Retention as the Store prunes: every record but the newest.
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`)
	a.must(a.do("GET", "/projects/acme/changes?after=2", a.read, ""), 410, "changes_expired")
	a.must(a.do("GET", "/projects/acme/changes/stream?after=1", a.read, ""), 410, "changes_expired")
	a.must(a.do("GET", "/projects/acme/changes/stream", a.read, "", "Last-Event-ID", "2"), 410, "changes_expired")
	a.must(a.do("GET", "/projects/acme/changes?after=3", a.read, ""), 200, "")
}

// TestChangeStreamRefusesABadQueryBeforeStreaming: a stream whose tables
// the Store refuses answers 400 with the envelope, as the change list does,
// not 200 and an error event (which an EventSource reconnects to forever).
func TestChangeStreamRefusesABadQueryBeforeStreaming(t *testing.T) {
	a := newAPI(t, nil)
	for _, c := range []struct{ query, code string }{
		{"tables=bad-name", "invalid_table_name"},
		{"tables=" + strings.Repeat("a,", 100) + "a", "invalid_request"},
		{"tables=items,", "invalid_table_name"},
	} {
		a.must(a.do("GET", "/projects/acme/changes?"+c.query, a.read, ""), 400, c.code)
		a.must(a.do("GET", "/projects/acme/changes/stream?after=0&"+c.query, a.read, ""), 400, c.code)
		a.must(a.do("GET", "/projects/acme/changes/stream?"+c.query, a.read, "", "Last-Event-ID", "0"), 400, c.code)
	}
	// The list's limit is no parameter of the stream, which has no pages:
	// it was taken and ignored.
	st := openStream(t, streamServer(t, a.h), "/projects/acme/changes/stream?limit=5", a.read)
	if st.res.StatusCode != 400 {
		t.Errorf("GET /changes/stream?limit=5: %s, want 400 invalid_request", st.res.Status)
	}
}

func TestChangeStream(t *testing.T) {
	t.Run("ResumedWithLastEventIDSeesEveryChangeOnce", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		itemsTable(t, a.store) // change 1
		const total = 300
		writes := make(chan error, 1)
		go func() {
			for i := range total {
				if _, err := a.store.Insert(ctx, "acme", "items", []projectdata.Row{{"qty": i}}); err != nil {
					writes <- err
					return
				}
			}
			writes <- nil
		}()
		seen := map[string]int{}
		last := "1"
		for len(seen) < total {
			// Read some events, then drop the connection as a killed
			// client does and resume after the last id received.
			st := openStream(t, srv, "/projects/acme/changes/stream", a.read, "Last-Event-ID", last)
			is.Equal(st.res.StatusCode, 200)
			is.Equal(st.res.Header.Get("Content-Type"), "text/event-stream")
			for k := 0; k < 41 && len(seen) < total; {
				ev, err := st.next()
				is.NoErr(err)
				if ev.Comment != "" {
					continue
				}
				c := ev.change(t)
				want, _ := strconv.ParseInt(last, 10, 64)
				is.Equal(c.ID, want+1) // in commit order, no gap
				is.Equal(c.Op, "insert")
				last = ev.ID
				seen[fmt.Sprint(c.Row["qty"])]++
				k++
			}
			st.close()
		}
		is.NoErr(<-writes)
		is.Equal(len(seen), total)
		for qty, n := range seen {
			if n != 1 {
				t.Fatalf("row %s received %d times", qty, n)
			}
		}
	})
	t.Run("StartsNowByDefaultAndHonoursTables", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		itemsTable(t, a.store)
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"before"}`), 201, "")
		st := openStream(t, srv, "/projects/acme/changes/stream?tables=items", a.read)
		is.Equal(st.res.StatusCode, 200)
		is.Equal(st.started(t), "2")
		// An empty after is no after (as an empty limit is no limit).
		empty := openStream(t, srv, "/projects/acme/changes/stream?after=&tables=items", a.read)
		is.Equal(empty.res.StatusCode, 200)
		is.Equal(empty.started(t), "2")
		_, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "other"})
		is.NoErr(err)
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"after"}`), 201, "")
		for _, st := range []*sseStream{st, empty} {
			ev, err := st.next()
			is.NoErr(err)
			c := ev.change(t)
			is.Equal(c.Row["name"], "after") // not the earlier insert, not table other
			is.Equal(c.ID, int64(4))
		}
	})
	t.Run("FromNowNamesItsStart", func(t *testing.T) {
		// A stream from now opens with a ping naming where it starts: a
		// client cut off before the first change resumes from there
		// (EventSource sends it as Last-Event-ID), not from a later now
		// that would skip the changes between. An empty log starts at 0.
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		st := openStream(t, srv, "/projects/acme/changes/stream", a.read)
		is.Equal(st.started(t), "0")
		st.close()
		itemsTable(t, a.store) // change 1
		st = openStream(t, srv, "/projects/acme/changes/stream", a.read)
		start := st.started(t)
		is.Equal(start, "1")
		st.close() // cut before any change
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"while away"}`), 201, "")
		st = openStream(t, srv, "/projects/acme/changes/stream", a.read, "Last-Event-ID", start)
		ev, err := st.next()
		is.NoErr(err)
		is.Equal(ev.change(t).Row["name"], "while away")
		is.Equal(ev.ID, "2")
	})
	t.Run("Pings", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, &httpapi.Options{StreamPing: 5e6})
		srv := streamServer(t, a.h)
		st := openStream(t, srv, "/projects/acme/changes/stream?after=0", a.read)
		ev, err := st.next()
		is.NoErr(err)
		is.Equal(ev.Comment, "ping")
	})
	t.Run("PingsNameThePointPastOtherTables", func(t *testing.T) {
		// A stream of some tables resumes past the other tables' changes
		// (a ping's id line), not from its last change, which the log's
		// retention may have pruned since.
		is := is.New(t)
		a := newAPI(t, &httpapi.Options{StreamPing: 5e6})
		srv := streamServer(t, a.h)
		itemsTable(t, a.store)
		_, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "other"})
		is.NoErr(err)
		st := openStream(t, srv, "/projects/acme/changes/stream?tables=items", a.read)
		st.started(t)
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"one"}`), 201, "")
		a.must(a.do("POST", "/projects/acme/records/other", a.write, `[{},{},{}]`), 201, "")
		last, err := a.store.LastChangeID(ctx, "acme")
		is.NoErr(err)
		var ids []string
		for len(ids) < 2 {
			ev, err := st.next()
			is.NoErr(err)
			if ev.ID != "" {
				ids = append(ids, ev.ID)
				is.True(ev.Event == "insert" || ev.Data == "") // a change, or a ping's id alone
			}
		}
		is.Equal(ids[1], itoa(last)) // past the other table's three inserts
		st = openStream(t, srv, "/projects/acme/changes/stream?tables=items", a.read, "Last-Event-ID", ids[1])
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"two"}`), 201, "")
		for {
			ev, err := st.next()
			is.NoErr(err)
			if ev.Event != "" {
				is.Equal(ev.change(t).Row["name"], "two")
				break
			}
		}
	})
	t.Run("CloseStreamsEndsThem", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		st := openStream(t, srv, "/projects/acme/changes/stream", a.read)
		is.Equal(st.res.StatusCode, 200)
		st.started(t)
		a.h.CloseStreams()
		_, err := st.next()
		is.Equal(err, io.EOF) // the server ended the stream
		res := a.must(a.do("GET", "/projects/acme/changes/stream", a.read, ""), 503, "server_busy")
		is.Equal(res.Header.Get("Retry-After"), "1")
	})
	t.Run("RevokingTheTokenEndsIt", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		itemsTable(t, a.store)
		tok, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead})
		is.NoErr(err)
		st := openStream(t, srv, "/projects/acme/changes/stream", tok.Token)
		is.Equal(st.res.StatusCode, 200)
		st.started(t)
		a.must(a.do("DELETE", "/projects/acme/auth/tokens/"+itoa(tok.TokenID), a.admin, ""), 200, "")
		a.must(a.do("POST", "/projects/acme/records/items", a.write, `{"name":"after the revocation"}`), 201, "")
		ev, err := st.next()
		is.NoErr(err)
		is.Equal(ev.Event, "error") // not the row
		is.True(strings.Contains(ev.Data, `"invalid_token"`))
		_, err = st.next()
		is.Equal(err, io.EOF)
	})
	t.Run("StoreCloseEndsThem", func(t *testing.T) {
		is := is.New(t)
		a := newAPI(t, nil)
		srv := streamServer(t, a.h)
		st := openStream(t, srv, "/projects/acme/changes/stream", a.read)
		is.Equal(st.res.StatusCode, 200)
		st.started(t)
		is.NoErr(a.store.Close())
		ev, err := st.next()
		is.NoErr(err)
		is.Equal(ev.Event, "error")
		is.True(strings.Contains(ev.Data, `"store_closed"`))
		_, err = st.next()
		is.Equal(err, io.EOF)
	})
}

func TestSlowStreamDroppedAndResumed(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, &httpapi.Options{StreamWriteTimeout: 50 * time.Millisecond})
	ended := make(chan struct{}, 1)
	srv := streamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/stream") {
			select { // the first end is the one waited for; resumed streams end too
			case ended <- struct{}{}:
			default:
			}
		}
	}))
	// The client reads through a small socket buffer, so that the server's
	// writes block once a few megabytes are in flight.
	srv.Client().Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return c, err
	}
	itemsTable(t, a.store) // change 1
	st := openStream(t, srv, "/projects/acme/changes/stream?after=1", a.read)
	is.Equal(st.res.StatusCode, 200)

	// The client reads nothing while 10 MB of changes commit: the writes
	// are not held up, and the server drops the stream.
	const total, size = 200, 50 << 10
	big := strings.Repeat("x", size)
	for i := range total / 10 {
		rows := make([]projectdata.Row, 10)
		for j := range rows {
			rows[j] = projectdata.Row{"name": big, "qty": i*10 + j}
		}
		_, err := a.store.Insert(ctx, "acme", "items", rows)
		is.NoErr(err)
	}
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the server keeps a stream that takes nothing")
	}
	next := int64(2)
	read := func(st *sseStream) error {
		for {
			ev, err := st.next()
			if err != nil {
				return err
			}
			if ev.Comment != "" {
				continue
			}
			c := ev.change(t)
			is.Equal(c.ID, next) // in order, each once
			is.Equal(c.Row["qty"], json.Number(strconv.FormatInt(next-2, 10)))
			next++
			if next == total+2 {
				return nil
			}
		}
	}
	err := read(st) // what was in flight, then the end
	is.True(err != nil)
	is.True(next < total+2) // dropped before the end
	// Resumed from the last id received (again each time the server drops
	// it), the stream delivers the rest.
	srv.Client().Transport.(*http.Transport).DialContext = nil
	for range 100 {
		st = openStream(t, srv, "/projects/acme/changes/stream", a.read, "Last-Event-ID", strconv.FormatInt(next-1, 10))
		if read(st) == nil {
			return
		}
		st.close()
	}
	t.Fatalf("received changes up to %d of %d", next-1, total+1)
}

// TestChangeStreamResumedWhileTablesChange reads the stream of one table
// (named in another case) in short connections, each resumed with the id of
// the last event received, while writers insert (some inserts failing
// inside commits they share), delete in bulk and add columns to two
// tables: the events are that table's changes of the log, each once, in
// order.
func TestChangeStreamResumedWhileTablesChange(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	srv := streamServer(t, a.h)
	for _, name := range []string{"f", "g"} {
		_, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: name, Columns: []projectdata.ColumnDef{
			{Name: "name", Unique: true}, {Name: "qty", Type: "INTEGER"},
		}})
		is.NoErr(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 3)
	for w := range 3 {
		go func() {
			table := []string{"f", "g", "f"}[w]
			for n := 0; ; n++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				var err error
				switch n % 7 {
				case 5:
					_, err = a.store.DeleteRecords(ctx, "acme", table, projectdata.BulkDelete{Where: projectdata.Where{{Column: "qty", Op: "=", Value: n % 3}}})
				case 6:
					if n%70 == 6 {
						_, err = a.store.AddColumn(ctx, "acme", table, projectdata.ColumnDef{Name: fmt.Sprintf("c%d_%d", w, n)})
					}
				default:
					rows := []projectdata.Row{{"name": fmt.Sprint(w, "-", n), "qty": n % 3}}
					if n%4 == 0 {
						rows = append(rows, projectdata.Row{"name": "dup"}) // fails once "dup" exists
					}
					_, err = a.store.Insert(ctx, "acme", table, rows)
					if projectdata.ErrorCode(err) == projectdata.ErrUniqueViolation {
						err = nil
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stopped := false
	var got []int64
	last := "0"
	for conn := 0; ; conn++ {
		if conn == 20 {
			close(stop)
			for range 3 {
				is.NoErr(<-errs)
			}
			// A last change of f, which the stream waits for.
			_, err := a.store.Insert(ctx, "acme", "f", []projectdata.Row{{"name": "last"}})
			is.NoErr(err)
			stopped = true
		}
		final, err := a.store.LastChangeID(ctx, "acme")
		is.NoErr(err)
		st := openStream(t, srv, "/projects/acme/changes/stream?tables=F", a.read, "Last-Event-ID", last)
		is.Equal(st.res.StatusCode, 200)
		for k := 0; k < 1+conn*7%50; {
			ev, err := st.next()
			is.NoErr(err)
			if ev.Comment != "" {
				continue
			}
			c := ev.change(t)
			is.Equal(c.Table, "f")
			got = append(got, c.ID)
			last = ev.ID
			k++
			if stopped && c.ID == final {
				break
			}
		}
		st.close()
		if stopped && last == strconv.FormatInt(final, 10) {
			break
		}
		is.True(conn < 10000)
	}
	var want []int64
	for after := int64(0); ; {
		page, err := a.store.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1000})
		is.NoErr(err)
		if len(page.Changes) == 0 {
			break
		}
		for _, c := range page.Changes {
			if c.Table == "f" {
				want = append(want, c.ID)
			}
		}
		after = page.NextAfter
	}
	t.Logf("%d changes of f", len(want))
	is.Equal(got, want)
}
