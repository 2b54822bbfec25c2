package projectdata_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// cteChain is a statement whose preparation is long and whose run is
// short: n common table expressions, each reading the one before.
func cteChain(n int) string {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT 1 AS x)")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, ", c%d AS (SELECT x FROM c%d)", i, i-1)
	}
	fmt.Fprintf(&b, " SELECT x FROM c%d", n-1)
	return b.String()
}

// longToPrepare is a statement that takes SQLite about 0.1 s to prepare
// (250 KB of one IN list), and no time to run.
var longToPrepare = "SELECT 1 WHERE 1 IN (" + strings.Repeat("1+2, ", 50000) + "0)"

func TestQueryBudgetCoversPreparation(t *testing.T) {
	t.Run("PlanningPastTheBudget", func(t *testing.T) {
		f := newQueryFixture(t, &projectdata.Options{QueryTimeout: time.Millisecond, QueryMaxSQLBytes: 1 << 20}, 1)
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: longToPrepare})
		pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	})
	t.Run("CallerGoneDuringPlanning", func(t *testing.T) {
		is := is.New(t)
		f := newQueryFixture(t, &projectdata.Options{QueryTimeout: time.Minute, QueryMaxSQLBytes: 1 << 20}, 1)
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(5*time.Millisecond, cancel)
		_, err := f.s.Query(cctx, "acme", projectdata.QueryRequest{SQL: longToPrepare})
		is.Equal(err, context.Canceled)
	})
	t.Run("StatementTooLongToParse", func(t *testing.T) {
		f := newQueryFixture(t, nil, 1)
		_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT 1" + strings.Repeat(" ", 100000)})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	})
}

func TestQueryResultBudgetCountsEncodedBytes(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, &projectdata.Options{QueryMaxBytes: 64 << 10}, 1)
	// 20,000 raw bytes, 120,000 once each < is written as \u003c.
	_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT printf('%.*c', 20000, '<') AS s`})
	pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
	res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT printf('%.*c', 20000, 'a') AS s`})
	is.NoErr(err)
	is.Equal(len(res.Rows[0]["s"].(string)), 20000)
}

func TestQueryInfinityEncodes(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, nil, 1)
	res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT 1e999 AS big, -1e999 AS small`})
	is.NoErr(err)
	_, err = json.Marshal(res) // JSON has no infinity: it must not break the encoder
	is.NoErr(err)
	is.Equal(res.Rows[0]["big"], "Inf")
}

// TestNestingIsHeldUnderSQLiteStack: statements nested deeper than
// SQLite's stack takes are refused before SQLite sees them, or by SQLite
// itself, never by overflowing its stack (which leaves the reader's memory
// taken for good); statements at the bounds run.
func TestNestingIsHeldUnderSQLiteStack(t *testing.T) {
	f := newQueryFixture(t, &projectdata.Options{QueryMaxSQLBytes: 1 << 20}, 1)
	nestedFrom := func(n int, inner string) string {
		sql := "SELECT " + inner
		for range n - 1 {
			sql = "SELECT * FROM (" + sql + ")"
		}
		return sql
	}
	calls := func(n int) string { return strings.Repeat("abs(", n-1) + "1" + strings.Repeat(")", n-1) }
	cteChainEndingIn := func(n int, expr string) string {
		return strings.Replace(cteChain(n), "SELECT 1 AS x", "SELECT "+expr+" AS x", 1)
	}
	t.Run("AtTheBounds", func(t *testing.T) {
		for name, sql := range map[string]string{
			"CTEChain":    cteChainEndingIn(63, calls(127)),
			"NestedFrom":  nestedFrom(64, calls(127)),
			"Compound":    "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 63),
			"PlusChain":   "SELECT 1" + strings.Repeat("+1", 126),
			"NestedCalls": "SELECT " + calls(127),
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
				is.NoErr(err)
			})
		}
	})
	t.Run("PastTheBounds", func(t *testing.T) {
		for name, sql := range map[string]string{
			"CTEChain":     cteChain(65),
			"LongCTEChain": cteChain(3000),
			"NestedFrom":   nestedFrom(300, "1"),
			"Compound":     "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 249),
			"PlusChain":    "SELECT 1" + strings.Repeat("+1", 500),
			"NestedCalls":  "SELECT " + calls(500),
			"CaseNest":     "SELECT " + strings.Repeat("CASE WHEN 1 THEN ", 500) + "1" + strings.Repeat(" END", 500),
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
				pdtest.Code(t, err, projectdata.ErrInvalidRequest)
				is.True(!strings.Contains(err.Error(), "nested too deeply")) // refused, not overflowed
			})
		}
	})
}

func TestSQLiteLimitsAreBadRequests(t *testing.T) {
	long := strings.Repeat("a", 1100000)
	f := newQueryFixture(t, &projectdata.Options{QueryMaxSQLBytes: 4 << 20}, 1)
	for name, sql := range map[string]string{
		"LongAlias":          `SELECT 1 AS ` + long,
		"LongQuotedAlias":    `SELECT 1 AS "` + long + `"`,
		"LongCTE":            `WITH ` + long + ` AS (SELECT 1) SELECT * FROM ` + long,
		"LongNamedParameter": `SELECT :` + long,
		"LongLiteralColumn":  `SELECT '` + long + `'`,
		"DeepExpression":     `SELECT ` + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"DeepCTEChain":       cteChain(1000), // would overflow SQLite's own stack
	} {
		t.Run(name, func(t *testing.T) {
			req := projectdata.QueryRequest{SQL: sql}
			if strings.Contains(sql, ":") {
				req.Named = map[string]any{long: 1}
			}
			_, err := f.s.Query(ctx, "acme", req)
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		})
	}
	t.Run("ReadersWorkAfterwards", func(t *testing.T) {
		is := is.New(t)
		for range 8 {
			res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT count(*) AS n FROM orders`})
			is.NoErr(err)
			is.Equal(res.Rows[0]["n"], int64(1))
		}
	})
	t.Run("ThousandWhereConditions", func(t *testing.T) {
		w := make(projectdata.Where, 1000)
		for i := range w {
			w[i] = projectdata.Condition{Column: "qty", Op: "!=", Value: i}
		}
		_, err := f.s.DeleteRecords(ctx, "acme", "orders", projectdata.BulkDelete{Where: w})
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
	})
}

