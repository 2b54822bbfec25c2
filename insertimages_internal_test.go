package projectdata

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

var updateImages = flag.Bool("update-images", false, "rewrite testdata/insert_images.golden")

// imagesStore opens a Store with two tables whose keys are not their first
// column: mixed (an INTEGER key, defaults of every kind, a nullable column
// without one) and coded (a TEXT key, last).
func imagesStore(tb testing.TB, opts *Options) *Store {
	tb.Helper()
	s, err := Open(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		tb.Fatal(err)
	}
	for _, def := range []TableDef{
		{Name: "mixed", Columns: []ColumnDef{
			{Name: "name"}, {Name: "id", Type: TypeInteger, Primary: true},
			{Name: "note", Default: "say \"hi\"\n<b>&"}, {Name: "qty", Type: TypeInteger, Default: 1},
			{Name: "price", Type: TypeReal, Default: 2.5}, {Name: "ratio", Type: TypeReal},
			{Name: "ok", Type: TypeBoolean, Default: true}, {Name: "num", Type: TypeNumeric, Default: 7},
		}},
		{Name: "coded", Columns: []ColumnDef{
			{Name: "label"}, {Name: "n", Type: TypeInteger, Default: 3}, {Name: "code", Primary: true},
		}},
	} {
		if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// imageInserts are inserts whose row images cover what an image holds:
// assigned and given keys, defaults, NULLs given and taken, strings that
// JSON escapes, floats, several statements of one insert, and rows large
// enough to split an insert's images into several records.
func imageInserts() []struct {
	table string
	rows  []Row
} {
	odd := []string{`"quoted" \back\slash`, "<a href='x'>&amp;</a>", "\x01\b\f\n\r\t\x1f\x7f", "line\u2028sep\u2029", "é日本🎉", ""}
	var many []Row // 70 rows: chunks of 32 and rows going in alone
	for i := range 70 {
		row := Row{"name": odd[i%len(odd)] + fmt.Sprint(i), "price": float64(i) + 0.25, "ratio": 1e21 * float64(i)}
		if i%9 == 4 {
			row = Row{"id": 1000 + i, "note": nil}
		}
		many = append(many, row)
	}
	big := strings.Repeat("big <&> ", maxChangeRecordBytes/8/3)
	var large []Row // past maxChangeRecordBytes: split
	for i := range 8 {
		large = append(large, Row{"name": big + fmt.Sprint(i), "qty": i})
	}
	return []struct {
		table string
		rows  []Row
	}{
		{"mixed", []Row{{"name": "a"}}},
		{"mixed", []Row{{"id": 100, "name": "given"}}},
		{"mixed", []Row{
			{"name": "x", "price": 3},
			{"name": nil, "ratio": 1e21, "ok": false},
			{"id": 200, "note": odd[3] + odd[4]},
			{"qty": int64(-9223372036854775808), "price": 0.1, "ratio": -0.0, "num": 1.5},
			{},
			{"note": nil, "price": nil, "num": "12"},
		}},
		{"mixed", many},
		{"coded", []Row{{"code": "k1"}, {"code": odd[0], "label": odd[2], "n": nil}, {"label": "x", "code": odd[1]}}},
		{"mixed", large},
		{"coded", []Row{{"code": "one"}}},
	}
}

// insertRecords returns the insert records of the log, one line each:
// id, count, table and data (its length and hash when large).
func insertRecords(tb testing.TB, s *Store) []string {
	tb.Helper()
	ctx := context.Background()
	var lines []string
	err := s.withProject(ctx, "acme", "", func(p *project) error {
		return p.read(ctx, func(c *conn) error {
			return c.query(`SELECT last_id, count, table_name, data FROM _pd_changes WHERE op = 'insert' ORDER BY last_id`, nil, func(st *sqlite3.Stmt) error {
				data := st.ColumnText(3)
				if len(data) > 4096 {
					data = fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256([]byte(data)))
				}
				lines = append(lines, fmt.Sprintf("%d %d %s %s", st.ColumnInt64(0), st.ColumnInt64(1), st.ColumnText(2), data))
				return nil
			})
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return lines
}

// TestInsertImagesAsBefore: the row images of inserts are byte for byte
// those the change log wrote before they were encoded ahead of the writer
// (testdata/insert_images.golden, written by that code).
func TestInsertImagesAsBefore(t *testing.T) {
	is := is.New(t)
	s := imagesStore(t, nil)
	for _, in := range imageInserts() {
		_, err := s.Insert(context.Background(), "acme", in.table, in.rows)
		is.NoErr(err)
	}
	got := strings.Join(insertRecords(t, s), "\n") + "\n"
	const golden = "testdata/insert_images.golden"
	if *updateImages {
		is.NoErr(os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	is.NoErr(err)
	is.Equal(got, string(want))
}
