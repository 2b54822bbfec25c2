package projectdata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// openBuiltinAndPorted opens one database twice: with SQLite's own
// functions, and as a reader, with the bounded ports.
func openBuiltinAndPorted(t *testing.T) (builtin *sqlite3.Conn, ported *conn) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "f.db")
	builtin, err := sqlite3.Open(path)
	is.NoErr(err)
	t.Cleanup(func() { builtin.Close() })
	is.NoErr(builtin.Exec(`CREATE TABLE x (a)`))
	ported, err = openConn(path, true, time.Second)
	is.NoErr(err)
	t.Cleanup(func() { ported.close() })
	return builtin, ported
}

// TestBoundedFunctionsAnswerAsSQLite: the ports of instr, replace and
// trim on readers give SQLite's own answers (type and bytes) for text,
// blobs, numbers, NULL, invalid UTF-8 and NUL bytes.
func TestBoundedFunctionsAnswerAsSQLite(t *testing.T) {
	is := is.New(t)
	builtin, ported := openBuiltinAndPorted(t)

	const sql = `SELECT instr(?1, ?2), replace(?1, ?2, ?3), trim(?1, ?2), ltrim(?1, ?2), rtrim(?1, ?2), instr(?2, ?1), replace(?1, ?3, ?2)`
	parts := []string{"", "a", "b", "ab", "é", "\xc3", "\xa9", "\x00", "€", "\xf0\x9f\x98\x80", "\xff", "  ", "1", ".5",
		"\xc3" + strings.Repeat("\x80", 256)} // a "character" longer than 255 bytes
	value := func(r *rand.Rand) any {
		switch r.IntN(8) {
		case 0:
			return nil
		case 1:
			return r.Int64N(200) - 100
		case 2:
			return float64(r.IntN(100)) / 4
		}
		var b []byte
		for range r.IntN(12) {
			b = append(b, parts[r.IntN(len(parts))]...)
		}
		if r.IntN(3) == 0 {
			return b
		}
		return string(b)
	}
	run := func(db *sqlite3.Conn, args []any) string {
		st, _, err := db.Prepare(sql)
		is.NoErr(err)
		defer st.Close()
		is.NoErr(bindAll(st, args))
		var out bytes.Buffer
		if st.Step() {
			for i := range st.ColumnCount() {
				fmt.Fprintf(&out, "%v:%q ", st.ColumnType(i), st.ColumnRawBlob(i))
			}
		}
		if err := st.Err(); err != nil {
			fmt.Fprintf(&out, "error %v", err)
		}
		return out.String()
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		args := []any{value(r), value(r), value(r)}
		want, got := run(builtin, args), run(ported.db, args)
		if want != got {
			t.Fatalf("%q:\nSQLite %s\nported %s", args, want, got)
		}
	}
}

