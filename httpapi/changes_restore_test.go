package httpapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestChangeStreamOfARestoredProject: a project restored (from a snapshot,
// into its slug, its folder removed) while a change stream follows it ends
// that stream with changes_expired, as RestoreProject promises its
// followers, rather than following the removed database (the stream's
// request pins the project it opened) and sending nothing ever again.
func TestChangeStreamOfARestoredProject(t *testing.T) {
	is := is.New(t)
	store, dir := pdtest.Open(t, nil)
	_, tok, err := store.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	itemsTable(t, store)
	snap := filepath.Join(t.TempDir(), "snapshot.db")
	b, err := os.ReadFile(pdtest.Snapshot(t, store))
	is.NoErr(err)
	is.NoErr(os.WriteFile(snap, b, 0o600))
	_, err = store.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "lost"}})
	is.NoErr(err)

	srv := streamServer(t, httpapi.New(store, nil))
	s := openStream(t, srv, "/projects/acme/changes/stream?after=0", tok.Token)
	is.Equal(s.res.StatusCode, 200)
	for range 2 { // the table's creation, the insert
		_, err := s.next()
		is.NoErr(err)
	}

	is.NoErr(os.RemoveAll(filepath.Join(dir, "acme")))
	_, err = store.RestoreProject(ctx, "acme", snap)
	is.NoErr(err)
	_, err = store.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "after"}})
	is.NoErr(err)

	got := make(chan sseEvent, 1)
	go func() {
		for {
			ev, err := s.next()
			if err != nil || ev.Event == "error" {
				got <- ev
				return
			}
		}
	}()
	select {
	case ev := <-got:
		is.Equal(ev.Event, "error")
		var e struct{ Code string }
		is.NoErr(json.Unmarshal([]byte(ev.Data), &e))
		is.Equal(e.Code, "changes_expired")
	case <-time.After(20 * time.Second): // only against hanging: the feed notices in a second at most
		t.Fatal("the stream of the restored project sent nothing")
	}
}
