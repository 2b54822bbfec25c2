package projectdata_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestOldProjectClosedAfterRestoreKeepsTheNewOnesLog: a project restored
// into the slug of one still in use (its folder moved away, an operation
// running on it) takes writes before the old project is closed; closing
// the old database must not touch the new one's files.
func TestOldProjectClosedAfterRestoreKeepsTheNewOnesLog(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	snapshot := newestSnapshot(t, src)

	s, dir := pdtest.Open(t, &projectdata.Options{ReplicatorCheckpoints: true}) // the log keeps its commits
	_, _, err = s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "old", Columns: []projectdata.ColumnDef{{Name: "x"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "old", []projectdata.Row{{"x": 1}})
	is.NoErr(err)
	_, release, err := s.Pin(ctx, "acme") // an operation still running on the old project
	is.NoErr(err)

	is.NoErr(os.Rename(filepath.Join(dir, "acme"), filepath.Join(t.TempDir(), "acme-old")))
	_, err = s.RestoreProject(ctx, "acme", snapshot)
	is.NoErr(err)
	for i := range 3 {
		_, err = s.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": i}})
		is.NoErr(err)
	}
	release() // the old project closes now

	c := pdtest.Raw(t, dir, "acme")
	is.Equal(rawCount(t, c, `SELECT count(*) FROM notes`), 3)
	is.NoErr(c.Close())
	is.NoErr(s.Close())
	s2, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s2.Close()
	l, err := s2.ListRecords(ctx, "acme", "notes", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*l.Total, int64(3))
}
