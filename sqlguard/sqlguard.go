package sqlguard

import "fmt"

// RefusedError is the error Check returns for a query it does not admit.
type RefusedError struct {
	Reason string // human-readable reason; quotes at most the offending keyword
	Offset int    // byte offset in the input where the problem was found
}

// Error returns the reason together with the byte offset.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("sqlguard: %s (at byte %d)", e.Reason, e.Offset)
}

func refuse(off int, reason string) *RefusedError {
	return &RefusedError{Reason: reason, Offset: off}
}

// forbidden maps the keywords that may not appear as bare tokens to
// themselves. REPLACE and END have exceptions, handled in checkKeywords.
var forbidden = map[string]string{}

func init() {
	for _, kw := range []string{
		"INSERT", "UPDATE", "DELETE", "REPLACE",
		"CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
		"PRAGMA", "VACUUM", "REINDEX", "ANALYZE",
		"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE",
	} {
		forbidden[kw] = kw
	}
}

// Check returns nil if sql is a single read-only statement: SELECT,
// WITH … SELECT, or EXPLAIN QUERY PLAN followed by either. Otherwise it
// returns a *RefusedError saying why and where.
func Check(sql string) error {
	var buf [64]token
	toks, err := lex(buf[:0], sql)
	return check(sql, toks, err)
}

// Shape is what Admit tells of a statement besides whether it is admitted,
// from the same pass of the lexer. Tokens inside strings, quoted names and
// comments count for nothing.
type Shape struct {
	// Selects counts the SELECT keywords: the statement's SELECT, its
	// subqueries', its common table expressions' and its compound terms'.
	// That bounds how deeply a statement can nest its queries, which
	// SQLite resolves recursively.
	Selects int
	// CallArgs counts the arguments of the statement's function calls,
	// summed over the calls (a call without any counts one), and its ->
	// and ->> operators (one each). A call is a name followed by "(",
	// unless the name is a keyword that precedes a parenthesis in SQL's
	// syntax (IN, EXISTS, AS, OVER, CAST, …); LIKE, GLOB, REGEXP and MATCH
	// are among those keywords, and not counted as functions. SQLite looks
	// at its interrupt only between the steps of a loop, never inside one
	// call nor between the calls of one row's expressions, and a call's
	// work grows with its arguments (each JSON path walks the whole
	// document): this bounds that uninterrupted work.
	CallArgs int
}

// Admit is Check that also returns the statement's Shape.
func Admit(sql string) (Shape, error) {
	var buf [64]token // enough for typical queries without allocating
	toks, err := lex(buf[:0], sql)
	return shapeOf(toks), check(sql, toks, err)
}

// shapeOf measures the statement of toks.
func shapeOf(toks []token) Shape {
	var sh Shape
	// Open parentheses, innermost last: the arguments of a call, or -1
	// for other parentheses. A call's count starts at 0 and becomes 1 with
	// its first token.
	var stack [32]int
	open := stack[:0]
	for i, t := range toks {
		if len(open) > 0 && open[len(open)-1] == 0 && !isPunct(t, ")") {
			open[len(open)-1] = 1
		}
		switch {
		case isKeyword(t, "SELECT"):
			sh.Selects++
		case isPunct(t, "->"), isPunct(t, "->>"):
			sh.CallArgs++
		case isPunct(t, "("):
			if i > 0 && isCallee(toks[i-1]) {
				open = append(open, 0)
			} else {
				open = append(open, -1)
			}
		case isPunct(t, ","):
			if len(open) > 0 && open[len(open)-1] > 0 {
				open[len(open)-1]++
			}
		case isPunct(t, ")"):
			if len(open) == 0 {
				continue // unbalanced: check refuses the statement
			}
			if n := open[len(open)-1]; n >= 0 {
				sh.CallArgs += max(n, 1)
			}
			open = open[:len(open)-1]
		}
	}
	return sh
}

