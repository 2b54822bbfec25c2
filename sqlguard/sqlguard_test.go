package sqlguard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/sqlguard"
)

// Reasons, or the distinctive part of them, that the cases below expect.
const (
	kwReason       = "is not allowed in a read-only query"
	oneStmt        = "only one statement is allowed"
	explainOnlyQP  = "EXPLAIN is allowed only as EXPLAIN QUERY PLAN"
	onlySelect     = "only SELECT, WITH … SELECT and EXPLAIN QUERY PLAN"
	withSelect     = "the statement after WITH must be a SELECT"
	badWith        = "malformed WITH clause"
	unbalanced     = "unbalanced parentheses"
	emptyQuery     = "query is empty"
	unterminated   = "unterminated"
	badNumber      = "malformed number"
	badBlob        = "malformed blob literal"
	unexpectedChar = "unexpected character"
)

// cases is shared with FuzzCheck, which uses every row as a seed.
var cases = []struct {
	name           string
	sql            string
	ok             bool
	reasonContains string
}{
	// Admitted: the three statement forms.
	{"plain select", "SELECT 1", true, ""},
	{"keywords in any case", "sElEcT 1 fRoM t", true, ""},
	{"select with join", "SELECT a.x, b.y FROM a JOIN b ON b.id = a.id WHERE a.z > 3 ORDER BY 1 LIMIT 10", true, ""},
	{"explain query plan select", "EXPLAIN QUERY PLAN SELECT 1", true, ""},
	{"explain query plan with", "explain query plan WITH a AS (SELECT 1) SELECT * FROM a", true, ""},
	{"recursive cte with columns", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c", true, ""},
	{"two ctes", "WITH a AS (SELECT 1), b AS (SELECT 2) SELECT * FROM a, b", true, ""},
	{"materialized cte", "WITH a AS MATERIALIZED (SELECT 1) SELECT * FROM a", true, ""},
	{"not materialized cte", "WITH a AS NOT MATERIALIZED (SELECT 1) SELECT * FROM a", true, ""},
	{"quoted cte name", `WITH "my cte" AS (SELECT 1) SELECT * FROM "my cte"`, true, ""},
	{"cte body with nested parens", "WITH a AS (SELECT (1 + (2))) SELECT * FROM a", true, ""},
	{"values inside compound select", "WITH a AS (VALUES (1)) SELECT * FROM a UNION VALUES (2)", true, ""},

	// Admitted: keywords hidden in literals, quoted identifiers, comments.
	{"keyword in string literal", "SELECT 'drop table x'", true, ""},
	{"keyword as double-quoted identifier", `SELECT "delete" FROM t`, true, ""},
	{"keyword as bracketed identifier", "SELECT [update] FROM t", true, ""},
	{"keyword as backquoted identifier", "SELECT `insert` FROM t", true, ""},
	{"doubled quotes in quoted identifiers", "SELECT \"a\"\"drop\", `b``;delete` FROM t", true, ""},
	{"identifier containing a keyword", "SELECT update_count, dropped, created_at FROM t", true, ""},
	{"identifier continuing past ascii", "SELECT deleteé, ünïcode FROM t", true, ""},
	{"identifier with digits then a keyword", "SELECT v2delete FROM t2", true, ""},
	{"identifier with dollar", "SELECT a$delete FROM t", true, ""},
	{"non-ascii lookalike of a keyword", "SELECT 1 AS ſavepoint", true, ""},
	{"blob literal", "SELECT x'44524f50', X''", true, ""},
	{"line comment hiding a statement", "SELECT 1 -- ; DROP TABLE t", true, ""},
	{"block comment hiding a statement", "SELECT /* ; delete */ 1", true, ""},
	{"comments before the statement", "/* hello */ -- there\n  SELECT 1", true, ""},
	{"doubled quote in string", "SELECT 'it''s'", true, ""},
	{"doubled quote hiding a semicolon", "SELECT 'a'';DROP TABLE t;'", true, ""},
	{"semicolon in string", "SELECT * FROM t WHERE x = ';'", true, ""},

	// Admitted: exceptions for REPLACE and END, trailing semicolons.
	{"replace function", "SELECT replace(name,'a','b') FROM t", true, ""},
	{"replace function with comment before paren", "SELECT REPLACE /* x */ (name, 'a', 'b') FROM t", true, ""},
	{"end closing case", "SELECT CASE WHEN a THEN 1 END FROM t", true, ""},
	{"trailing semicolon and comment", "select 1;  -- done", true, ""},
	{"trailing block comment, semicolon, line comment", "select 1 /* trailing */ ;  -- bye", true, ""},
	{"repeated trailing semicolons", "SELECT 1;;", true, ""},
	{"semicolons separated by comments", "SELECT 1; /* a */ ; -- b\n ;", true, ""},

	// Admitted: parameters, numbers, operators.
	{"parameters", "SELECT ?1, :name, @x, $y, ?, #z", true, ""},
	{"keyword as parameter name", "SELECT :delete, @drop, $insert", true, ""},
	{"tcl-style parameters", "SELECT $a::b, $c(delete), :d(x;y), @e::f('), 1", true, ""},
	{"byte order mark", "\xEF\xBB\xBFSELECT 1", true, ""},
	{"numbers", "SELECT 1e10, 1E+5, 2.5e-3, 0x1F, .5, 3., 1_000", true, ""},
	{"operators", "SELECT a || b, a <> b, a != b, a == b, a <= b, a >= b, a << 2, a >> 1, ~a & b | c, -a % 2, j -> 'x', j ->> '$.y' FROM t", true, ""},

	// Refused: more than one statement.
	{"two selects", "SELECT 1; SELECT 2", false, oneStmt},
	{"select then drop", "SELECT 1 FROM t; DROP TABLE t", false, oneStmt},
	{"statement after a comment after the semicolon", "SELECT 1; -- x\nDELETE FROM t", false, oneStmt},
	{"leading semicolon", "; SELECT 1", false, oneStmt},
	{"semicolon inside parentheses", "SELECT (1; SELECT 2)", false, oneStmt},

	{"statement hidden from a naive lexer in a tcl-style parameter", "SELECT :a(') ; DELETE FROM t; --')", false, oneStmt},
	{"statement after a nul byte", "SELECT 1 -- \x00\n; DROP TABLE t", false, unexpectedChar},

	// Refused: write, schema and transaction keywords.
	{"insert", "INSERT INTO t VALUES(1)", false, `keyword "INSERT"`},
	{"replace into", "REPLACE INTO t VALUES(1)", false, `keyword "REPLACE"`},
	{"insert or replace", "INSERT OR REPLACE INTO t VALUES(1)", false, `keyword "INSERT"`},
	{"update", "UPDATE t SET a=1", false, `keyword "UPDATE"`},
	{"delete", "DELETE FROM t", false, `keyword "DELETE"`},
	{"delete in lower case", "delete from t", false, `keyword "DELETE"`},
	{"create table", "CREATE TABLE x(a)", false, `keyword "CREATE"`},
	{"drop table", "DROP TABLE t", false, `keyword "DROP"`},
	{"alter table", "ALTER TABLE t ADD COLUMN b", false, `keyword "ALTER"`},
	{"attach", "ATTACH 'x' AS y", false, `keyword "ATTACH"`},
	{"detach", "DETACH y", false, `keyword "DETACH"`},
	{"pragma", "PRAGMA table_info(t)", false, `keyword "PRAGMA"`},
	{"vacuum", "VACUUM", false, `keyword "VACUUM"`},
	{"reindex", "REINDEX", false, `keyword "REINDEX"`},
	{"analyze", "ANALYZE", false, `keyword "ANALYZE"`},
	{"begin", "BEGIN", false, `keyword "BEGIN"`},
	{"commit", "COMMIT", false, `keyword "COMMIT"`},
	{"end", "END", false, `keyword "END"`},
	{"end transaction", "end transaction", false, `keyword "END"`},
	{"rollback", "ROLLBACK", false, `keyword "ROLLBACK"`},
	{"savepoint", "SAVEPOINT a", false, `keyword "SAVEPOINT"`},
	{"release", "RELEASE a", false, `keyword "RELEASE"`},
	{"keyword as bare column name", "SELECT t.update FROM t", false, `keyword "UPDATE"`},
	{"keyword as bare alias", "SELECT 1 AS begin", false, `keyword "BEGIN"`},
	{"replace not followed by paren", "SELECT replace FROM t", false, `keyword "REPLACE"`},
	{"keyword right before a string", "SELECT 1 FROM t WHERE drop'x'", false, `keyword "DROP"`},
	{"end starting explained statement", "EXPLAIN QUERY PLAN END", false, `keyword "END"`},
	{"keyword after a byte order mark", "SELECT a \xEF\xBB\xBFDELETE FROM t", false, `keyword "DELETE"`},
	{"keyword in a subquery", "SELECT * FROM (DELETE FROM t RETURNING *)", false, `keyword "DELETE"`},
	{"with then insert", "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", false, `keyword "INSERT"`},
	{"with then delete", "WITH x AS (SELECT 1) DELETE FROM t", false, `keyword "DELETE"`},

	// Refused: EXPLAIN other than EXPLAIN QUERY PLAN.
	{"plain explain", "EXPLAIN SELECT 1", false, explainOnlyQP},
	{"explain query without plan", "EXPLAIN QUERY SELECT 1", false, explainOnlyQP},
	{"explain alone", "EXPLAIN", false, explainOnlyQP},
	{"explain query plan delete", "EXPLAIN QUERY PLAN DELETE FROM t", false, `keyword "DELETE"`},
	{"explain query plan values", "EXPLAIN QUERY PLAN VALUES (1)", false, onlySelect},
	{"explain query plan nothing", "EXPLAIN QUERY PLAN", false, onlySelect},
	{"explain twice", "EXPLAIN QUERY PLAN EXPLAIN QUERY PLAN SELECT 1", false, onlySelect},

	// Refused: WITH not leading to a SELECT.
	{"with then values", "WITH a AS (SELECT 1) VALUES (1)", false, withSelect},
	{"with and no main statement", "WITH a AS (SELECT 1)", false, withSelect},
	{"with then trailing semicolon only", "WITH a AS (SELECT 1);", false, withSelect},
	{"with missing as", "WITH a (SELECT 1) SELECT 1", false, badWith},
	{"with missing cte", "WITH SELECT 1", false, badWith},
	{"with not without materialized", "WITH a AS NOT (SELECT 1) SELECT 1", false, badWith},
	{"with missing cte body", "WITH a AS SELECT 1", false, badWith},

	// Refused: anything else at the start.
	{"values", "VALUES (1)", false, onlySelect},
	{"empty", "", false, emptyQuery},
	{"blank", " \n\t ", false, emptyQuery},
	{"line comment only", "-- only a comment", false, emptyQuery},
	{"block comment only", "/* nothing */", false, emptyQuery},
	{"semicolon only", ";", false, onlySelect},
	{"garbage", "hello world", false, onlySelect},
	{"parenthesized select", "(SELECT 1)", false, onlySelect},
	{"string first", "'SELECT'", false, onlySelect},
	{"quoted select keyword", `"SELECT" 1`, false, onlySelect},

	// Refused: malformed tokens and parentheses.
	{"unterminated string", "SELECT 'unterminated", false, "unterminated string literal"},
	{"unterminated string after doubled quote", "SELECT 'it''", false, "unterminated string literal"},
	{"unterminated double-quoted identifier", `SELECT "abc`, false, "unterminated quoted identifier"},
	{"unterminated bracketed identifier", "SELECT [abc", false, "unterminated quoted identifier"},
	{"unterminated backquoted identifier", "SELECT `abc", false, "unterminated quoted identifier"},
	{"unterminated block comment", "SELECT /* open", false, "unterminated block comment"},
	{"unterminated blob", "SELECT x'00", false, "unterminated blob literal"},
	{"odd-length blob", "SELECT x'4'", false, badBlob},
	{"non-hex blob", "SELECT x'zz'", false, badBlob},
	{"unclosed paren", "SELECT (1", false, unbalanced},
	{"extra closing paren", "SELECT 1)", false, unbalanced},
	{"unclosed paren before semicolon", "SELECT (1;", false, unbalanced},
	{"number running into a keyword", "SELECT 1delete", false, badNumber},
	{"hex prefix without digits", "SELECT 0x", false, badNumber},
	{"exponent without digits", "SELECT 1e", false, badNumber},
	{"bare colon", "SELECT :", false, "malformed parameter"},
	{"colons without a name", "SELECT $::", false, "malformed parameter"},
	{"tcl-style parameter not closed", "SELECT $a(x y)", false, "malformed parameter"},
	{"tcl-style parameter at end of input", "SELECT $a(x", false, "malformed parameter"},
	{"lone bang", "SELECT 1 ! 2", false, unexpectedChar},
	{"nul byte", "SELECT 1\x00; DROP TABLE t", false, unexpectedChar},
	{"vertical tab", "SELECT\v1", false, unexpectedChar},
}

func TestCheck(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			err := sqlguard.Check(tc.sql)
			if tc.ok {
				is.NoErr(err) // query should be admitted
				return
			}
			var re *sqlguard.RefusedError
			is.True(errors.As(err, &re)) // query should be refused with a *RefusedError
			if !strings.Contains(re.Reason, tc.reasonContains) {
				is.Equal(re.Reason, tc.reasonContains) // reason should contain the expected text
			}
			is.True(re.Offset >= 0 && re.Offset <= len(tc.sql)) // offset within input
			is.True(strings.Contains(err.Error(), re.Reason))   // Error() includes the reason
		})
	}
}

