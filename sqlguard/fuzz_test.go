package sqlguard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/projectdata/projectdata/sqlguard"
)

// FuzzCheck checks that Check never panics, refuses only with a short
// *RefusedError, and admits only input that an independent, simpler scan
// (below) also finds to be a single read-only statement.
func FuzzCheck(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.sql)
	}
	f.Add(typicalQuery)
	f.Fuzz(func(t *testing.T, sql string) {
		err := sqlguard.Check(sql)
		shape, admitErr := sqlguard.Admit(sql)
		if (admitErr == nil) != (err == nil) {
			t.Fatalf("Admit(%q) = %v, Check = %v", sql, admitErr, err)
		}
		if shape.Selects < 0 || shape.CallArgs < 0 || shape.Selects+shape.CallArgs > len(sql) {
			t.Fatalf("Admit(%q) = %+v: more than the input's bytes", sql, shape)
		}
		sk, wellFormed := skeleton(sql)
		if err != nil {
			var re *sqlguard.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Check(%q) returned %T, want *RefusedError", sql, err)
			}
			if re.Offset < 0 || re.Offset > len(sql) {
				t.Fatalf("Check(%q): offset %d outside the input", sql, re.Offset)
			}
			if re.Reason == "" || len(re.Reason) > 100 {
				t.Fatalf("Check(%q): bad reason %q", sql, re.Reason)
			}
			return
		}
		if !wellFormed {
			t.Fatalf("Check(%q) admitted an unclosed literal, comment or parameter", sql)
		}
		if msg := readOnly(sk); msg != "" {
			t.Fatalf("Check(%q) admitted it, but %s (skeleton %q)", sql, msg, sk)
		}
	})
}

// skeleton returns sql with each comment and byte order mark replaced by a
// space and each string, blob, quoted identifier or parameter by " 0 ",
// leaving only what SQLite parses as keywords, names, numbers and operators.
// ok is false if a literal, quoted identifier, comment or Tcl-style
// parameter is not closed.
func skeleton(sql string) (sk string, ok bool) {
	var b strings.Builder
	afterBOM := -1 // where the last byte order mark ended: a token starts there
	for i := 0; i < len(sql); {
		rest := sql[i:]
		tokenStart := i == 0 || !wordByte(sql[i-1]) || i == afterBOM
		n := -1 // length of the literal, comment or parameter at sql[i]
		switch {
		case strings.HasPrefix(rest, "--"):
			n = strings.IndexByte(rest, '\n')
			if n < 0 {
				n = len(rest)
			}
			b.WriteByte(' ')
			i += n
			continue
		case strings.HasPrefix(rest, "/*"):
			if n = strings.Index(rest[2:], "*/"); n < 0 {
				return "", false
			}
			b.WriteByte(' ')
			i += n + 4
			continue
		case tokenStart && strings.HasPrefix(rest, "\xEF\xBB\xBF"):
			b.WriteByte(' ')
			i += 3
			afterBOM = i
			continue
		case tokenStart && (strings.HasPrefix(rest, "x'") || strings.HasPrefix(rest, "X'")):
			if n = strings.IndexByte(rest[2:], '\''); n >= 0 {
				n += 3
			}
		case rest[0] == '\'' || rest[0] == '"' || rest[0] == '`':
			n = closingQuote(rest)
		case rest[0] == '[':
			if n = strings.IndexByte(rest, ']'); n >= 0 {
				n++
			}
		case strings.IndexByte(":@#", rest[0]) >= 0 || tokenStart && rest[0] == '$':
			n = paramLen(rest)
		default:
			b.WriteByte(rest[0])
			i++
			continue
		}
		if n < 0 {
			return "", false
		}
		b.WriteString(" 0 ")
		i += n
	}
	return b.String(), true
}

// paramLen returns the length of the parameter at the start of s: a prefix
// byte, then name characters and "::", then optionally "(" up to ")" with no
// white space in between; or -1 if the "(" is not closed.
func paramLen(s string) int {
	i := 1
	for i < len(s) {
		switch {
		case wordByte(s[i]):
			i++
		case strings.HasPrefix(s[i:], "::"):
			i += 2
		case s[i] == '(' && i > 1:
			end := strings.IndexAny(s[i:], ") \t\n\v\f\r")
			if end < 0 || s[i+end] != ')' {
				return -1
			}
			return i + end + 1
		default:
			return i
		}
	}
	return i
}

// closingQuote returns the length of the quoted text at the start of s, in
// which a doubled quote stands for itself, or -1.
func closingQuote(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

func wordByte(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// word is a keyword-like run of characters in a skeleton.
type word struct {
	start int    // offset in the skeleton
	upper string // ASCII upper case, as SQLite folds keywords
	after string // the skeleton after the word, leading spaces trimmed
}

// words returns the keyword-like words of a skeleton: runs of identifier
// characters that do not start with a digit.
func words(sk string) []word {
	var ws []word
	for i := 0; i < len(sk); {
		if !wordByte(sk[i]) {
			i++
			continue
		}
		j := i
		for j < len(sk) && wordByte(sk[j]) {
			j++
		}
		if sk[i] < '0' || sk[i] > '9' {
			ws = append(ws, word{start: i, upper: asciiUpper(sk[i:j]), after: strings.TrimLeft(sk[j:], " \t\n\f\r")})
		}
		i = j
	}
	return ws
}

func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}, s)
}

var forbiddenWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true,
	"CREATE": true, "DROP": true, "ALTER": true, "ATTACH": true, "DETACH": true,
	"PRAGMA": true, "VACUUM": true, "REINDEX": true, "ANALYZE": true,
	"BEGIN": true, "COMMIT": true, "END": true, "ROLLBACK": true, "SAVEPOINT": true, "RELEASE": true,
}

// readOnly returns "" if the skeleton sk is a single statement starting with
// SELECT, WITH or EXPLAIN QUERY PLAN and containing no forbidden keyword,
// and otherwise what is wrong with it.
func readOnly(sk string) string {
	sk = strings.Trim(sk, " \t\n\f\r")
	if semi := strings.IndexByte(sk, ';'); semi >= 0 {
		if strings.Trim(sk[semi:], "; \t\n\f\r") != "" {
			return "there is a second statement"
		}
		sk = sk[:semi]
	}
	ws := words(sk)
	if len(ws) == 0 || ws[0].start != 0 {
		return "it does not start with a keyword"
	}
	body := 0
	switch ws[0].upper {
	case "SELECT", "WITH":
	case "EXPLAIN":
		if len(ws) < 4 || ws[1].upper != "QUERY" || ws[2].upper != "PLAN" {
			return "EXPLAIN is not EXPLAIN QUERY PLAN"
		}
		body = 3
		if ws[3].upper != "SELECT" && ws[3].upper != "WITH" {
			return "EXPLAIN QUERY PLAN is followed by " + ws[3].upper
		}
	default:
		return "the first keyword is " + ws[0].upper
	}
	for i, w := range ws {
		if !forbiddenWords[w.upper] ||
			w.upper == "REPLACE" && strings.HasPrefix(w.after, "(") ||
			w.upper == "END" && i != body {
			continue
		}
		return "it contains the keyword " + w.upper
	}
	return ""
}
