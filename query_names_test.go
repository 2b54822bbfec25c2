package projectdata_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestTableValuedFunctionNamesAreRefused: a table of such a name would
// shadow the function in every query of the project.
func TestTableValuedFunctionNamesAreRefused(t *testing.T) {
	f := newQueryFixture(t, nil, 3)
	for _, name := range []string{"json_each", "JSON_TREE", "jsonb_each", "jsonb_tree", "generate_series", "pragma_table_info", "Pragma_anything"} {
		t.Run(name, func(t *testing.T) {
			_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: name})
			pdtest.Code(t, err, projectdata.ErrInvalidTableName)
		})
	}
	t.Run("TheFunctionsStillWork", func(t *testing.T) {
		is := is.New(t)
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT (SELECT count(*) FROM json_each('[1,2]')) + (SELECT count(*) FROM generate_series(1, 3)) AS n`})
		is.NoErr(err)
		is.Equal(res.Rows[0]["n"], int64(5))
	})
}

// TestInDoesNotDependOnATableName: a table named json_each that exists
// already (made before names were checked) does not break in and not_in.
func TestInDoesNotDependOnATableName(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, nil, 10)
	_, _, err := f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "legacy", Columns: []projectdata.ColumnDef{{Name: "value", Type: "INTEGER"}}})
	is.NoErr(err)
	pdtest.Exec(t, f.raw, `BEGIN; ALTER TABLE legacy RENAME TO json_each; UPDATE _pd_tables SET name = 'json_each' WHERE name = 'legacy';
		UPDATE _pd_registry SET version = version + 1; COMMIT`)
	for _, op := range []projectdata.WhereOp{projectdata.WhereIn, projectdata.WhereNotIn} {
		res, err := f.s.UpdateRecords(ctx, "acme", "orders", projectdata.BulkUpdate{
			Data:  projectdata.Row{"update_count": 1},
			Where: projectdata.Where{{Column: "qty", Op: op, Value: []any{1, 2}}},
		})
		is.NoErr(err)
		is.True(res.AffectedRows > 0)
	}
}

// TestPragmaFunctionsAreDeniedWhateverTheSelect: SQLite checks a pragma
// function read through count(*) only while stepping; the sandbox denies
// it first, and both layers answer query_table_denied. A statement that is
// only explained is never stepped: there the sandbox is the one layer.
func TestPragmaFunctionsAreDeniedWhateverTheSelect(t *testing.T) {
	f := newQueryFixture(t, nil, 3)
	for _, sql := range []string{
		`SELECT count(*) FROM pragma_table_info('_pd_tokens')`,
		`SELECT * FROM pragma_table_info('_pd_tokens')`,
		`SELECT count(*) FROM pragma_module_list`,
		`SELECT count(*) FROM PRAGMA_TABLE_LIST`,
		`SELECT count(*) FROM main.pragma_table_info('orders')`,
		`SELECT (SELECT count(*) FROM pragma_index_list('orders')) AS n`,
		`EXPLAIN QUERY PLAN SELECT count(*) FROM pragma_table_info('_pd_tokens')`, // never stepped: the sandbox alone decides
	} {
		t.Run(sql, func(t *testing.T) {
			_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
			pdtest.Code(t, err, projectdata.ErrQueryTableDenied)
		})
	}
}

// TestSQLErrorsKeepSQLiteWords: the message of a bad statement is SQLite's
// own explanation, whole.
func TestSQLErrorsKeepSQLiteWords(t *testing.T) {
	f := newQueryFixture(t, nil, 3)
	cases := []struct{ sql, words string }{
		{`SELECT * FROM nope`, "no such table: nope"},
		{`SELECT nme FROM orders`, "no such column: nme"},
		{`SELECT FROM orders`, `near "FROM": syntax error`},
		{`SELECT abs(1, 2)`, "wrong number of arguments to function abs()"},
	}
	for _, c := range cases {
		t.Run(c.sql, func(t *testing.T) {
			is := is.New(t)
			_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: c.sql})
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
			is.True(strings.Contains(err.Error(), c.words)) // SQLite's words
			is.True(!strings.Contains(err.Error(), "sqlite3"))
			is.True(!strings.Contains(err.Error(), "SQL logic error"))
		})
	}
}

// TestRepeatedResultNames: a result name that repeats gets the first
// suffix _2, _3, … that no column before it holds, whatever the names
// around it. The suffixes were searched from _2 for each repeat, so that
// 2,000 columns named alike took 2,000,000 tries outside the query budget.
func TestRepeatedResultNames(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, nil, 1)
	res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT 1 AS a, 2 AS a_2, 3 AS a, 4 AS a, 5 AS a_3, 6 AS b, 7 AS a`})
	is.NoErr(err)
	is.Equal(res.Columns, []string{"a", "a_2", "a_3", "a_4", "a_3_2", "b", "a_5"})

	// Random mixes of names and their suffixed forms, against the rule
	// written the plain way.
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "a_2", "a_3", "a_2_2", "a_10", "b", "b_2"}
	for range 50 {
		var sql strings.Builder
		var want []string
		seen := map[string]bool{}
		for i := range 200 {
			name := names[rng.IntN(len(names))]
			if i > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "%d AS %s", i, name)
			got := name
			for k := 2; seen[got]; k++ {
				got = name + "_" + strconv.Itoa(k)
			}
			seen[got] = true
			want = append(want, got)
		}
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT " + sql.String()})
		is.NoErr(err)
		is.Equal(res.Columns, want)
	}
}