// TestOneFunctionCallStopsAtTheBudget: SQLite looks at its interrupt only
// between instructions, and instr, replace, trim, like and glob compare
// every place of their text with every place of their pattern in one call:
// values the result budget allows kept a core busy for minutes past the
// budget. The functions of SQLite's extensions of that kind are refused.
func TestOneFunctionCallStopsAtTheBudget(t *testing.T) {
	f := newQueryFixture(t, &projectdata.Options{QueryTimeout: 200 * time.Millisecond}, 1)
	const (
		as  = `printf('%.*c', 3000000, 'a')`
		abs = `printf('%.*c', 1000000, 'a') || 'b'`
		// slow is a pattern of MaxLikePattern bytes that fails at its
		// last character at each place of as.
		slow = `'%' || printf('%.*c', 3998, 'a') || 'b'`
	)
	for _, c := range []struct {
		sql  string
		code projectdata.Code
	}{
		{`SELECT instr(` + as + `, ` + abs + `) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT length(replace(` + as + `, ` + abs + `, 'x')) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT length(trim(printf('%.*c', 200000, 'a'), printf('%.*c', 200000, 'b') || 'a')) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT length(ltrim(printf('%.*c', 200000, 'a'), printf('%.*c', 200000, 'b') || 'a')) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT length(rtrim(printf('%.*c', 200000, 'a'), printf('%.*c', 200000, 'b') || 'a')) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT ` + as + ` LIKE ` + slow + ` AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT ` + as + ` NOT LIKE ` + slow + ` ESCAPE '\' AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT like(` + slow + `, ` + as + `, '\') AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT glob(replace(` + slow + `, '%', '*'), ` + as + `) AS n`, projectdata.ErrQueryBudgetExceeded},
		{`SELECT length(decimal_mul(printf('%.*c', 1000000, '9'), printf('%.*c', 1000000, '9'))) AS n`, projectdata.ErrInvalidRequest},
		{`SELECT length(DECIMAL_POW2(20000)) AS n`, projectdata.ErrInvalidRequest},
		{`SELECT regexp('(a?){300}a{300}x', printf('%.*c', 100000, 'a')) AS n`, projectdata.ErrInvalidRequest},
		{`SELECT printf('%.*c', 100000, 'a') REGEXP '(a|b|c|d|e|f|g|h){50}x' AS n`, projectdata.ErrInvalidRequest},
		{`SELECT regexpi('(a?){300}a{300}x', printf('%.*c', 100000, 'a')) AS n`, projectdata.ErrInvalidRequest},
		{`WITH a(j) AS MATERIALIZED (SELECT json_group_object('a' || value, 1) FROM generate_series(1, 30000)),
			b(j) AS MATERIALIZED (SELECT json_group_object('b' || value, 1) FROM generate_series(1, 30000))
			SELECT length(json_patch(a.j, b.j)) AS n FROM a, b`, projectdata.ErrInvalidRequest},
		{`WITH a(j) AS MATERIALIZED (SELECT jsonb_group_object('a' || value, 1) FROM generate_series(1, 30000)),
			b(j) AS MATERIALIZED (SELECT jsonb_group_object('b' || value, 1) FROM generate_series(1, 30000))
			SELECT length(jsonb_patch(a.j, b.j)) AS n FROM a, b`, projectdata.ErrInvalidRequest},
	} {
		t.Run(c.sql[:30], func(t *testing.T) {
			is := is.New(t)
			done := make(chan error, 1)
			go func() {
				_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: c.sql})
				done <- err
			}()
			select {
			case err := <-done:
				pdtest.Code(t, err, c.code)
				if c.code == projectdata.ErrInvalidRequest {
					is.True(strings.Contains(err.Error(), "can outlast any execution budget"))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the query ran on far past its budget")
			}
			res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT instr('abc', 'c') AS i, replace('abc', 'b', 'x') AS r, trim('xax', 'x') AS t,
				'abc' LIKE 'A%' AS l, 'abc' GLOB 'a[a-c]?' AS g`})
			is.NoErr(err)
			is.Equal(res.Rows[0], projectdata.Row{"i": int64(3), "r": "axc", "t": "a", "l": int64(1), "g": int64(1)})
		})
	}
}

// TestCallArgumentsOfOneStatementAreBounded: SQLite runs the calls of one
// row's expressions, and a statement's constant ones, without looking at
// its interrupt. A json_extract of 998 paths over a 4 MB document held a
// core for 18 s past a budget of 1 s, and 2,000 length() calls of a 4 MB
// value for 4 s. A statement that passes functions more arguments than
// QueryMaxCallArgs (a call without any, and each -> or ->>, counting one)
// is refused before it runs; one at the bound runs.
func TestCallArgumentsOfOneStatementAreBounded(t *testing.T) {
	args := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, ", %d", i+1)
		}
		return strings.TrimPrefix(b.String(), ", ")
	}
	t.Run("Default", func(t *testing.T) {
		f := newQueryFixture(t, nil, 1)
		doc := `'[' || replace(printf('%.*c', 2000000, 'x'), 'x', '0,') || '0]'`
		for _, sql := range []string{
			`SELECT json_extract(` + doc + strings.Repeat(`, '$[#]'`, 998) + `) AS n`,
			`SELECT ` + strings.Repeat(`length(a) + `, 2000) + `0 AS n FROM (SELECT printf('%.*c', 4000000, 'x') AS a)`,
			`SELECT ` + strings.Repeat(`a -> '$[#]' + `, 300) + `0 AS n FROM (SELECT ` + doc + ` AS a)`,
		} {
			_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
			if !strings.Contains(err.Error(), "at most 256 run within the query budget") {
				t.Errorf("%.60s: %v", sql, err)
			}
		}
	})
	t.Run("AtTheBound", func(t *testing.T) {
		is := is.New(t)
		f := newQueryFixture(t, &projectdata.Options{QueryMaxCallArgs: 64}, 1)
		res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT max(` + args(63) + `) + abs(-1) AS n FROM orders`})
		is.NoErr(err)
		is.Equal(res.Rows[0]["n"], int64(64))
		_, err = f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT max(` + args(64) + `) + abs(-1) AS n FROM orders`})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		is.True(strings.Contains(err.Error(), "passes 65 arguments to functions"))
		// -> and ->> count one each.
		arrows := `SELECT json('{}') ->> '$.a'` + strings.Repeat(`, json('{}') -> '$.a'`, 31)
		_, err = f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: arrows + ` FROM orders`})
		is.NoErr(err)
		_, err = f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: arrows + `, '{}' -> '$.a' FROM orders`})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	})
}

// TestOneFunctionCallOutOfMemory: a replaced function whose result does
// not fit the query's heap fails as SQLite's own would, and the next query
// runs.
func TestOneFunctionCallOutOfMemory(t *testing.T) {
	is := is.New(t)
	f := newQueryFixture(t, &projectdata.Options{QueryMaxMemory: 8 << 20}, 1)
	_, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT length(trim(printf('%.*c', 4000000, 'a') || 'x', 'x')) AS n`})
	pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	res, err := f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT length(trim(printf('%.*c', 1000, 'a') || 'x', 'x')) AS n`})
	is.NoErr(err)
	is.Equal(res.Rows[0]["n"], int64(1000))
}

// TestSortsStayInTheQueryHeap: the sorts, DISTINCT and temporary tables of
// a query or a record list are held in SQLite's heap, which the memory
// budget caps, not in temporary files on the disk every project shares,
// which nothing capped: a read token's DISTINCT wrote some 240 MB of them in
// the 3 s of its budget, and a list ordered by a column no index holds, at
// a deep offset, 116 MB.
func TestSortsStayInTheQueryHeap(t *testing.T) {
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxMemory: 8 << 20, QueryTimeout: time.Minute}) // only memory may stop them
	createTable(t, s, "big", projectdata.ColumnDef{Name: "v"})
	const rows = 30000 // 15 MB of distinct values
	for i := 0; i < rows; i += 1000 {
		batch := make([]projectdata.Row, 1000)
		for j := range batch {
			batch[j] = projectdata.Row{"v": fmt.Sprintf("%08d%s", (i+j)*7919%rows, strings.Repeat("v", 500))}
		}
		if _, err := s.Insert(ctx, "acme", "big", batch); err != nil {
			t.Fatal(err)
		}
	}
	for name, sql := range map[string]string{
		"Distinct":       `SELECT count(*) FROM (SELECT DISTINCT v FROM big)`,
		"DeepSort":       `SELECT v FROM big ORDER BY v LIMIT 1 OFFSET 29999`,
		"TemporaryTable": `WITH m AS MATERIALIZED (SELECT v FROM big) SELECT count(*) FROM m a JOIN m b USING (v)`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: sql})
			pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
			is.New(t).True(strings.Contains(err.Error(), "memory"))
		})
	}
	t.Run("ListDeepOffset", func(t *testing.T) {
		_, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{Order: "v", Offset: rows - 10, Limit: 10})
		pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
		is.New(t).True(strings.Contains(err.Error(), "memory"))
	})
	t.Run("WithinTheHeap", func(t *testing.T) {
		is := is.New(t)
		res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT substr(v, 1, 8) AS k FROM big ORDER BY v LIMIT 2`})
		is.NoErr(err)
		is.Equal(res.Rows, []projectdata.Row{{"k": "00000000"}, {"k": "00000001"}})
		// The same page by the cursor, and a deep offset in key order.
		l, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{Order: "v", Limit: 10})
		is.NoErr(err)
		l, err = s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{Order: "v", Limit: 10, After: l.NextCursor})
		is.NoErr(err)
		is.Equal(l.Rows[0]["v"].(string)[:8], "00000010")
		l, err = s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{Offset: rows - 10, Limit: 10})
		is.NoErr(err)
		is.Equal(len(l.Rows), 10)
		is.Equal(*l.Total, int64(rows))
	})
}

// TestTrimOfAHugeSetStaysSmall: trim, ltrim and rtrim with a set of 4 MB
// allocated some 475 MB of Go heap (24 bytes for each character of the
// set), which SQLite's heap limit does not see: four such queries at once
// took the process to 1.3 GB. What they allocate now is about the copies
// of their two arguments.
func TestTrimOfAHugeSetStaysSmall(t *testing.T) {
	f := newQueryFixture(t, nil, 1)
	for fn, want := range map[string]int64{"trim": 1, "ltrim": 2, "rtrim": 2} {
		t.Run(fn, func(t *testing.T) {
			is := is.New(t)
			var res projectdata.QueryResult
			var err error
			alloc := allocated(func() {
				res, err = f.s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT length(` + fn + `('xax', printf('%.*c', 4000000, 'x'))) AS n`})
			})
			is.NoErr(err)
			is.Equal(res.Rows[0]["n"], want)
			t.Logf("%s allocated %.1f MB", fn, float64(alloc)/1e6)
			is.True(alloc < 32<<20) // the set's copy is 4 MB
		})
	}
}