// TestLikeAnswersAsSQLite: the ports of like (with and without ESCAPE) and
// glob on readers give SQLite's own answers and errors, as functions and
// as operators, for patterns with wildcards, escapes and classes over
// text in both cases, invalid UTF-8, NUL bytes, numbers, blobs and NULL,
// and patterns over SQLite's length limit.
func TestLikeAnswersAsSQLite(t *testing.T) {
	is := is.New(t)
	builtin, ported := openBuiltinAndPorted(t)
	const limit = 24 // some patterns are longer
	builtin.Limit(sqlite3.LIMIT_LIKE_PATTERN_LENGTH, limit)
	ported.db.Limit(sqlite3.LIMIT_LIKE_PATTERN_LENGTH, limit)

	exprs := []string{`like(?1, ?2)`, `like(?1, ?2, ?3)`, `glob(?1, ?2)`, `?2 LIKE ?1`, `?2 NOT LIKE ?1 ESCAPE ?3`, `?2 GLOB ?1`}
	prepare := func(db *sqlite3.Conn) []*sqlite3.Stmt {
		var sts []*sqlite3.Stmt
		for _, e := range exprs {
			st, _, err := db.Prepare(`SELECT ` + e)
			is.NoErr(err)
			t.Cleanup(func() { st.Close() })
			sts = append(sts, st)
		}
		return sts
	}
	builtinStmts, portedStmts := prepare(builtin), prepare(ported.db)
	run := func(st *sqlite3.Stmt, args []any) string {
		st.Reset() // returns the last run's error, already seen
		is.NoErr(bindAll(st, args[:st.BindCount()]))
		var out string
		if st.Step() {
			out = fmt.Sprintf("%v:%q", st.ColumnType(0), st.ColumnRawBlob(0))
		}
		if err := st.Err(); err != nil {
			out += "error " + err.Error()
		}
		return out
	}

	parts := []string{"a", "A", "b", "B", "z", "Z", "0", "%", "_", "*", "?", "[", "]", "^", "-", "\\", "é", "É", "€",
		"\xf0\x9f\x98\x80", "\xc3", "\xa9", "\x80", "\xff", "\xfe", "\xf8\x88\x80\x80\x80", "\xed\xa0\x80",
		"\xef\xbf\xbe", "\xef\xbf\xbf", "\xc0\x80", "\xc1\x81", "\xc1\xbf", "\xe1\x80\x80", "\xfd\x80\x80", "\x00",
		"\xe0" + strings.Repeat("\x80", 7)}
	text := func(r *rand.Rand) []string {
		var s []string
		for range r.IntN(9) {
			s = append(s, parts[r.IntN(len(parts))])
		}
		return s
	}
	// pattern is a random pattern, or one made from the text s: some of
	// its characters kept, some in the other case, some replaced by
	// wildcards, classes or escapes.
	pattern := func(r *rand.Rand, s []string) string {
		if r.IntN(3) == 0 {
			s = text(r)
		}
		var p strings.Builder
		for _, part := range s {
			switch r.IntN(16) {
			case 0:
				p.WriteString([]string{"%", "*", "%%", "**"}[r.IntN(4)])
			case 1:
				p.WriteString([]string{"_", "?"}[r.IntN(2)])
			case 2:
				p.WriteString([]string{"[", "*[", "%["}[r.IntN(3)] + part + "]")
			case 3:
				p.WriteString([]string{"[^", "[a-", "[-", "[]", "[^]", "[" + part + "-"}[r.IntN(6)] + parts[r.IntN(len(parts))] + "]")
			case 4:
				p.WriteString([]string{"[", "[^"}[r.IntN(2)] + part + "-]")
			case 5:
				p.WriteString([]string{"%", "*"}[r.IntN(2)] + swapCase(part))
			case 6:
				p.WriteString("\\" + part)
			case 7:
				p.WriteString(strings.ToUpper(part))
			case 8:
				p.WriteString(strings.ToLower(part) + []string{"%", "*", "_", "?"}[r.IntN(4)])
			default:
				p.WriteString(part)
			}
		}
		if r.IntN(4) == 0 {
			p.WriteString([]string{"%", "*", "[", "\\"}[r.IntN(4)])
		}
		return p.String()
	}
	other := func(r *rand.Rand, s string) any {
		switch r.IntN(14) {
		case 0:
			return nil
		case 1:
			return r.Int64N(200) - 100
		case 2:
			return float64(r.IntN(100)) / 4
		case 3:
			return []byte(s)
		}
		return s
	}
	escapes := []any{nil, "\\", "%", "_", "*", "?", "[", "a", "A", "é", "\x80", "\xc3", "\xc3\xa9\x80", "\xef\xbf\xbe",
		"", "ab", "\x80\x80", "\x00", "a\x00b", 1, 12, []byte("\\")}

	outcomes := make([]map[string]int, len(exprs))
	for i := range outcomes {
		outcomes[i] = map[string]int{}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 40000 {
		s := text(r)
		args := []any{other(r, pattern(r, s)), other(r, strings.Join(s, "")), escapes[r.IntN(len(escapes))]}
		for i := range exprs {
			want, got := run(builtinStmts[i], args), run(portedStmts[i], args)
			if want != got {
				t.Fatalf("%s with %q:\nSQLite %s\nported %s", exprs[i], args, want, got)
			}
			outcomes[i][want]++
		}
	}
	for i, e := range exprs { // every expression both matched and did not
		if outcomes[i][`INTEGER:"1"`] < 200 || outcomes[i][`INTEGER:"0"`] < 200 {
			t.Errorf("%s: %v", e, outcomes[i])
		}
	}
	t.Logf("%v", outcomes)
}

// swapCase swaps the case of the ASCII letters of s.
func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}
