package projectdata_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
	"github.com/projectdata/projectdata/sqlguard"
)

// queryFixture is a project with tables orders(id, item, qty) and
// customers(id, name), seeded through a raw connection, and sentinel
// values planted in the control tables.
type queryFixture struct {
	s   *projectdata.Store
	dir string
	raw *sqlite3.Conn
}

const sentinel = "SENTINEL_7f3a"

func newQueryFixture(t testing.TB, opts *projectdata.Options, orders int) queryFixture {
	t.Helper()
	s, dir := pdtest.Open(t, opts)
	if _, _, err := s.CreateProject(ctx, "acme", sentinel+"_project"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: sentinel + "_token"}); err != nil {
		t.Fatal(err)
	}
	for _, def := range []projectdata.TableDef{
		{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "item"}, {Name: "qty", Type: "INTEGER"}, {Name: "customer_id", Type: "INTEGER"}, {Name: "update_count", Type: "INTEGER"}}},
		{Name: "customers", Columns: []projectdata.ColumnDef{{Name: "name"}}},
	} {
		if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
			t.Fatal(err)
		}
	}
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `INSERT INTO customers (name) VALUES ('Ada'), ('Bob')`)
	pdtest.Exec(t, raw, fmt.Sprintf(`INSERT INTO orders (item, qty, customer_id, update_count)
		SELECT 'item' || value, value %% 10, 1 + value %% 2, 0 FROM generate_series(1, %d)`, orders))
	return queryFixture{s: s, dir: dir, raw: raw}
}

func TestQueryAccepts(t *testing.T) {
	f := newQueryFixture(t, nil, 20)
	cases := []struct {
		name string
		req  projectdata.QueryRequest
		rows int
	}{
		{"Select", projectdata.QueryRequest{SQL: `SELECT * FROM orders`}, 20},
		{"CaseAndQuotes", projectdata.QueryRequest{SQL: `select "ITEM" from [Orders] where qty = 3`}, 2},
		{"Join", projectdata.QueryRequest{SQL: `SELECT o.item, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.name = 'Ada'`}, 10},
		{"CTE", projectdata.QueryRequest{SQL: `WITH big AS (SELECT * FROM orders WHERE qty > 5) SELECT count(*) AS n FROM big`}, 1},
		{"RecursiveCTE", projectdata.QueryRequest{SQL: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x FROM c`}, 5},
		{"Subquery", projectdata.QueryRequest{SQL: `SELECT name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE qty = 0)`}, 1},
		{"ExplainQueryPlan", projectdata.QueryRequest{SQL: `EXPLAIN QUERY PLAN SELECT * FROM orders WHERE id = 1`}, 1},
		{"KeywordInString", projectdata.QueryRequest{SQL: `SELECT 'drop table orders; delete' AS s`}, 1},
		{"KeywordLikeColumn", projectdata.QueryRequest{SQL: `SELECT update_count FROM orders LIMIT 1`}, 1},
		{"TrailingSemicolonAndComment", projectdata.QueryRequest{SQL: "SELECT 1; -- done"}, 1},
		{"PositionalParams", projectdata.QueryRequest{SQL: `SELECT * FROM orders WHERE qty = ? AND customer_id = ?`, Args: []any{json.Number("3"), int64(2)}}, 2},
		{"NamedParams", projectdata.QueryRequest{SQL: `SELECT * FROM orders WHERE qty = :qty`, Named: map[string]any{"qty": json.Number("4")}}, 2},
		{"NamedParamsUnderTwoPrefixes", projectdata.QueryRequest{SQL: `SELECT * FROM orders WHERE qty = :qty OR qty = @qty + 1`, Named: map[string]any{"qty": json.Number("4")}}, 4},
		{"CTEShadowingAControlTableReadsTheCTE", projectdata.QueryRequest{SQL: `WITH _pd_tokens AS (SELECT 'mine' AS name) SELECT name FROM _pd_tokens`}, 1},
		{"JSONEach", projectdata.QueryRequest{SQL: `SELECT value FROM json_each('[1,2,3]')`}, 3},
		{"Functions", projectdata.QueryRequest{SQL: `SELECT upper(item), length(item), replace(item, 'item', 'x') FROM orders LIMIT 2`}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			res, err := f.s.Query(ctx, "acme", c.req)
			is.NoErr(err)
			is.Equal(res.RowCount, c.rows)
			is.Equal(len(res.Rows), c.rows)
			is.Equal(res.Limit, 500)
			is.True(!res.Truncated)
			is.True(res.DurationMS >= 0)
		})
	}
}

func TestQueryResultShape(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, nil, 3)
	res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT o.id, c.id, o.item, o.qty * 1.5 AS q, NULL AS n, x'00ff' AS b FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id`})
	is.NoErr(err)
	is.Equal(res.Columns, []string{"id", "id_2", "item", "q", "n", "b"})
	first := res.Rows[0]
	is.Equal(first["id"], int64(1))
	is.Equal(first["id_2"], int64(2))
	is.Equal(first["item"], "item1")
	is.Equal(first["q"], 1.5)
	is.Equal(first["n"], nil)
	is.Equal(first["b"], []byte{0, 0xff})
}

