package projectdata

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// queryStore is a Store with one reader per project (so that every query
// meets the statements the one before kept) and a table t (n INTEGER) of
// rows 1, 2, 3.
func queryStore(t *testing.T) (*Store, *project) {
	t.Helper()
	is := is.New(t)
	s, err := Open(t.TempDir(), &Options{MaxReadersPerProject: 1, changeLogOff: true})
	is.NoErr(err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "n", Type: "INTEGER"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "t", []Row{{"n": 1}, {"n": 2}, {"n": 3}})
	is.NoErr(err)
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	s.release(p)
	return s, p
}

// keptQueries returns the SQL of the statements the project's idle reader
// keeps.
func keptQueries(p *project) map[string]bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	kept := map[string]bool{}
	for _, c := range p.readers {
		if c.queries != nil {
			for _, u := range c.queries.keys() {
				kept[u] = true
			}
		}
	}
	return kept
}

// keptStatement returns the statement the project's idle reader keeps for
// sql, or nil.
func keptStatement(p *project, sql string) *sqlite3.Stmt {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	for _, c := range p.readers {
		if c.queries != nil {
			if u, ok := c.queries.get(sql); ok {
				return u.st
			}
		}
	}
	return nil
}

// TestRepeatedQueriesReuseTheirStatement: a query that passed its checks
// and ran to its end is kept, and runs again with other parameters, after
// a truncated run, and with parameters left out refused as before.
func TestRepeatedQueriesReuseTheirStatement(t *testing.T) {
	is := is.New(t)
	s, p := queryStore(t)
	ctx := context.Background()
	const sql = "SELECT n FROM t WHERE n >= ? ORDER BY n"
	res, err := s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{2}})
	is.NoErr(err)
	is.Equal(res.Rows, []Row{{"n": int64(2)}, {"n": int64(3)}})
	is.True(keptQueries(p)[sql])

	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{1}, Limit: 1})
	is.NoErr(err)
	is.Equal(res.Rows, []Row{{"n": int64(1)}})
	is.True(res.Truncated)
	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{3}})
	is.NoErr(err)
	is.Equal(res.Rows, []Row{{"n": int64(3)}}) // from the start, not where the truncated run stopped
	_, err = s.Query(ctx, "acme", QueryRequest{SQL: sql})
	is.Equal(ErrorCode(err), ErrInvalidRequest) // its parameter is still missing
	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{2}})
	is.NoErr(err)
	is.Equal(len(res.Rows), 2)

	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{2}}) // the kept statement
	is.NoErr(err)
	res.Columns[0] = "changed" // the caller's copy
	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql, Args: []any{2}})
	is.NoErr(err)
	is.Equal(res.Columns, []string{"n"})
	got, err := s.AppendQueryJSON(ctx, nil, "acme", QueryRequest{SQL: sql, Args: []any{3}})
	is.NoErr(err)
	is.True(strings.HasPrefix(string(got), `{"rows":[{"n":3}],"row_count":1,`))
}

// TestRefusedQueriesAreNotKept: statements the sandbox refuses, and ones
// that failed, are never kept.
func TestRefusedQueriesAreNotKept(t *testing.T) {
	is := is.New(t)
	s, p := queryStore(t)
	ctx := context.Background()
	for _, sql := range []string{
		"SELECT * FROM _pd_tokens",
		"SELECT * FROM t; SELECT 1",
		"SELECT * FROM pragma_table_info('t')",
		"SELECT abs(-9223372036854775808) FROM t",
		"SELECT printf('%.*c', 3000000, 'x') FROM t", // past the result budget on its second row
	} {
		_, err := s.Query(ctx, "acme", QueryRequest{SQL: sql})
		is.True(err != nil)
		is.True(!keptQueries(p)[sql])
	}
}

