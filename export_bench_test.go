package projectdata_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

const exportBenchRows = 100_000

// newBenchExport is a project with a table items(id, name TEXT, qty
// INTEGER, price REAL) of exportBenchRows rows.
func newBenchExport(b *testing.B) (*projectdata.Store, string) {
	b.Helper()
	s, dir := pdtest.Open(b, nil)
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		b.Fatal(err)
	}
	def := projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"}}}
	if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
		b.Fatal(err)
	}
	pdtest.Exec(b, pdtest.Raw(b, dir, "acme"), `INSERT INTO items (name, qty, price)
		SELECT 'item number ' || value, value % 1000, value / 7.0 FROM generate_series(1, `+strconv.Itoa(exportBenchRows)+`)`)
	return s, dir
}

// BenchmarkExport100k is CreateExport of a 100,000-row, 4-column table:
// snapshot read, CSV, SHA-256, temporary file, fsync, rename, manifest.
func BenchmarkExport100k(b *testing.B) {
	s, _ := newBenchExport(b)
	b.ReportAllocs()
	for b.Loop() {
		e, err := s.CreateExport(ctx, "acme", "items", "csv")
		if err != nil || e.RowCount != exportBenchRows {
			b.Fatal(err, e.RowCount)
		}
	}
	b.ReportMetric(float64(exportBenchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkExport100kRaw is the raw-driver twin: the same rows stepped on
// a read-only connection in one transaction, written as CSV through
// SHA-256 to a file that is synced and renamed.
func BenchmarkExport100kRaw(b *testing.B) {
	_, dir := newBenchExport(b)
	db, err := sqlite3.OpenFlags(filepath.Join(dir, "acme", "project.db"), sqlite3.OPEN_READONLY)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	out := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if n := rawExport(b, db, out); n != exportBenchRows {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(exportBenchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

func rawExport(b *testing.B, db *sqlite3.Conn, dir string) int {
	f, err := os.CreateTemp(dir, "*.tmp")
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	buf := bufio.NewWriterSize(io.MultiWriter(f, h), 64<<10)
	w := csv.NewWriter(buf)
	tx := db.Begin()
	st, _, err := db.Prepare(`SELECT id, name, qty, price FROM items ORDER BY id`)
	if err != nil {
		b.Fatal(err)
	}
	w.Write([]string{"id", "name", "qty", "price"})
	rec := make([]string, 4)
	n := 0
	for st.Step() {
		rec[0] = strconv.FormatInt(st.ColumnInt64(0), 10)
		rec[1] = st.ColumnText(1)
		rec[2] = strconv.FormatInt(st.ColumnInt64(2), 10)
		rec[3] = strconv.FormatFloat(st.ColumnFloat(3), 'g', -1, 64)
		w.Write(rec)
		n++
	}
	st.Close()
	tx.End(&err)
	w.Flush()
	if err := w.Error(); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.Rename(f.Name(), filepath.Join(dir, "export.csv")); err != nil {
		b.Fatal(err)
	}
	_ = h.Sum(nil)
	return n
}
