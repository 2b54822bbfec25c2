package projectdata

import (
	"fmt"
	"math"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// TestEncodedRowCountsAsItsRow: what an encoded row counts against the
// result budget is what rowJSONSize counts for the same Row, so that the
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
		// Large rows, which bigRowSize measures before they are encoded.
		`printf('%.*c', 30000, '<')`, `printf('%.*c', 70000, 'x') || char(8232, 0, 233)`, `randomblob(50000)`,
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
		sum := 0
		for i, name := range names {
			sum += rowValueSize(name, columnValue(st, i))
		}
		want := rowJSONSize(sum, len(names))
		var r jsonRows
		if got, _ := r.appendRow(&k, st, names, math.MaxInt); got != want || got != len(r.buf) {
			t.Errorf("%s: the encoded row counts %d, its Row %d, its JSON takes %d", v, got, want, len(r.buf))
		}
		if size, big := bigRowSize(&k, st); big {
			if size != want {
				t.Errorf("%s: the row measures %d, its Row counts %d", v, size, want)
			}
			if _, appended := (&jsonRows{}).appendRow(&k, st, names, want-1); appended {
				t.Errorf("%s: a large row past the room was encoded", v)
			}
		}
		st.Close()
	}
}
