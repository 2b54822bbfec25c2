package projectdata_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// The benchmarks compare each Store operation with a raw-driver twin doing
// the same SQLite work on a database with the same table, in WAL mode with
// synchronous=NORMAL (as the Store's connections are).

const benchBatch = 1000

// benchItemsSQL is the table the Store creates for benchStore, written out
// for the raw twins.
const benchItemsSQL = `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, price REAL)`

// benchStore returns a Store with project acme and its table items (id,
// name, grp, price), and the path of the project's database.
func benchStore(b *testing.B) (*projectdata.Store, string) {
	b.Helper()
	s, dir := pdtest.Open(b, nil)
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		b.Fatal(err)
	}
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "grp", Type: "INTEGER"}, {Name: "price", Type: "REAL"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	return s, filepath.Join(dir, "acme", "project.db")
}

// rawConn opens a connection configured as the Store's: WAL,
// synchronous=NORMAL.
func rawConn(b *testing.B, path string) *sqlite3.Conn {
	b.Helper()
	db, err := sqlite3.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000`); err != nil {
		b.Fatal(err)
	}
	return db
}

// rawItems returns a raw connection to a new database holding the items
// table.
func rawItems(b *testing.B) *sqlite3.Conn {
	b.Helper()
	db := rawConn(b, filepath.Join(b.TempDir(), "raw.db"))
	if err := db.Exec(benchItemsSQL); err != nil {
		b.Fatal(err)
	}
	return db
}

// benchValues are the values of row i of a batch.
func benchValues(i int) (name string, grp int64, price float64) {
	return fmt.Sprintf("item-%d", i), int64(i % 10), float64(i) + 0.25
}

// benchRows returns n rows as an HTTP body decodes them (json.Number).
func benchRows(b *testing.B, n int) []projectdata.Row {
	b.Helper()
	body := []byte{'['}
	for i := range n {
		if i > 0 {
			body = append(body, ',')
		}
		name, grp, price := benchValues(i)
		body = fmt.Appendf(body, `{"name":%q,"grp":%d,"price":%g}`, name, grp, price)
	}
	body = append(body, ']')
	rows, err := projectdata.DecodeRows(bytes.NewReader(body), 0)
	if err != nil {
		b.Fatal(err)
	}
	return rows
}

// rawInsert inserts rows 0..n-1 of benchValues in one transaction with one
// prepared statement.
func rawInsert(b *testing.B, db *sqlite3.Conn, st *sqlite3.Stmt, n int) {
	if err := db.Exec(`BEGIN IMMEDIATE`); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		name, grp, price := benchValues(i)
		st.BindText(1, name)
		st.BindInt64(2, grp)
		st.BindFloat(3, price)
		if err := st.Exec(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Exec(`COMMIT`); err != nil {
		b.Fatal(err)
	}
}

func prepare(b *testing.B, db *sqlite3.Conn, sql string) *sqlite3.Stmt {
	b.Helper()
	st, _, err := db.Prepare(sql)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func reportRows(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkInsert inserts batches of 1,000 rows into a 4-column table (an
// automatic key and three values per row).
func BenchmarkInsert(b *testing.B) {
	b.Run("Store", func(b *testing.B) {
		s, _ := benchStore(b)
		rows := benchRows(b, benchBatch)
		b.ReportAllocs()
		for b.Loop() {
			res, err := s.Insert(ctx, "acme", "items", rows)
			if err != nil || res.InsertedCount != benchBatch {
				b.Fatal(res.InsertedCount, err)
			}
		}
		reportRows(b, benchBatch)
	})
	b.Run("Raw", func(b *testing.B) {
		db := rawItems(b)
		st := prepare(b, db, `INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`)
		b.ReportAllocs()
		for b.Loop() {
			rawInsert(b, db, st, benchBatch)
		}
		reportRows(b, benchBatch)
	})
}

const benchReadRows = 10000

// BenchmarkGetRecord reads rows by integer primary key from a table of
// 10,000 rows.
func BenchmarkGetRecord(b *testing.B) {
	b.Run("Store", func(b *testing.B) {
		s, _ := benchStore(b)
		rows := benchRows(b, benchReadRows)
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			row, err := s.GetRecord(ctx, "acme", "items", int64(i%benchReadRows+1))
			if err != nil || len(row) != 4 {
				b.Fatal(row, err)
			}
			i++
		}
		reportRows(b, 1)
	})
	// The record encoded as JSON straight from SQLite's columns, as the
	// HTTP API reads it.
	b.Run("StoreJSON", func(b *testing.B) {
		s, _ := benchStore(b)
		rows := benchRows(b, benchReadRows)
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		buf := make([]byte, 0, 256)
		for b.Loop() {
			var err error
			buf, err = s.AppendRecordJSON(ctx, buf[:0], "acme", "items", int64(i%benchReadRows+1))
			if err != nil || len(buf) == 0 {
				b.Fatal(err)
			}
			i++
		}
		reportRows(b, 1)
	})
	b.Run("Raw", func(b *testing.B) {
		db := rawItems(b)
		rawInsert(b, db, prepare(b, db, `INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`), benchReadRows)
		st := prepare(b, db, `SELECT id, name, grp, price FROM items WHERE id = ?`)
		b.ReportAllocs()
		i := 0
		var sink int64
		for b.Loop() {
			st.BindInt64(1, int64(i%benchReadRows+1))
			if !st.Step() {
				b.Fatal(st.Err())
			}
			id, name, grp, price := st.ColumnInt64(0), st.ColumnText(1), st.ColumnInt64(2), st.ColumnFloat(3)
			sink += id + int64(len(name)) + grp + int64(price)
			if err := st.Reset(); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportRows(b, 1)
	})
}

const benchUpdateRows = 100000

// BenchmarkUpdateRecords updates 10% of a 100,000-row table, selected by
// an indexed column.
func BenchmarkUpdateRecords(b *testing.B) {
	b.Run("Store", func(b *testing.B) {
		s, path := benchStore(b)
		rows := benchRows(b, 10000)
		for range benchUpdateRows / len(rows) {
			if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
				b.Fatal(err)
			}
		}
		if err := rawConn(b, path).Exec(`CREATE INDEX items_grp ON items (grp)`); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			res, err := s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{
				Data:  projectdata.Row{"price": i},
				Where: projectdata.Where{{Column: "grp", Op: "=", Value: i % 10}},
			})
			if err != nil || res.AffectedRows != benchUpdateRows/10 {
				b.Fatal(res.AffectedRows, err)
			}
			i++
		}
		reportRows(b, benchUpdateRows/10)
	})
	b.Run("Raw", func(b *testing.B) {
		db := rawItems(b)
		ins := prepare(b, db, `INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`)
		for range benchUpdateRows / 10000 {
			rawInsert(b, db, ins, 10000)
		}
		if err := db.Exec(`CREATE INDEX items_grp ON items (grp)`); err != nil {
			b.Fatal(err)
		}
		st := prepare(b, db, `UPDATE items SET price = ? WHERE grp = ?`)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := db.Exec(`BEGIN IMMEDIATE`); err != nil {
				b.Fatal(err)
			}
			st.BindFloat(1, float64(i))
			st.BindInt64(2, int64(i%10))
			if err := st.Exec(); err != nil {
				b.Fatal(err)
			}
			if n := db.Changes(); n != benchUpdateRows/10 {
				b.Fatal(n)
			}
			if err := db.Exec(`COMMIT`); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportRows(b, benchUpdateRows/10)
	})
}
