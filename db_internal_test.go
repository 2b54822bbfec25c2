package projectdata

import (
	"context"
	"fmt"
	"strings"
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
	// No change log: the tests write rows with SQL of their own.
	s, err := Open(t.TempDir(), &Options{changeLogOff: true})
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
	t.Run("FinishedWorkAloneCommits", func(t *testing.T) {
		is := is.New(t)
		p, count := openTestProject(t)
		ctx, cancel := context.WithCancel(context.Background())
		err := p.writeAlone(ctx, func(c *conn) error {
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

// TestStatementCacheKeepsRunningStatements: statements prepared while
// another is being stepped fill the cache past its bound; the running one
// is not finalized under its caller.
func TestStatementCacheKeepsRunningStatements(t *testing.T) {
	is := is.New(t)
	p, _ := openTestProject(t)
	err := p.write(context.Background(), func(c *conn) error {
		for v := range 3 {
			if err := c.exec(`INSERT INTO t (v) VALUES (?)`, v); err != nil {
				return err
			}
		}
		return nil
	})
	is.NoErr(err)
	err = p.read(context.Background(), func(c *conn) error {
		rows := 0
		err := c.query(`SELECT v FROM t ORDER BY v`, nil, func(st *sqlite3.Stmt) error {
			is.Equal(st.ColumnInt(0), rows)
			rows++
			for i := range maxCachedStmts + 1 {
				if _, err := c.queryRow(fmt.Sprintf(`SELECT %d`, i), nil, func(*sqlite3.Stmt) error { return nil }); err != nil {
					return err
				}
			}
			return nil
		})
		is.Equal(rows, 3)
		is.True(len(c.stmts) <= maxCachedStmts+1)
		return err
	})
	is.NoErr(err)
}

// TestOneOffSQLIsNotCached: explaining a unique violation runs SQL of its
// own, which does not take a place in the statement cache.
func TestOneOffSQLIsNotCached(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), nil)
	is.NoErr(err)
	defer s.Close()
	ctx := context.Background()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "k", Unique: true}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "t", []Row{{"k": "a"}, {"k": "a"}})
	is.True(errors.Is(err, ErrUniqueViolation))
	is.True(strings.Contains(err.Error(), `column "k" value "a" already exists`)) // the explanation ran
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	defer s.release(p)
	// Holding the writer: the log's pruning uses it too, and caches
	// statements of its own there, which end in LIMIT 1 as well.
	err = p.write(ctx, func(c *conn) error {
		for sql := range c.stmts {
			is.True(!strings.Contains(sql, `WHERE "k" = ? LIMIT 1`)) // the explanation's statement
		}
		return nil
	})
	is.NoErr(err)
}

// TestRolledBackRegistryIsNotCached: a registry read while a schema write
// is under way is never cached; that write may roll back, and the next
// one that commits raises the version to the same number.
func TestRolledBackRegistryIsNotCached(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), nil)
	is.NoErr(err)
	defer s.Close()
	ctx := context.Background()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	err = p.writeSchema(ctx, func(c *conn, _ *schema) error {
		if err := c.db.Exec(`CREATE TABLE ghost (id INTEGER PRIMARY KEY)`); err != nil {
			return err
		}
		if err := c.exec(`INSERT INTO _pd_tables (name, created_at, updated_at) VALUES ('ghost', '', '')`); err != nil {
			return err
		}
		if _, err := p.schemaFor(c); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	is.True(err != nil)
	s.release(p)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "real"})
	is.NoErr(err)
	_, err = s.GetTable(ctx, "acme", "real")
	is.NoErr(err)
	_, err = s.GetTable(ctx, "acme", "ghost")
	is.True(errors.Is(err, ErrTableNotFound))
}