func TestRefusedOffset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sql    string
		offset int
	}{
		{"forbidden keyword", "SELECT 1 AS begin", 12},
		{"second statement", "SELECT 1; /* c */ DROP TABLE t", 18},
		{"plain explain", "  EXPLAIN SELECT 1", 2},
		{"unterminated string", "SELECT 'abc", 7},
		{"unterminated block comment", "SELECT 1 /* x", 9},
		{"unclosed outermost paren", "SELECT (1, (2)", 7},
		{"extra closing paren", "SELECT (1))", 10},
		{"main statement after with", "WITH a AS (SELECT 1) VALUES (1)", 21},
		{"with ending at semicolon", "WITH a AS (SELECT 1);", 20},
		{"empty", "  -- c", 6},
		{"values", "VALUES (1)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var re *sqlguard.RefusedError
			is.True(errors.As(sqlguard.Check(tc.sql), &re)) // refused
			is.Equal(re.Offset, tc.offset)
		})
	}
}

func TestReasonDoesNotEchoInput(t *testing.T) {
	is := is.New(t)
	long := "SELECT 1; " + strings.Repeat("x", 10000)
	err := sqlguard.Check(long)
	is.True(err != nil)             // refused
	is.True(len(err.Error()) < 200) // short error message
}

// typicalQuery is a 200-byte SELECT with a join.
const typicalQuery = `SELECT o.id, o.created_at, c.name, SUM(i.qty * i.price) AS total
FROM orders o JOIN customers c ON c.id = o.customer_id
JOIN items i ON i.order_id = o.id
WHERE o.status = 'shipped' GROUP BY o.id LIMIT 50;`

