package projectdata_test

import (
	"testing"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// listBenchRows is the size of the table of BenchmarkListAtScale.
const listBenchRows = 1_000_000

// BenchmarkListAtScale measures lists on a table of 1,000,000 rows (items:
// name, grp 0..9 with an index, price), built once for the run with a raw
// insert, against the other operations of the same run (figures as
// ratios):
//
//   - List20ExactTotal vs GetRecord: a first page of 20 rows with its exact
//     total (the kept count) against reads by id (goal: ≥ 0.5×).
//   - Page10000ByCursor vs FirstPage, by key and by the indexed grp
//     (goal: within 1.5×).
//   - FilteredList vs FilteredQuery: where grp = 3, 20 rows, through
//     ListRecords and the same SELECT through Query (goal: within 2×);
//     FilteredListExactTotal adds the COUNT(*) of the 100,000 matches.
//
// go test -run '^$' -bench ListAtScale -benchtime 2000x .
func BenchmarkListAtScale(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 1,000,000-row table")
	}
	s, path := benchStore(b)
	if _, err := s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"grp"}}); err != nil {
		b.Fatal(err)
	}
	db := rawConn(b, path)
	st := prepare(b, db, `INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`)
	rawInsert(b, db, st, listBenchRows)
	// The raw insert went around the Store: set the kept count as the
	// Store would have.
	pdtest.Exec(b, db, `UPDATE _pd_row_counts SET row_count = (SELECT count(*) FROM items)`)

	list := func(b *testing.B, opts projectdata.ListOptions, want int) {
		b.Helper()
		b.ReportAllocs()
		for b.Loop() {
			l, err := s.ListRecords(ctx, "acme", "items", opts)
			if err != nil || len(l.Rows) != want {
				b.Fatal(err, len(l.Rows))
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	}
	// deepCursor returns the cursor after row 200,000 of an order: the
	// start of page 10,001 of 20 rows.
	deepCursor := func(b *testing.B, order string) projectdata.Cursor {
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: order, Offset: 199_980, Limit: 20, Count: projectdata.CountNone})
		if err != nil || l.NextCursor == "" {
			b.Fatal(err)
		}
		return l.NextCursor
	}

	b.Run("GetRecord", func(b *testing.B) {
		b.ReportAllocs()
		id := int64(0)
		for b.Loop() {
			id = id*7919%listBenchRows + 1
			if _, err := s.GetRecord(ctx, "acme", "items", id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	})
	b.Run("List20ExactTotal", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20}, 20)
	})
	b.Run("FirstPage", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20}, 20)
	})
	b.Run("Page10000ByCursor", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20, After: deepCursor(b, "")}, 20)
	})
	b.Run("FirstPageByGrp", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "grp", Limit: 20}, 20)
	})
	b.Run("Page10000ByGrpByCursor", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "grp", Limit: 20, After: deepCursor(b, "grp")}, 20)
	})
	grp3 := projectdata.Where{{Column: "grp", Op: "=", Value: int64(3)}}
	b.Run("FilteredList", func(b *testing.B) {
		list(b, projectdata.ListOptions{Where: grp3, Limit: 20, Count: projectdata.CountNone}, 20)
	})
	b.Run("FilteredListExactTotal", func(b *testing.B) {
		list(b, projectdata.ListOptions{Where: grp3, Limit: 20}, 20)
	})
	b.Run("FilteredQuery", func(b *testing.B) {
		req := projectdata.QueryRequest{SQL: `SELECT id, name, grp, price FROM items WHERE grp = ? ORDER BY id LIMIT 20`, Args: []any{int64(3)}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := s.Query(ctx, "acme", req)
			if err != nil || res.RowCount != 20 {
				b.Fatal(err, res.RowCount)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	})
}
