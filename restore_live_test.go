package projectdata_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// hookCtx is a context that runs hook once, the nth time its Err is asked:
// in RestoreProject, while the source is being copied.
type hookCtx struct {
	context.Context
	mu   sync.Mutex
	n    int
	hook func()
}

func (c *hookCtx) Err() error {
	c.mu.Lock()
	c.n--
	run := c.n == 0
	c.mu.Unlock()
	if run {
		c.hook()
	}
	return c.Context.Err()
}

// TestRestoreOfADatabaseOpenedDuringTheCopy restores from the database of
// a project that was closed (no write-ahead log beside it) when the
// restore looked, and that another Store opens, writes and checkpoints
// while the restore copies it: the copy is the database as of one commit,
// before that write or after it, never a mix of pages of both.
func TestRestoreOfADatabaseOpenedDuringTheCopy(t *testing.T) {
	for _, closes := range []bool{false, true} {
		t.Run(fmt.Sprintf("ClosedAfter=%v", closes), func(t *testing.T) {
			is := is.New(t)
			src, srcDir := pdtest.Open(t, nil)
			_, _, err := src.CreateProject(ctx, "acme", "Acme")
			is.NoErr(err)
			_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "seq", Columns: []projectdata.ColumnDef{{Name: "v"}}})
			is.NoErr(err)
			rows := make([]projectdata.Row, 5000)
			for i := range rows {
				rows[i] = projectdata.Row{"v": strings.Repeat("a", 200)}
			}
			for range 4 {
				_, err = src.Insert(ctx, "acme", "seq", rows)
				is.NoErr(err)
			}
			is.NoErr(src.Close()) // the project is closed: no log beside its file

			hook := func() { // another process opens the project, writes and checkpoints
				other, err := projectdata.Open(srcDir, nil)
				is.NoErr(err)
				_, err = other.UpdateRecords(ctx, "acme", "seq", projectdata.BulkUpdate{Data: projectdata.Row{"v": strings.Repeat("b", 200)}, AllowAll: true})
				is.NoErr(err)
				raw := pdtest.Raw(t, srcDir, "acme")
				pdtest.Exec(t, raw, `PRAGMA wal_checkpoint(PASSIVE)`)
				is.NoErr(raw.Close())
				if closes {
					is.NoErr(other.Close()) // its log checkpointed and removed
				} else {
					t.Cleanup(func() { other.Close() }) // as a server would: its log stays beside the file
				}
			}
			dst, dstDir := pdtest.Open(t, nil)
			hc := &hookCtx{Context: ctx, n: 20, hook: hook}
			_, err = dst.RestoreProject(hc, "copy", filepath.Join(srcDir, "acme", "project.db"))
			is.True(hc.n < 0) // the hook ran
			is.NoErr(err)
			pdtest.CheckRowCounts(t, dstDir, "copy")
			res, err := dst.Query(ctx, "copy", projectdata.QueryRequest{SQL: `SELECT count(DISTINCT v) AS n, min(v) AS v FROM seq`})
			is.NoErr(err)
			is.Equal(fmt.Sprint(res.Rows[0]["n"]), "1")               // not a mix of before and after
			is.Equal(res.Rows[0]["v"], any(strings.Repeat("b", 200))) // as of the last commit
		})
	}
}

// TestCloseWaitsForARestore: Close waits for a restore under way to finish
// (it would otherwise go on writing to the data folder after Close
// returned), and a restore or a creation after Close is ErrStoreClosed.
func TestCloseWaitsForARestore(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 5000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("a", 200)}
	}
	_, err = src.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	snapshot := newestSnapshot(t, src)

	s, dir := pdtest.Open(t, nil)
	closed := make(chan bool, 1)                      // whether the restored project was in place when Close returned
	hc := &hookCtx{Context: ctx, n: 5, hook: func() { // mid-copy
		go func() {
			s.Close()
			_, err := os.Stat(filepath.Join(dir, "copy", "project.db"))
			closed <- err == nil
		}()
	}}
	_, err = s.RestoreProject(hc, "copy", snapshot)
	is.NoErr(err)
	is.True(<-closed) // Close returned after the restore
	_, err = s.RestoreProject(ctx, "again", snapshot)
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
	_, _, err = s.CreateProject(ctx, "new", "")
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
}
