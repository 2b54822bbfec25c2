package sqlguard

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestLex(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  string
		want string // "kind:text" per token, space-separated
	}{
		{"identifiers and keywords", "SELECT a_1, b$c, ünï FROM t", "I:SELECT I:a_1 P:, I:b$c P:, I:ünï I:FROM I:t"},
		{"numbers", "1 1.5 .5 3. 1e10 1E+5 2e-3 0x1F 1_000", "N:1 N:1.5 N:.5 N:3. N:1e10 N:1E+5 N:2e-3 N:0x1F N:1_000"},
		{"strings and blobs", `'a''b' x'0A' X'' 'x'`, "S:'a''b' B:x'0A' B:X'' S:'x'"},
		{"quoted identifiers", "\"a\"\"b\" [c d] `e``f`", "Q:\"a\"\"b\" Q:[c d] Q:`e``f`"},
		{"parameters", "? ?12 :a @b $c #d", "V:? V:?12 V::a V:@b V:$c V:#d"},
		{"tcl-style parameters", "$a::b $c(x;y) :d(')x", "V:$a::b V:$c(x;y) V::d(') I:x"},
		{"byte order marks", "\xEF\xBB\xBFa \xEF\xBB\xBFb c\xEF\xBB\xBF", "I:a I:b I:c\xEF\xBB\xBF"},
		{"operators", "->> -> - || | <> <= << < >= >> > == = != ( ) ; , .", "P:->> P:-> P:- P:|| P:| P:<> P:<= P:<< P:< P:>= P:>> P:> P:== P:= P:!= P:( P:) P:; P:, P:."},
		{"comments and whitespace dropped", "a -- x\n/* y */\tb\f\rc--", "I:a I:b I:c"},
		{"dot then number", "t.5", "I:t N:.5"},
		{"minus before comment", "1-2--3", "N:1 P:- N:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			toks, err := lex(nil, tc.sql)
			is.NoErr(err)
			var got []string
			for _, tok := range toks {
				is.Equal(tc.sql[tok.off:tok.off+len(tok.text)], tok.text) // offset locates the text
				got = append(got, string("?IQSBNVP"[tok.kind])+":"+tok.text)
			}
			is.Equal(strings.Join(got, " "), tc.want)
		})
	}
}
