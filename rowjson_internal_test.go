package projectdata

import (
	"fmt"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// TestEncodedRowCountsAsItsRow: what an encoded row counts against the
// result budget is what encodedSize counts for the same Row, so that the
// encoded and the built results stop at the same row, for values whose
// JSON size is easy to get wrong.
func TestEncodedRowCountsAsItsRow(t *testing.T) {
	db, err := sqlite3.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values := []string{
		`NULL`, `''`, `'<script>&"\'`, `'a' || char(0, 1, 8, 9, 10, 12, 13, 31, 127) || 'z'`, `char(8232, 8233)`,
		`'é日本🎉'`, `CAST(x'fffe61c3' AS TEXT)`, `-9223372036854775808`, `-0.0`, `1e21`, `1e-7`, `5e-324`,
		`x''`, `x'00ff10'`, `1e999`, `-1e999`,
	}
	names := []string{"a", "<b>", "é"}
	k := newRowKeys(names)
	for _, v := range values {
		st, _, err := db.Prepare(fmt.Sprintf(`SELECT %[1]s AS a, %[1]s AS "<b>", 7 AS "é"`, v))
		if err != nil {
			t.Fatal(v, err)
		}
		if !st.Step() {
			t.Fatal(v, st.Err())
		}
		want := 2
		for i, name := range names {
			want += encodedSize(name, columnValue(st, i))
		}
		var r jsonRows
		if got := r.appendRow(&k, st, names); got != want {
			t.Errorf("%s: the encoded row counts %d, its Row %d (%s)", v, got, want, r.buf)
		}
		st.Close()
	}
}