func TestQueryLimit(t *testing.T) {
	f := newQueryFixture(t, nil, 1200)
	cases := []struct {
		name      string
		body      string
		limit     int
		rows      int
		truncated bool
	}{
		{"Default", `{"sql":"SELECT * FROM orders"}`, 500, 500, true},
		{"Given", `{"sql":"SELECT * FROM orders","limit":7}`, 7, 7, true},
		{"ZeroClampsToOne", `{"query":"SELECT * FROM orders","limit":0}`, 1, 1, true},
		{"NegativeClampsToOne", `{"sql":"SELECT * FROM orders","limit":-5}`, 1, 1, true},
		{"HugeClampsTo1000", `{"sql":"SELECT * FROM orders","limit":5000}`, 1000, 1000, true},
		{"ExponentNotation", `{"sql":"SELECT * FROM orders","limit":1e1}`, 10, 10, true},
		{"BeyondInt64ClampsTo1000", `{"sql":"SELECT * FROM orders","limit":99999999999999999999}`, 1000, 1000, true},
		{"BeyondInt64NegativeClampsToOne", `{"sql":"SELECT * FROM orders","limit":-1e400}`, 1, 1, true},
		{"ExactlyAllRows", `{"sql":"SELECT * FROM orders WHERE id <= 10","limit":10}`, 10, 10, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			var req projectdata.QueryRequest
			is.NoErr(json.Unmarshal([]byte(c.body), &req))
			res, err := f.s.Query(ctx, "acme", req)
			is.NoErr(err)
			is.Equal(res.Limit, c.limit)
			is.Equal(res.RowCount, c.rows)
			is.Equal(res.Truncated, c.truncated)
		})
	}
}

