package projectdata_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// rawProject is a Store with project "acme" and a raw connection to the
// project's database file, to put rows in and read them back while the
// Store has no record operations.
type rawProject struct {
	s  *projectdata.Store
	db *sqlite3.Conn
}

func newRawProject(t testing.TB, opts *projectdata.Options) *rawProject {
	t.Helper()
	s, dir := pdtest.Open(t, opts)
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatalf("create project: %v", err)
	}
	db, err := sqlite3.Open(filepath.Join(dir, "acme", "project.db"))
	if err != nil {
		t.Fatalf("open raw connection: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.BusyTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return &rawProject{s: s, db: db}
}

// createTable creates a table through the Store and returns its columns.
func (r *rawProject) createTable(t testing.TB, def projectdata.TableDef) []projectdata.Column {
	t.Helper()
	_, cols, err := r.s.CreateTable(ctx, "acme", def)
	if err != nil {
		t.Fatalf("create table %s: %v", def.Name, err)
	}
	return cols
}

// insert puts rows into a table in one transaction with one prepared
// INSERT; values are nil, int, int64, float64 or string.
func (r *rawProject) insert(t testing.TB, table string, cols []string, rows ...[]any) {
	t.Helper()
	if err := r.tryInsert(table, cols, rows...); err != nil {
		t.Fatalf("insert into %s: %v", table, err)
	}
}

// tryInsert is insert returning the failure, for constraint checks.
func (r *rawProject) tryInsert(table string, cols []string, rows ...[]any) (err error) {
	quoted := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		quoted[i], marks[i] = sqlite3.QuoteIdentifier(c), "?"
	}
	tx, err := r.db.BeginImmediate()
	if err != nil {
		return err
	}
	defer tx.End(&err)
	st, _, err := r.db.Prepare(`INSERT INTO ` + sqlite3.QuoteIdentifier(table) +
		` (` + strings.Join(quoted, ", ") + `) VALUES (` + strings.Join(marks, ", ") + `)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, row := range rows {
		for i, v := range row {
			if err := bindRaw(st, i+1, v); err != nil {
				return err
			}
		}
		if err := st.Exec(); err != nil {
			return err
		}
	}
	return nil
}

func bindRaw(st *sqlite3.Stmt, i int, v any) error {
	switch v := v.(type) {
	case nil:
		return st.BindNull(i)
	case int:
		return st.BindInt64(i, int64(v))
	case int64:
		return st.BindInt64(i, v)
	case float64:
		return st.BindFloat(i, v)
	case string:
		return st.BindText(i, v)
	}
	return fmt.Errorf("bindRaw: unsupported %T", v)
}

// rows returns every row of a table in rowid order, each value written
// with its SQLite storage class, so a changed type shows.
func (r *rawProject) rows(t testing.TB, table string) []string {
	t.Helper()
	var out []string
	r.each(t, `SELECT * FROM `+sqlite3.QuoteIdentifier(table)+` ORDER BY rowid`, nil, func(st *sqlite3.Stmt) {
		var b strings.Builder
		for i := range st.ColumnCount() {
			if i > 0 {
				b.WriteString("|")
			}
			fmt.Fprintf(&b, "%s:%s", st.ColumnType(i), st.ColumnText(i))
		}
		out = append(out, b.String())
	})
	return out
}

// schemaSQL returns the sqlite_schema entries of a table and its indexes,
// as "type name: sql": the table first, then the indexes by name.
func (r *rawProject) schemaSQL(t testing.TB, table string) []string {
	t.Helper()
	var out []string
	r.each(t, `SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE tbl_name = ? ORDER BY type = 'table' DESC, name`, []any{table}, func(st *sqlite3.Stmt) {
		out = append(out, st.ColumnText(0)+" "+st.ColumnText(1)+": "+st.ColumnText(2))
	})
	return out
}

// indexColumns returns the columns of an index, in order; none when the
// index does not exist.
func (r *rawProject) indexColumns(t testing.TB, index string) []string {
	t.Helper()
	var out []string
	r.each(t, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, []any{index}, func(st *sqlite3.Stmt) {
		out = append(out, st.ColumnText(0))
	})
	return out
}

// addManagedIndex creates an index with the raw connection and registers
// it in _pd_indexes, as the create-index operation would.
func (r *rawProject) addManagedIndex(t testing.TB, tableID int64, name, sql string) {
	t.Helper()
	if err := r.db.Exec(sql); err != nil {
		t.Fatalf("create index %s: %v", name, err)
	}
	r.each(t, `INSERT INTO _pd_indexes (table_id, name, created_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z')`, []any{tableID, name}, nil)
}

// managedIndexes returns the rows of _pd_indexes.
func (r *rawProject) managedIndexes(t testing.TB) []string {
	t.Helper()
	var out []string
	r.each(t, `SELECT id, table_id, name, created_at FROM _pd_indexes ORDER BY id`, nil, func(st *sqlite3.Stmt) {
		out = append(out, fmt.Sprintf("%d %d %s %s", st.ColumnInt64(0), st.ColumnInt64(1), st.ColumnText(2), st.ColumnText(3)))
	})
	return out
}

// each runs a query with args and calls fn for every row.
func (r *rawProject) each(t testing.TB, query string, args []any, fn func(st *sqlite3.Stmt)) {
	t.Helper()
	st, _, err := r.db.Prepare(query)
	if err != nil {
		t.Fatalf("prepare %q: %v", query, err)
	}
	defer st.Close()
	for i, a := range args {
		if err := bindRaw(st, i+1, a); err != nil {
			t.Fatal(err)
		}
	}
	for st.Step() {
		if fn != nil {
			fn(st)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("run %q: %v", query, err)
	}
}

// snapshot is everything a failed change must leave as it was.
type snapshot struct {
	Schema  []string
	Rows    []string
	Columns []projectdata.Column
	Managed []string
}

func (r *rawProject) snapshot(t testing.TB, table string) snapshot {
	t.Helper()
	_, cols, err := r.s.ListColumns(ctx, "acme", table)
	if err != nil {
		t.Fatalf("list columns of %s: %v", table, err)
	}
	return snapshot{
		Schema:  r.schemaSQL(t, table),
		Rows:    r.rows(t, table),
		Columns: cols,
		Managed: r.managedIndexes(t),
	}
}
