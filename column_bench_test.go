package projectdata_test

import (
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

const rebuildRows = 100_000

// BenchmarkRebuildColumn100k toggles the default of a column of a
// 100,000-row table with two managed indexes and a UNIQUE column: every
// operation rebuilds the table through the Store.
func BenchmarkRebuildColumn100k(b *testing.B) {
	r, _ := newItems(b, rebuildRows)
	defaults := []any{5, 6}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		upd := projectdata.ColumnUpdate{Default: projectdata.SetTo(defaults[i%2])}
		if _, err := r.s.UpdateColumn(ctx, "acme", "items", "n", upd); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(rebuildRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkRebuildColumn100kRaw is the same rebuild written by hand on a
// raw connection: the Store's overhead is the ratio of the two.
func BenchmarkRebuildColumn100kRaw(b *testing.B) {
	r, _ := newItems(b, rebuildRows)
	if err := r.db.Exec(`PRAGMA synchronous=NORMAL`); err != nil { // as the Store's writer
		b.Fatal(err)
	}
	var table string
	var indexes []string
	r.each(b, `SELECT type, sql FROM sqlite_schema WHERE tbl_name = 'items' AND sql IS NOT NULL`, nil, func(st *sqlite3.Stmt) {
		if st.ColumnText(0) == "table" {
			table = st.ColumnText(1)
		} else {
			indexes = append(indexes, st.ColumnText(1))
		}
	})
	const cols = `"id", "name", "n", "r", "flag", "at", "code", "note"`
	creates := make([]string, 2)
	for i, def := range []string{"5", "6"} {
		creates[i] = strings.Replace(strings.Replace(table, `"items"`, `"items_new"`, 1), `"n" INTEGER`, `"n" INTEGER DEFAULT `+def, 1)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		steps := append([]string{
			`BEGIN IMMEDIATE`,
			creates[i%2],
			`INSERT INTO "items_new" (` + cols + `) SELECT ` + cols + ` FROM "items"`,
			`DROP TABLE "items"`,
			`ALTER TABLE "items_new" RENAME TO "items"`,
		}, append(indexes, `COMMIT`)...)
		for _, sql := range steps {
			if err := r.db.Exec(sql); err != nil {
				b.Fatalf("%s: %v", sql, err)
			}
		}
		i++
	}
	b.ReportMetric(float64(rebuildRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
