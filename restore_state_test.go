package projectdata_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// notesProject makes project "acme" of a new Store with table notes and n
// rows, and returns the Store, its folder and the admin token.
func notesProject(t *testing.T, n int) (*projectdata.Store, string, string) {
	t.Helper()
	s, dir := pdtest.Open(t, nil)
	_, tok, err := s.CreateProject(ctx, "acme", "Acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := s.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	return s, dir, tok.Token
}

// TestRestoredChangeLog shows that the change log of a restored project
// starts afresh: resuming the source's log at any id it gave is
// ErrChangesExpired (never a silent skip of the copy's changes), and the
// log goes on from its new first change.
func TestRestoredChangeLog(t *testing.T) {
	is := is.New(t)
	src, _, _ := notesProject(t, 3)
	last, err := src.LastChangeID(ctx, "acme")
	is.NoErr(err)
	is.True(last >= 4) // the table and three inserts
	snapshot := pdtest.Snapshot(t, src)
	// The source goes on after its snapshot: a client sees changes the
	// copy will not hold, and the copy will reuse their ids.
	_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "lost"}})
	is.NoErr(err)
	seen, err := src.LastChangeID(ctx, "acme")
	is.NoErr(err)

	dst, _ := pdtest.Open(t, nil)
	_, err = dst.RestoreProject(ctx, "acme", snapshot)
	is.NoErr(err)
	for _, after := range []int64{0, 1, last, seen} {
		_, err := dst.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after})
		pdtest.Code(t, err, projectdata.ErrChangesExpired)
	}
	start, err := dst.LastChangeID(ctx, "acme")
	is.NoErr(err)
	is.True(start > seen)
	page, err := dst.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: start - 1})
	is.NoErr(err)
	is.Equal(len(page.Changes), 1)
	is.Equal(page.Changes[0].Op, projectdata.ChangeSchema) // the restore itself, on no table
	is.Equal(page.Changes[0].Table, "")

	_, err = dst.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "new"}})
	is.NoErr(err)
	page, err = dst.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: start})
	is.NoErr(err)
	is.Equal(len(page.Changes), 1)
	is.Equal(page.Changes[0].ID, start+1)
	is.Equal(page.Changes[0].Row["body"], "new")
}

// TestRestoreReplacesAnOpenProject restores into the slug of a project the
// Store has open (its folder moved away under it, as an operator does by
// hand): the Store serves the new database at once, with its own tables
// and tokens, and a follower of the old log ends with ErrChangesExpired.
func TestRestoreReplacesAnOpenProject(t *testing.T) {
	is := is.New(t)
	s, dir, oldToken := notesProject(t, 2)
	_, err := s.Authenticate(ctx, "acme", oldToken) // cached
	is.NoErr(err)
	tables, err := s.ListTables(ctx, "acme") // schema cached
	is.NoErr(err)
	is.Equal(len(tables), 1)

	followCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	ended := make(chan error, 1)
	go func() {
		for _, err := range s.FollowChanges(followCtx, "acme", projectdata.ChangeQuery{After: last}) {
			if err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}()

	// Another project's snapshot: other tables, other tokens.
	other, newToken := pdtest.NewProject(t, nil)
	_, _, err = other.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "sku"}}})
	is.NoErr(err)
	_, err = other.Insert(ctx, "acme", "orders", []projectdata.Row{{"sku": "a"}, {"sku": "b"}, {"sku": "c"}})
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, other)

	is.NoErr(os.Rename(filepath.Join(dir, "acme"), filepath.Join(t.TempDir(), "acme-old")))
	_, err = s.RestoreProject(ctx, "acme", snapshot)
	is.NoErr(err)

	tables, err = s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(len(tables), 1)
	is.Equal(tables[0].Name, "orders")
	row, err := s.GetRecord(ctx, "acme", "orders", 3)
	is.NoErr(err)
	is.Equal(row["sku"], "c")
	_, err = s.Authenticate(ctx, "acme", newToken)
	is.NoErr(err)
	_, err = s.Authenticate(ctx, "acme", oldToken) // not from a cache of the old database
	pdtest.Code(t, err, projectdata.ErrInvalidToken)
	is.Equal(s.Stats().OpenProjects, 1)

	err = <-ended
	pdtest.Code(t, err, projectdata.ErrChangesExpired)
}
