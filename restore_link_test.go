package projectdata_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestRestoreThroughALinkKeepsTheLog: a restore source given as a
// symbolic link to a project database in use is read with the log beside
// the database, not beside the link: the commits only in the log are kept.
func TestRestoreThroughALinkKeepsTheLog(t *testing.T) {
	is := is.New(t)
	src, srcDir := pdtest.Open(t, nil)
	_, _, err := src.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}, {"body": "two"}})
	is.NoErr(err)
	live := filepath.Join(srcDir, "acme", "project.db")
	wal, err := os.Stat(live + "-wal")
	is.NoErr(err)
	is.True(wal.Size() > 0) // src is open: its last commits are in its log only
	link := filepath.Join(t.TempDir(), "latest.db")
	is.NoErr(os.Symlink(live, link))

	dst, _ := pdtest.Open(t, nil)
	_, err = dst.RestoreProject(ctx, "copy", link)
	is.NoErr(err)
	l, err := dst.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*l.Total, int64(2))
}
