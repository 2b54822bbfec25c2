package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// boundedStreams is a Store whose tokens may hold 3 change streams of a
// project, with project acme and two read tokens of it, and project beta
// restored from a snapshot of acme, so that acme's tokens are beta's too.
type boundedStreams struct {
	store      *projectdata.Store
	dir        string
	alice, bob string // read tokens of acme and beta
	h          *httpapi.Handler
	srv        *httptest.Server
}

const streamBound = 3

func newBoundedStreams(t *testing.T) *boundedStreams {
	t.Helper()
	store, dir := pdtest.Open(t, &projectdata.Options{MaxChangeStreamsPerToken: streamBound})
	if _, _, err := store.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	b := &boundedStreams{store: store, dir: dir}
	for _, dst := range []*string{&b.alice, &b.bob} {
		tok, err := store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead})
		if err != nil {
			t.Fatal(err)
		}
		*dst = tok.Token
	}
	itemsTable(t, store)
	if _, err := store.RestoreProject(ctx, "beta", pdtest.Snapshot(t, store)); err != nil {
		t.Fatal(err)
	}
	b.h = httpapi.New(store, nil)
	b.srv = streamServer(t, b.h)
	return b
}

// open opens a change stream of the project with the token and checks
// its answer has the status and, for an error, the code; see openPath.
func (b *boundedStreams) open(t *testing.T, project, token string, status int, code string) *sseStream {
	t.Helper()
	return b.openPath(t, "/projects/"+project+"/changes/stream", token, status, code)
}

// openPath opens the change stream at path with the token and checks its
// answer: 200 and an event stream (returned open), or an error envelope
// with the code, and for a 503 Retry-After and a message naming the bound.
func (b *boundedStreams) openPath(t *testing.T, path, token string, status int, code string) *sseStream {
	t.Helper()
	st := openStream(t, b.srv, path, token)
	if st.res.StatusCode != status {
		t.Fatalf("GET %s: %s, want %d %s", path, st.res.Status, status, code)
	}
	if status == http.StatusOK {
		if ct := st.res.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("GET %s: Content-Type %q, want an event stream", path, ct)
		}
		return st
	}
	// Refused before any event: the envelope, not a stream.
	body, err := io.ReadAll(st.res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		OK    bool `json:"ok"`
		Error struct {
			Code, Message string
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.OK || env.RequestID == "" {
		t.Fatalf("GET %s: %s: body is not an error envelope (%v): %s", path, st.res.Status, err, body)
	}
	if env.Error.Code != code {
		t.Fatalf("GET %s: code %q, want %q: %s", path, env.Error.Code, code, body)
	}
	if status == http.StatusServiceUnavailable {
		if st.res.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s: 503 without Retry-After", path)
		}
		if !strings.Contains(env.Error.Message, "change streams") || !strings.Contains(env.Error.Message, "3") {
			t.Errorf("GET %s: message %q should say the token holds too many change streams and name the bound, 3", path, env.Error.Message)
		}
	}
	st.close()
	return nil
}

// waitFollowers waits until the Store has n followers of change logs: a
// stream the client closed ends once the server notices, soon after.
func (b *boundedStreams) waitFollowers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // only against hanging
	for b.store.Stats().ChangeFollowers != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d followers of change logs, want %d", b.store.Stats().ChangeFollowers, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fill opens the token's streamBound streams of acme, then checks one more
// is refused.
func (b *boundedStreams) fill(t *testing.T, token string) []*sseStream {
	t.Helper()
	var streams []*sseStream
	for range streamBound {
		streams = append(streams, b.open(t, "acme", token, 200, ""))
	}
	b.open(t, "acme", token, 503, "server_busy")
	return streams
}

// TestChangeStreamsBoundPerToken: a token holds at most
// Options.MaxChangeStreamsPerToken streams of a project; one more is 503
// server_busy before any event, and other tokens and other projects are
// not held up.
func TestChangeStreamsBoundPerToken(t *testing.T) {
	b := newBoundedStreams(t)
	alice := b.fill(t, b.alice)
	b.open(t, "acme", b.bob, 200, "")   // another token of the project
	b.open(t, "beta", b.alice, 200, "") // the same token on another project
	b.waitFollowers(t, streamBound+2)

	// Closing one of the three lets a new one open.
	alice[0].close()
	b.waitFollowers(t, streamBound+1)
	b.open(t, "acme", b.alice, 200, "")
	b.open(t, "acme", b.alice, 503, "server_busy")
}

// TestChangeStreamsFreeTheirPlace: whatever ends a stream, refused or
// not, its place among the token's streams is free again.
func TestChangeStreamsFreeTheirPlace(t *testing.T) {
	b := newBoundedStreams(t)
	for i := range 3 {
		if _, err := b.store.Insert(ctx, "acme", "items", []projectdata.Row{{"qty": i}}); err != nil {
			t.Fatal(err)
		}
	}
	// Retention as the Store prunes: every change but the newest, so that
	// a stream from change 1 is 410 changes_expired.
	pdtest.Exec(t, pdtest.Raw(t, b.dir, "acme"), `DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`)

	// Streams ended by the server's shutdown (CloseStreams) of another
	// handler over the same Store.
	other := httpapi.New(b.store, nil)
	otherSrv := streamServer(t, other)
	for range streamBound {
		st := openStream(t, otherSrv, "/projects/acme/changes/stream", b.alice)
		if st.res.StatusCode != 200 {
			t.Fatalf("stream of the other handler: %s", st.res.Status)
		}
	}
	b.open(t, "acme", b.alice, 503, "server_busy")
	other.CloseStreams()
	b.waitFollowers(t, 0)

	for range 10 {
		// Refused: expired resume points, bad tables, HEAD.
		b.openPath(t, "/projects/acme/changes/stream?after=1", b.alice, 410, "changes_expired")
		b.openPath(t, "/projects/acme/changes/stream?tables=bad-name", b.alice, 400, "invalid_table_name")
		head, err := http.NewRequest("HEAD", b.srv.URL+"/projects/acme/changes/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		head.Header.Set("Authorization", "Bearer "+b.alice)
		res, err := b.srv.Client().Do(head)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("HEAD of a stream: %s", res.Status)
		}
		// Ended by the client, as a killed client does, while one more
		// is refused.
		for _, st := range b.fill(t, b.alice) {
			st.close()
		}
		b.waitFollowers(t, 0)
	}
	// The whole bound is there still.
	b.fill(t, b.alice)
}

// panicFlusher is a ResponseWriter whose first Flush panics, as a broken
// writer below the handler might.
type panicFlusher struct {
	*httptest.ResponseRecorder
	panicked bool
}

func (w *panicFlusher) Flush() {
	if !w.panicked {
		w.panicked = true
		panic("flush failed")
	}
}

// TestChangeStreamFreesItsPlaceOnPanic: a stream whose handler panics
// (recovered into a 500 answer) has ended its follower by the time the
// handler returns.
func TestChangeStreamFreesItsPlaceOnPanic(t *testing.T) {
	is := is.New(t)
	b := newBoundedStreams(t)
	for range streamBound + 2 {
		req := httptest.NewRequestWithContext(context.Background(), "GET", "/projects/acme/changes/stream", nil)
		req.Header.Set("Authorization", "Bearer "+b.alice)
		w := &panicFlusher{ResponseRecorder: httptest.NewRecorder()}
		b.h.ServeHTTP(w, req)
		is.True(w.panicked)
		is.Equal(b.store.Stats().ChangeFollowers, 0) // at once, not soon
	}
	b.fill(t, b.alice)
}