// isCallee reports whether t, followed by "(", names a function: a quoted
// name, or a bare one that is not a keyword preceding a parenthesis.
func isCallee(t token) bool {
	switch t.kind {
	case kQuoted:
		return true
	case kIdent:
		var buf [maxKeywordLen]byte
		return !nonCallees[string(upperKeyword(buf[:0], t.text))]
	}
	return false
}

// nonCallees are the keywords that "(" may follow in SQLite's syntax
// without a function call, among them the operators LIKE, GLOB, REGEXP
// and MATCH, whose function forms are bounded or refused by the Store.
var nonCallees = map[string]bool{}

func init() {
	for _, kw := range []string{
		"ALL", "AND", "AS", "BETWEEN", "BY", "CASE", "CAST", "COLLATE", "DISTINCT", "ELSE", "ESCAPE", "EXCEPT",
		"EXISTS", "FILTER", "FOLLOWING", "FROM", "GLOB", "GROUPS", "HAVING", "IN", "INTERSECT", "IS", "JOIN",
		"LIKE", "LIMIT", "MATCH", "MATERIALIZED", "NOT", "OFFSET", "ON", "OR", "OVER", "PRECEDING", "RANGE",
		"RECURSIVE", "REGEXP", "ROWS", "SELECT", "THEN", "UNION", "USING", "VALUES", "WHEN", "WHERE", "WINDOW",
		"WITH",
	} {
		nonCallees[kw] = true
	}
}

// HasKeyword reports whether the keyword kw (upper case) appears in sql as
// a bare token: not inside a string, a quoted name or a comment. Input the
// lexer refuses (see Check) has every keyword: a caller that refuses sql
// holding kw refuses it too.
func HasKeyword(sql, kw string) bool {
	var buf [64]token
	toks, err := lex(buf[:0], sql)
	if err != nil {
		return true
	}
	for _, t := range toks {
		if isKeyword(t, kw) {
			return true
		}
	}
	return false
}

// check is Check over the tokens lex returned for sql.
func check(sql string, toks []token, err error) error {
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return refuse(len(sql), "query is empty")
	}

	// The statement runs up to the first ";"; only more ";" may follow.
	stmt, end := toks, len(sql)
	for i, t := range toks {
		if !isPunct(t, ";") {
			continue
		}
		stmt, end = toks[:i], t.off
		for _, r := range toks[i+1:] {
			if !isPunct(r, ";") {
				return refuse(r.off, "only one statement is allowed")
			}
		}
		break
	}

	if err := checkParens(stmt); err != nil {
		return err
	}
	body := 0 // index of the statement proper, after EXPLAIN QUERY PLAN
	explain := len(stmt) > 0 && isKeyword(stmt[0], "EXPLAIN")
	if explain && isKeyword(tokenAt(stmt, 1, end), "QUERY") && isKeyword(tokenAt(stmt, 2, end), "PLAN") {
		body = 3
	}
	if err := checkKeywords(stmt, body); err != nil {
		return err
	}
	if explain && body == 0 {
		return refuse(stmt[0].off, "EXPLAIN is allowed only as EXPLAIN QUERY PLAN")
	}
	switch t := tokenAt(stmt, body, end); {
	case isKeyword(t, "SELECT"):
		return nil
	case isKeyword(t, "WITH"):
		return checkWith(stmt, body, end)
	default:
		return refuse(t.off, "only SELECT, WITH … SELECT and EXPLAIN QUERY PLAN statements are allowed")
	}
}

// checkParens refuses stmt unless its parentheses balance.
func checkParens(stmt []token) error {
	depth, outer := 0, 0
	for _, t := range stmt {
		switch {
		case isPunct(t, "("):
			if depth == 0 {
				outer = t.off
			}
			depth++
		case isPunct(t, ")"):
			if depth == 0 {
				return refuse(t.off, "unbalanced parentheses: unexpected )")
			}
			depth--
		}
	}
	if depth > 0 {
		return refuse(outer, "unbalanced parentheses: ( is never closed")
	}
	return nil
}