func TestQueryRequestDecoding(t *testing.T) {
	cases := []struct{ name, body string }{
		{"BothSQLAndQuery", `{"sql":"SELECT 1","query":"SELECT 2"}`},
		{"UnknownField", `{"sql":"SELECT 1","sqll":1}`},
		{"NonIntegerLimit", `{"sql":"SELECT 1","limit":1.5}`},
		{"ParamsScalar", `{"sql":"SELECT 1","params":5}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req projectdata.QueryRequest
			pdtest.Code(t, json.Unmarshal([]byte(c.body), &req), projectdata.ErrInvalidRequest)
		})
	}
}

// refusedQueries is the corpus of CONTRACT §6 with the code each gets.
var refusedQueries = []struct {
	sql  string
	code projectdata.Code
}{
	{`SELECT 1; SELECT 2`, projectdata.ErrWriteSQLForbidden},
	{`SELECT 1; DROP TABLE orders`, projectdata.ErrWriteSQLForbidden},
	{`INSERT INTO orders (item) VALUES ('x')`, projectdata.ErrWriteSQLForbidden},
	{`UPDATE orders SET qty = 0`, projectdata.ErrWriteSQLForbidden},
	{`DELETE FROM orders`, projectdata.ErrWriteSQLForbidden},
	{`REPLACE INTO orders (id, item) VALUES (1, 'x')`, projectdata.ErrWriteSQLForbidden},
	{`CREATE TABLE x (a)`, projectdata.ErrWriteSQLForbidden},
	{`DROP TABLE orders`, projectdata.ErrWriteSQLForbidden},
	{`ALTER TABLE orders ADD COLUMN z`, projectdata.ErrWriteSQLForbidden},
	{`ATTACH DATABASE 'x.db' AS x`, projectdata.ErrWriteSQLForbidden},
	{`DETACH DATABASE x`, projectdata.ErrWriteSQLForbidden},
	{`PRAGMA table_info(orders)`, projectdata.ErrWriteSQLForbidden},
	{`PRAGMA writable_schema = ON`, projectdata.ErrWriteSQLForbidden},
	{`VACUUM`, projectdata.ErrWriteSQLForbidden},
	{`VACUUM INTO '/tmp/copy.db'`, projectdata.ErrWriteSQLForbidden},
	{`BEGIN`, projectdata.ErrWriteSQLForbidden},
	{`COMMIT`, projectdata.ErrWriteSQLForbidden},
	{`ROLLBACK`, projectdata.ErrWriteSQLForbidden},
	{`SAVEPOINT a`, projectdata.ErrWriteSQLForbidden},
	{`RELEASE a`, projectdata.ErrWriteSQLForbidden},
	{`EXPLAIN SELECT 1`, projectdata.ErrWriteSQLForbidden},
	{`EXPLAIN QUERY PLAN DELETE FROM orders`, projectdata.ErrWriteSQLForbidden},
	{`WITH x AS (SELECT 1) DELETE FROM orders`, projectdata.ErrWriteSQLForbidden},
	{`WITH x AS (SELECT 1) INSERT INTO orders (item) SELECT * FROM x`, projectdata.ErrWriteSQLForbidden},
	{`REINDEX`, projectdata.ErrWriteSQLForbidden},
	{`ANALYZE`, projectdata.ErrWriteSQLForbidden},
	{`VALUES (1)`, projectdata.ErrWriteSQLForbidden},
	{`SELECT * FROM _pd_tokens`, projectdata.ErrQueryTableDenied},
	{`select * from "_PD_TOKENS"`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM [_pd_project]`, projectdata.ErrQueryTableDenied},
	{"SELECT * FROM `_pd_tables`", projectdata.ErrQueryTableDenied},
	{`SELECT * FROM main._pd_columns`, projectdata.ErrQueryTableDenied},
	{`SELECT t.name FROM _pd_tokens AS t`, projectdata.ErrQueryTableDenied},
	{`SELECT (SELECT secret_sha256 FROM _pd_tokens LIMIT 1)`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM orders WHERE item IN (SELECT name FROM _pd_tokens)`, projectdata.ErrQueryTableDenied},
	{`WITH x AS (SELECT * FROM _pd_tokens) SELECT * FROM x`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM orders JOIN _pd_exports ON 1`, projectdata.ErrQueryTableDenied},
	{`SELECT count(*) FROM _pd_tokens`, projectdata.ErrQueryTableDenied},
	{`SELECT count(*) FROM sqlite_master`, projectdata.ErrQueryTableDenied},
	{`SELECT 1 FROM orders, _pd_tokens`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM sqlite_master`, projectdata.ErrQueryTableDenied},
	{`SELECT sql FROM sqlite_schema`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM SQLITE_SCHEMA`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM temp.sqlite_master`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM sqlite_temp_master`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM sqlite_sequence`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM pragma_table_info('orders')`, projectdata.ErrQueryTableDenied},
	{`SELECT * FROM pragma_table_list`, projectdata.ErrQueryTableDenied},
	{`SELECT name FROM pragma_function_list`, projectdata.ErrQueryTableDenied},
	{`EXPLAIN QUERY PLAN SELECT * FROM _pd_tokens`, projectdata.ErrQueryTableDenied},
}

func TestQueryRefusesAndChangesNothing(t *testing.T) {
	// No checkpoints: see FuzzQuery.
	f := newQueryFixture(t, &projectdata.Options{ReplicatorCheckpoints: true}, 20)
	before := pdtest.FileSum(t, f.dir, "acme")
	for _, c := range refusedQueries {
		t.Run(c.sql, func(t *testing.T) {
			is := is.New(t)
			res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: c.sql})
			pdtest.Code(t, err, c.code)
			is.Equal(len(res.Rows), 0)
			is.True(!strings.Contains(err.Error(), "sqlite3"))
			is.True(!strings.Contains(err.Error(), "sqlguard")) // no package names
		})
	}
	is.New(t).Equal(pdtest.FileSum(t, f.dir, "acme"), before)
}

func TestQueryAuthorizerBacksUpTheLexer(t *testing.T) {
	// Statements the lexer admits but that read control data: only SQLite's
	// authorizer can refuse them.
	f := newQueryFixture(t, nil, 5)
	for _, sql := range []string{
		`SELECT * FROM _pd_tokens`,
		`SELECT * FROM pragma_table_info('orders')`,
		`SELECT * FROM sqlite_schema`,
	} {
		is.New(t).NoErr(sqlguard.Check(sql))
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
		pdtest.Code(t, err, projectdata.ErrQueryTableDenied)
	}
}