func BenchmarkCheck(b *testing.B) {
	b.SetBytes(int64(len(typicalQuery)))
	b.ReportAllocs()
	for b.Loop() {
		if err := sqlguard.Check(typicalQuery); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAdmitCountsSelects(t *testing.T) {
	for sql, want := range map[string]int{
		"SELECT 1":                    1,
		"select 1 UNION ALL SeLeCt 2": 2,
		"WITH a AS (SELECT 1) SELECT * FROM (SELECT * FROM a)":          3,
		"SELECT 'SELECT', \"select\", [SELECT] -- SELECT\n/* SELECT */": 1,
		"SELECT selected, xselect FROM t":                               1,
		"":                                                              0,
	} {
		if got, _ := sqlguard.Admit(sql); got.Selects != want {
			t.Errorf("Admit(%q).Selects = %d, want %d", sql, got.Selects, want)
		}
	}
}

func TestAdmitCountsCallArgs(t *testing.T) {
	for sql, want := range map[string]int{
		"SELECT 1, (2), a IN (1, 2, 3) FROM t":                            0,
		"SELECT random(), count(*), count(DISTINCT a) FROM t":             3,
		"SELECT f(a, b), g(f(1, 2), 3)":                                   6,
		"SELECT json_extract(a, '$.x', '$.y', '$.z') FROM t":              4,
		`SELECT "JSON_EXTRACT"(a, x), [f](a), ` + "`f`(a, b)":             5,
		"SELECT a -> '$.x', a ->> '$.y', a - >1 FROM t":                   2,
		"SELECT 'f(a, b)', \"f\" -- g(1, 2)\n/* h(1) */":                  0,
		"SELECT CAST(a AS INT), EXISTS (SELECT 1), NOT (a) FROM t":        0,
		"SELECT a LIKE (b), a glob (b), a NOT LIKE('x') ESCAPE ('!')":     0,
		"SELECT f(a) FILTER (WHERE b) OVER (PARTITION BY c ORDER BY (d))": 1,
		"WITH c(x, y) AS (VALUES (1, 2)) SELECT max(x, y, 3) FROM c":      5, // the CTE's columns count too
		"SELECT f(g(h(i())))":                                             4,
		"SELECT f(a,":                                                     0, // refused: unbalanced
		"SELECT f(a)) + g(b, c)":                                          3, // refused: unbalanced
	} {
		if got, _ := sqlguard.Admit(sql); got.CallArgs != want {
			t.Errorf("Admit(%q).CallArgs = %d, want %d", sql, got.CallArgs, want)
		}
	}
}

func TestHasKeyword(t *testing.T) {
	for sql, want := range map[string]bool{
		`CREATE TABLE t (a TEXT CHECK (a <> ''))`:                                 true,
		`create table t (a text check(a <> ''))`:                                  true,
		`CREATE TABLE "check" ([check] TEXT DEFAULT 'CHECK', b /* CHECK */ TEXT)`: false,
		`CREATE TABLE t (checked TEXT, xcheck TEXT) -- CHECK`:                     false,
		`CREATE TABLE t (a TEXT DEFAULT 'unterminated)`:                           true, // refused by the lexer
	} {
		if got := sqlguard.HasKeyword(sql, "CHECK"); got != want {
			t.Errorf("HasKeyword(%q, CHECK) = %v, want %v", sql, got, want)
		}
	}
}