// checkKeywords refuses stmt if a forbidden keyword appears in it as a bare
// token. body is the index where the statement proper starts, the only
// place END is refused.
func checkKeywords(stmt []token, body int) error {
	for i, t := range stmt {
		if t.kind != kIdent {
			continue
		}
		kw := forbiddenKeyword(t.text)
		switch {
		case kw == "":
			continue
		case kw == "REPLACE" && i+1 < len(stmt) && isPunct(stmt[i+1], "("):
			continue // the replace() function
		case kw == "END" && i != body:
			continue // CASE … END
		}
		return refuse(t.off, fmt.Sprintf("keyword %q is not allowed in a read-only query", kw))
	}
	return nil
}

// checkWith checks that the WITH clause at stmt[i] is a list of common table
// expressions followed by a SELECT.
func checkWith(stmt []token, i, end int) error {
	malformed := func(i int) error {
		return refuse(tokenAt(stmt, i, end).off, "malformed WITH clause")
	}
	i++
	if isKeyword(tokenAt(stmt, i, end), "RECURSIVE") {
		i++
	}
	for {
		switch tokenAt(stmt, i, end).kind {
		case kIdent, kQuoted, kString:
			i++
		default:
			return malformed(i)
		}
		if isPunct(tokenAt(stmt, i, end), "(") {
			i = skipParens(stmt, i)
		}
		if !isKeyword(tokenAt(stmt, i, end), "AS") {
			return malformed(i)
		}
		i++
		if isKeyword(tokenAt(stmt, i, end), "NOT") {
			i++
			if !isKeyword(tokenAt(stmt, i, end), "MATERIALIZED") {
				return malformed(i)
			}
		}
		if isKeyword(tokenAt(stmt, i, end), "MATERIALIZED") {
			i++
		}
		if !isPunct(tokenAt(stmt, i, end), "(") {
			return malformed(i)
		}
		i = skipParens(stmt, i)
		if !isPunct(tokenAt(stmt, i, end), ",") {
			break
		}
		i++
	}
	if t := tokenAt(stmt, i, end); !isKeyword(t, "SELECT") {
		return refuse(t.off, "the statement after WITH must be a SELECT")
	}
	return nil
}

// skipParens returns the index just past the ")" matching the "(" at
// stmt[i]. The parentheses are known to balance.
func skipParens(stmt []token, i int) int {
	depth := 0
	for ; i < len(stmt); i++ {
		switch {
		case isPunct(stmt[i], "("):
			depth++
		case isPunct(stmt[i], ")"):
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// tokenAt returns stmt[i], or an empty token at offset end past the end.
func tokenAt(stmt []token, i, end int) token {
	if i < len(stmt) {
		return stmt[i]
	}
	return token{off: end}
}

func isPunct(t token, p string) bool { return t.kind == kPunct && t.text == p }

// isKeyword reports whether t is the bare keyword kw (upper case), compared
// case-insensitively in ASCII only, as SQLite does.
func isKeyword(t token, kw string) bool { return t.kind == kIdent && equalFoldASCII(t.text, kw) }

// forbiddenKeyword returns the forbidden keyword s spells, ignoring ASCII
// case only as SQLite does, or "".
func forbiddenKeyword(s string) string {
	var buf [maxKeywordLen]byte
	return forbidden[string(upperKeyword(buf[:0], s))]
}

// maxKeywordLen is the length of the longest keyword sqlguard looks for
// (MATERIALIZED).
const maxKeywordLen = 12

// upperKeyword appends s in ASCII upper case to dst (SQLite ignores ASCII
// case only), or nothing when s is longer than any keyword sqlguard looks
// for: no map of keywords then holds the result.
func upperKeyword(dst []byte, s string) []byte {
	if len(s) > maxKeywordLen {
		return dst
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// equalFoldASCII reports whether s equals upper, ignoring ASCII case only.
func equalFoldASCII(s, upper string) bool {
	if len(s) != len(upper) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}