// TestReadsInterruptedByTheirCallerEndWithItsError: a read interrupted
// because its caller went away, in any statement (the registry's, say),
// ends with the caller's error, never SQLite's INTERRUPT as an internal
// one.
func TestReadsInterruptedByTheirCallerEndWithItsError(t *testing.T) {
	is := is.New(t)
	_, p := queryStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := p.read(ctx, func(c *conn) error {
		cancel()
		return c.query(`SELECT count(*) FROM generate_series(1, 1000000)`, nil, nil)
	})
	is.Equal(err, context.Canceled)
}

// TestReadSchemaReadsOneSnapshot: every statement of a readSchema reads the
// snapshot its registry version was read in, whatever commits meanwhile.
func TestReadSchemaReadsOneSnapshot(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, p := queryStore(t)
	count := func(c *conn) (n int64) {
		_, err := c.queryRow(`SELECT count(*) FROM t`, nil, func(st *sqlite3.Stmt) error {
			n = st.ColumnInt64(0)
			return nil
		})
		is.NoErr(err)
		return n
	}
	var before int64
	err := p.readSchema(ctx, func(c *conn, sc *schema) error {
		before = count(c)
		_, err := s.Insert(ctx, "acme", "t", []Row{{}}) // commits on the writer
		is.NoErr(err)
		is.Equal(count(c), before) // not seen in this read's snapshot
		return nil
	})
	is.NoErr(err)
	n, err := s.ListRecords(ctx, "acme", "t", ListOptions{})
	is.NoErr(err)
	is.Equal(int64(len(n.Rows)), before+1) // seen by the next read
}

// TestWhereReadersKeepTemporaryData: the readers of queries and lists hold
// their sorts and temporary tables in their heap, which those cap, never
// on the disk every project shares; an export's connection, whose heap
// has no cap, keeps them on disk, should SQLite sort a table's rows.
func TestWhereReadersKeepTemporaryData(t *testing.T) {
	is := is.New(t)
	_, _, p := boundedStore(t, nil)
	tempStore := func(c *conn) (store int) {
		_, err := c.queryRow(`PRAGMA temp_store`, nil, func(st *sqlite3.Stmt) error {
			store = st.ColumnInt(0)
			return nil
		})
		is.NoErr(err)
		return store
	}
	const file, memory = 1, 2
	is.NoErr(p.read(context.Background(), func(c *conn) error {
		is.Equal(tempStore(c), memory)
		return nil
	}))
	is.NoErr(p.exportRead(context.Background(), func(c *conn) error {
		is.Equal(tempStore(c), file)
		return nil
	}))
}

// TestReadersRefuseWritesWithoutTheSandbox: a query's SQL is stopped by
// the lexer (sqlguard) and by SQLite's authorizer (the query's sandbox).
// Under both, a reader connection refuses to write whatever the SQL: its
// file is opened read-only, temporary tables are refused too (query_only,
// which refuses writes to the file as well), and no database can be
// attached.
func TestReadersRefuseWritesWithoutTheSandbox(t *testing.T) {
	p, count := openTestProject(t)
	err := p.read(context.Background(), func(c *conn) error {
		if c.sandbox != nil {
			t.Fatal("a reader outside a query has a sandbox")
		}
		for _, sql := range []string{
			`INSERT INTO t (v) VALUES (1)`,
			`CREATE TEMP TABLE scratch (x)`,
			`CREATE TEMP VIEW scratch AS SELECT 1`,
			`ATTACH ':memory:' AS other`,
		} {
			if err := c.exec(sql); err == nil {
				t.Errorf("a reader ran %s", sql)
			}
		}
		// Under query_only, the file itself: opened read-only.
		if err := c.exec(`PRAGMA query_only=OFF`); err != nil {
			return err
		}
		defer c.exec(`PRAGMA query_only=ON`)
		if err := c.exec(`INSERT INTO t (v) VALUES (1)`); err == nil {
			t.Error("a reader without query_only wrote to its file")
		}
		return nil
	})
	is.New(t).NoErr(err)
	is.New(t).Equal(count(), 0)
}