// TestKeptQueriesFollowTheSchema: after the registry changes, a kept
// statement is checked again: a dropped table is refused, a new column is
// seen.
func TestKeptQueriesFollowTheSchema(t *testing.T) {
	is := is.New(t)
	s, p := queryStore(t)
	ctx := context.Background()
	const sql = "SELECT * FROM t WHERE n = 1"
	res, err := s.Query(ctx, "acme", QueryRequest{SQL: sql})
	is.NoErr(err)
	is.Equal(res.Columns, []string{"id", "n"})
	first := keptStatement(p, sql)
	is.True(first != nil)
	_, err = s.Query(ctx, "acme", QueryRequest{SQL: sql})
	is.NoErr(err)
	is.True(keptStatement(p, sql) == first) // the same schema: the same statement
	_, err = s.AddColumn(ctx, "acme", "t", ColumnDef{Name: "m"})
	is.NoErr(err)
	res, err = s.Query(ctx, "acme", QueryRequest{SQL: sql})
	is.NoErr(err)
	is.Equal(res.Columns, []string{"id", "n", "m"})
	is.True(keptStatement(p, sql) != first) // prepared and checked again
	_, err = s.DeleteTable(ctx, "acme", "t")
	is.NoErr(err)
	_, err = s.Query(ctx, "acme", QueryRequest{SQL: sql})
	is.True(err != nil)
}

// TestKeptQueriesFollowSchemaChangedByHand: a schema changed behind the
// registry's back (by another program) leaves the registry, and so the
// kept statement, as they were; SQLite prepares the statement again when
// it runs, and the result's columns are those of the statement it runs,
// not those read when it was kept.
func TestKeptQueriesFollowSchemaChangedByHand(t *testing.T) {
	is := is.New(t)
	s, p := queryStore(t)
	ctx := context.Background()
	raw, err := sqlite3.Open(p.dbPath())
	is.NoErr(err)
	defer raw.Close()
	is.NoErr(raw.BusyTimeout(5e9))
	const sql = "SELECT * FROM t WHERE id = 1"
	for range 2 {
		res, err := s.Query(ctx, "acme", QueryRequest{SQL: sql})
		is.NoErr(err)
		is.Equal(res.Columns, []string{"id", "n"})
	}
	is.True(keptStatement(p, sql) != nil)
	for _, step := range []struct {
		ddl  string
		cols []string
		row  Row
	}{
		{`ALTER TABLE t ADD COLUMN m TEXT DEFAULT 'x'`, []string{"id", "n", "m"}, Row{"id": int64(1), "n": int64(1), "m": "x"}},
		{`ALTER TABLE t DROP COLUMN n`, []string{"id", "m"}, Row{"id": int64(1), "m": "x"}},
	} {
		is.NoErr(raw.Exec(step.ddl))
		for range 2 {
			res, err := s.Query(ctx, "acme", QueryRequest{SQL: sql})
			is.NoErr(err)
			is.Equal(res.Columns, step.cols)
			is.Equal(res.Rows, []Row{step.row})
			got, err := s.AppendQueryJSON(ctx, nil, "acme", QueryRequest{SQL: sql})
			is.NoErr(err)
			want, err := json.Marshal(res.Rows)
			is.NoErr(err)
			is.True(strings.HasPrefix(string(got), `{"rows":`+string(want)+`,`))
		}
		res, err := s.Query(ctx, "acme", QueryRequest{SQL: "SELECT * FROM t WHERE id = 0"}) // no row
		is.NoErr(err)
		is.Equal(res.Columns, step.cols)
	}
}

// TestLargeStatementsAreNotKept: a statement holding much of SQLite's
// memory (a program of thousands of values) is not kept.
func TestLargeStatementsAreNotKept(t *testing.T) {
	is := is.New(t)
	s, p := queryStore(t)
	ctx := context.Background()
	var b strings.Builder
	b.WriteString("SELECT n FROM t WHERE n NOT IN (0")
	for i := 100; i < 5000; i++ {
		fmt.Fprintf(&b, ", %d", i)
	}
	b.WriteString(")")
	_, err := s.Query(ctx, "acme", QueryRequest{SQL: b.String()})
	is.NoErr(err)
	is.True(!keptQueries(p)[b.String()])
	_, err = s.Query(ctx, "acme", QueryRequest{SQL: "SELECT n FROM t"})
	is.NoErr(err)
	is.True(keptQueries(p)["SELECT n FROM t"]) // a small one is
}

// TestConnectionsCloseWithStatementsLeftOpen: a statement left open on a
// connection (one a panic of the driver unwound past, say) does not keep it
// from closing: SQLite would refuse, and the connection's memory, which
// only closing gives back, would stay taken for good.
func TestConnectionsCloseWithStatementsLeftOpen(t *testing.T) {
	is := is.New(t)
	_, p := queryStore(t)
	c, err := p.takeReader()
	is.NoErr(err)
	for range 3 {
		st, _, err := c.db.Prepare("SELECT n FROM t")
		is.NoErr(err)
		is.True(st.Step()) // running, too
	}
	is.NoErr(c.close())
}
