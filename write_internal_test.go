package projectdata

import (
	"context"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// openTestProject returns an open project "acme" with a table t (id, v)
// and a function counting its rows.
func openTestProject(t *testing.T) (*project, func() int) {
	t.Helper()
	is := is.New(t)
	s, err := Open(t.TempDir(), nil)
	is.NoErr(err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "v", Type: "INTEGER"}}})
	is.NoErr(err)
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	t.Cleanup(func() { s.release(p) })
	count := func() (n int) {
		err := p.read(ctx, func(c *conn) error {
			_, err := c.queryRow(`SELECT count(*) FROM t`, nil, func(st *sqlite3.Stmt) error {
				n = st.ColumnInt(0)
				return nil
			})
			return err
		})
		is.NoErr(err)
		return n
	}
	return p, count
}

func TestWriteAndCancellation(t *testing.T) {
	t.Run("FinishedWorkCommits", func(t *testing.T) {
		is := is.New(t)
		p, count := openTestProject(t)
		ctx, cancel := context.WithCancel(context.Background())
		err := p.write(ctx, func(c *conn) error {
			if err := c.exec(`INSERT INTO t (v) VALUES (1)`); err != nil {
				return err
			}
			cancel() // the request ends after its work, before the commit
			return nil
		})
		is.NoErr(err)
		is.Equal(count(), 1)
	})
	t.Run("InterruptedWorkRollsBackAsCancelled", func(t *testing.T) {
		// Only writes alone are interrupted: interrupting a statement of a
		// shared transaction would roll back the other writes in it.
		is := is.New(t)
		p, count := openTestProject(t)
		ctx, cancel := context.WithCancel(context.Background())
		err := p.writeAlone(ctx, func(c *conn) error {
			if err := c.exec(`INSERT INTO t (v) VALUES (1)`); err != nil {
				return err
			}
			cancel()
			return dbError(ctx, c.exec(`INSERT INTO t (v) VALUES (2)`))
		})
		is.True(errors.Is(err, context.Canceled))
		is.Equal(count(), 0)
	})
	t.Run("WriterWorksAfterwards", func(t *testing.T) {
		is := is.New(t)
		p, count := openTestProject(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := p.write(context.Background(), func(c *conn) error { return nil })
		is.NoErr(err)
		err = p.write(ctx, func(c *conn) error { return c.exec(`INSERT INTO t (v) VALUES (1)`) })
		is.True(errors.Is(err, context.Canceled))
		err = p.write(context.Background(), func(c *conn) error { return c.exec(`INSERT INTO t (v) VALUES (1)`) })
		is.NoErr(err)
		is.Equal(count(), 1)
	})
}
