// Package sqlguard is the lexical read-only gate for user-supplied SQL.
//
// Check admits exactly one statement of one of these forms:
//
//	SELECT …
//	WITH [RECURSIVE] name [(cols)] AS [[NOT] MATERIALIZED] (…) [, …] SELECT …
//	EXPLAIN QUERY PLAN <either of the above>
//
// and refuses everything else with a *RefusedError. The input is tokenized
// with SQLite's lexical rules (string literals, blob literals, quoted
// identifiers in "…", […] and `…`, comments, numbers, parameters including
// the Tcl forms $a::b and $a(…), a leading byte order mark), so
// keywords inside literals, quoted identifiers and comments are ignored,
// while any write, schema or transaction keyword (INSERT, UPDATE, DELETE,
// REPLACE, CREATE, DROP, ALTER, ATTACH, DETACH, PRAGMA, VACUUM, REINDEX,
// ANALYZE, BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE) appearing as a
// bare token anywhere in the statement is refused. Two exceptions keep
// ordinary queries working: REPLACE followed by "(" is the replace()
// function, and END is only refused where a statement starts, since
// CASE … END is an expression.
//
// The rules are deliberately conservative: a bare keyword used as an
// identifier (SELECT t.update FROM t) is refused and has to be quoted
// ("update"), and input SQLite itself would reject as malformed (an
// unterminated literal or comment, 1abc, x'0', a stray "!", a NUL byte
// anywhere) is refused too.
//
// After the statement, one or more ";" may follow, with only whitespace and
// comments around them, so "SELECT 1;", "SELECT 1;;" and
// "SELECT 1; -- done" are all admitted; anything else after the first ";"
// is a second statement and is refused.
//
// Admit also measures what it admits (Shape): its SELECTs, and the
// arguments of its function calls, so that a caller can bound the work
// SQLite does without looking at its interrupt.
//
// sqlguard is only the first line of defence: it knows nothing about what
// functions do, so side effects reachable through a SELECT (for example
// load_extension) must be stopped by SQLite's authorizer and a read-only
// connection.
package sqlguard
