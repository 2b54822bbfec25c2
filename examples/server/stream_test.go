package main

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// streamServer runs runServer with the limits on a Store with project
// acme and table items; it returns the Store, the address, the admin
// token, the cancel that shuts the server down and the server's outcome.
func streamServer(t *testing.T, lim serverLimits) (store *projectdata.Store, addr, token string, shutdown context.CancelFunc, served <-chan error) {
	t.Helper()
	store, err := projectdata.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, tok, err := store.CreateProject(context.Background(), "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.CreateTable(context.Background(), "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, ln, httpapi.New(store, nil), slog.New(slog.DiscardHandler), lim) }()
	return store, ln.Addr().String(), tok.Token, cancel, done
}

// openChangeStream opens the change stream of acme from its start and
// returns a reader of its lines.
func openChangeStream(t *testing.T, addr, token string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/projects/acme/changes/stream?after=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("stream: status %d", res.StatusCode)
	}
	return bufio.NewReader(res.Body)
}

// nextEvent returns the next event's "event:" value, skipping comments.
func nextEvent(r *bufio.Reader) (string, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if op, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
			return op, nil
		}
	}
}

func TestShutdownEndsChangeStreams(t *testing.T) {
	is := is.New(t)
	lim := defaultLimits
	lim.drain = time.Minute // a stream left open would hold Shutdown this long
	_, addr, token, shutdown, served := streamServer(t, lim)
	r := openChangeStream(t, addr, token)
	op, err := nextEvent(r)
	is.NoErr(err)
	is.Equal(op, "schema") // the stream is live
	shutdown()             // as SIGTERM would
	select {
	case err := <-served:
		is.NoErr(err) // the graceful drain did not wait for the stream…
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown waits for the change stream")
	}
	_, err = nextEvent(r)
	is.True(err != nil) // …which the server ended
}

func TestChangeStreamOutlivesTheReadTimeout(t *testing.T) {
	is := is.New(t)
	lim := defaultLimits
	lim.read = 100 * time.Millisecond // the request was read long ago; the stream goes on
	store, addr, token, _, _ := streamServer(t, lim)
	r := openChangeStream(t, addr, token)
	op, err := nextEvent(r)
	is.NoErr(err)
	is.Equal(op, "schema")
	time.Sleep(3 * lim.read)
	_, err = store.Insert(context.Background(), "acme", "items", []projectdata.Row{{"name": "late"}})
	is.NoErr(err)
	op, err = nextEvent(r)
	is.NoErr(err)
	is.Equal(op, "insert")
}