func TestQueryInvalidRequests(t *testing.T) {
	f := newQueryFixture(t, nil, 5)
	cases := []struct {
		name string
		req  projectdata.QueryRequest
	}{
		{"Empty", projectdata.QueryRequest{}},
		{"Blank", projectdata.QueryRequest{SQL: "  "}},
		{"SyntaxError", projectdata.QueryRequest{SQL: "SELECT FROM WHERE"}},
		{"UnknownTable", projectdata.QueryRequest{SQL: "SELECT * FROM nope"}},
		{"TooFewArgs", projectdata.QueryRequest{SQL: "SELECT ?, ?", Args: []any{1}}},
		{"TooManyArgs", projectdata.QueryRequest{SQL: "SELECT 1", Args: []any{1}}},
		{"MissingNamed", projectdata.QueryRequest{SQL: "SELECT :a, :b", Named: map[string]any{"a": 1}}},
		{"ExtraNamed", projectdata.QueryRequest{SQL: "SELECT :a", Named: map[string]any{"a": 1, "b": 2}}},
		{"NestedParam", projectdata.QueryRequest{SQL: "SELECT ?", Args: []any{map[string]any{}}}},
		// Longer than the values of a query may be (QueryMaxBytes): SQLite
		// refuses to bind it, which was an internal error.
		{"ParamOverTheLengthLimit", projectdata.QueryRequest{SQL: "SELECT length(?)", Args: []any{strings.Repeat("x", 5<<20)}}},
		{"NamedParamOverTheLengthLimit", projectdata.QueryRequest{SQL: "SELECT length(:a)", Named: map[string]any{"a": strings.Repeat("x", 5<<20)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.s.Query(ctx, "acme", c.req)
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		})
	}
}

func TestQueryExecutionBudget(t *testing.T) {
	const budget = 200 * time.Millisecond
	f := newQueryFixture(t, &projectdata.Options{QueryTimeout: budget}, 3000)
	t.Run("EndlessRecursionStopsWithinTwiceTheBudget", func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`})
		elapsed := time.Since(start)
		pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
		if !raceEnabled { // the race detector slows SQLite about 15 times
			is.True(elapsed < 2*budget) // the budget is enforced, not merely reported
		}
	})
	t.Run("HintNamesFullScans", func(t *testing.T) {
		is := is.New(t)
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT count(*) FROM orders a, orders b, orders c WHERE a.qty + b.qty + c.qty = -1`})
		pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
		is.True(strings.Contains(err.Error(), "orders"))
		is.True(strings.Contains(err.Error(), "index"))
	})
	t.Run("ConnectionWorksAfterwards", func(t *testing.T) {
		is := is.New(t)
		for range 8 { // every pooled reader
			res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT count(*) AS n FROM orders`})
			is.NoErr(err)
			is.Equal(res.Rows[0]["n"], int64(3000))
		}
	})
}

func TestQueryResultBudget(t *testing.T) {
	f := newQueryFixture(t, &projectdata.Options{QueryMaxBytes: 64 << 10}, 500)
	t.Run("ManyRows", func(t *testing.T) {
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT item, hex(randomblob(200)) FROM orders`})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
	})
	t.Run("OneHugeValue", func(t *testing.T) {
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT zeroblob(100000000)`})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
	})
	t.Run("HugeIntermediateString", func(t *testing.T) {
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT length(printf('%.*c', 500000000, 'x'))`})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
	})
	t.Run("UnderTheBudget", func(t *testing.T) {
		is := is.New(t)
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT item FROM orders`})
		is.NoErr(err)
		is.Equal(res.RowCount, 500)
	})
}

func TestQueryMemoryBudget(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, &projectdata.Options{QueryMaxMemory: 4 << 20, QueryMaxBytes: 1 << 30, QueryTimeout: time.Minute}, 10) // only memory may stop it
	// printf asks SQLite's heap for one 50 MB string: the driver panics
	// with out of memory, which must become a budget error.
	_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT length(printf('%.*c', 50000000, 'x'))`})
	pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	is.True(strings.Contains(err.Error(), "memory"))
	for range 8 { // every pooled reader still answers, ordinary queries included
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT count(*) AS n FROM orders`})
		is.NoErr(err)
		is.Equal(res.Rows[0]["n"], int64(10))
	}
}

func TestQueryRoles(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, nil, 1)
	tok, err := f.s.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead})
	is.NoErr(err)
	c, err := f.s.Authenticate(ctx, "acme", tok.Token)
	is.NoErr(err)
	_, err = f.s.Query(projectdata.WithCaller(ctx, c), "acme", projectdata.QueryRequest{SQL: "SELECT * FROM orders"})
	is.NoErr(err)
}

// FuzzQuery: whatever the guard admits, running it leaves the database
// unchanged and never returns control data.
func FuzzQuery(f *testing.F) {
	for _, c := range refusedQueries {
		f.Add(c.sql)
	}
	for _, s := range []string{
		`SELECT * FROM orders`, `SELECT name FROM customers WHERE id = 1`,
		`WITH x AS (SELECT * FROM customers) SELECT * FROM x`,
		`SELECT * FROM json_each('{"a":1}')`, `SELECT sqlite_version()`,
		`SELECT * FROM orders o, customers c WHERE o.customer_id = c.id`,
		`EXPLAIN QUERY PLAN SELECT * FROM orders`,
	} {
		f.Add(s)
	}
	// No checkpoints (ReplicatorCheckpoints: as if a replicator made them):
	// the Store's background checkpoint, due 250 ms after the fixture's
	// last write, would change the files under a slow run.
	fx := newQueryFixture(f, &projectdata.Options{QueryTimeout: 50 * time.Millisecond, ReplicatorCheckpoints: true}, 50)
	version := func() int64 {
		st, _, err := fx.raw.Prepare(`PRAGMA data_version`)
		if err != nil {
			f.Fatal(err)
		}
		defer st.Close()
		st.Step()
		return st.ColumnInt64(0)
	}
	before := pdtest.FileSum(f, fx.dir, "acme")
	f.Fuzz(func(t *testing.T, sql string) {
		if sqlguard.Check(sql) != nil {
			return
		}
		v := version()
		res, err := fx.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
		if code := projectdata.ErrorCode(err); code == projectdata.ErrInternal {
			t.Fatalf("internal error for %q: %v", sql, err)
		}
		if version() != v {
			t.Fatalf("%q changed the database", sql)
		}
		b, _ := json.Marshal(res.Rows)
		if strings.Contains(string(b), sentinel) {
			t.Fatalf("%q returned control data: %s", sql, b)
		}
	})
	if pdtest.FileSum(f, fx.dir, "acme") != before {
		f.Fatal("the database files changed")
	}
}

// TestQueryIntegerParamsKeepTheirPrecision: an integer parameter past
// int64 is refused rather than bound rounded to a REAL (an insert refuses
// it too); written with a fraction or an exponent it is a REAL.
func TestQueryIntegerParamsKeepTheirPrecision(t *testing.T) {
	f := newQueryFixture(t, nil, 1)
	for _, n := range []string{"9223372036854775808", "-9223372036854775809", "123456789012345678901234567890"} {
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT ? AS v", Args: []any{json.Number(n)}})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		_, err = f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT :n AS v", Named: map[string]any{"n": json.Number(n)}})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	}
	_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT ? AS v", Args: []any{json.Number("twelve")}})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	for n, want := range map[string]any{
		"9223372036854775807":   int64(math.MaxInt64),
		"-9223372036854775808":  int64(math.MinInt64),
		"9223372036854775808.0": 9223372036854775808.0,
		"1.5e300":               1.5e300,
		"1E3":                   1000.0,
	} {
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT ? AS v", Args: []any{json.Number(n)}})
		if err != nil || res.Rows[0]["v"] != want {
			t.Errorf("%s: %v (%T), %v; want %v", n, res.Rows, res.Rows, err, want)
		}
	}
}

// TestQueryValueOverTheBudgetOnTheWay: a value too big for the result
// budget that the query only makes on the way (its result is a count) is
// refused with a message that does not say the result holds it.
func TestQueryValueOverTheBudgetOnTheWay(t *testing.T) {
	f := newQueryFixture(t, &projectdata.Options{QueryMaxBytes: 1 << 20}, 1)
	_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT length(zeroblob(?)) AS n", Args: []any{2 << 20}})
	pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
	if !strings.Contains(err.Error(), "on the way") {
		t.Errorf("message %q", err)
	}
}
