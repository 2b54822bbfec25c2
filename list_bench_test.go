package projectdata_test

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// listBenchRows is the size of the table of the benchmarks at scale. The
// issue's figures are for 1,000,000 rows; a smaller table makes a quicker
// routine run: go test -run '^$' -bench AtScale . -args -pd.listrows=100000
var listBenchRows = flag.Int("pd.listrows", 1_000_000, "rows of the table of BenchmarkListAtScale and BenchmarkRowsAtScale")

// listFixture is the table of the benchmarks at scale, built once per run
// (whatever -count) and removed when the run ends (see TestMain).
type listFixture struct {
	s   *projectdata.Store
	dir string
	raw *sqlite3.Conn // a raw-driver connection to the same database, for the twins
	n   int
}

var (
	listFixtureOnce sync.Once
	listFix         *listFixture
	listFixErr      error
)

// listAtScale returns the fixture: project acme, table items (name, grp
// 0..9 with an index, price) of *listBenchRows rows, written with a raw
// insert and its kept count set as the Store would have.
func listAtScale(b *testing.B) *listFixture {
	b.Helper()
	if testing.Short() {
		b.Skip("builds a table of 1,000,000 rows")
	}
	listFixtureOnce.Do(func() { listFix, listFixErr = buildListFixture(*listBenchRows) })
	if listFixErr != nil {
		b.Fatal(listFixErr)
	}
	return listFix
}

func buildListFixture(n int) (f *listFixture, err error) {
	dir, err := os.MkdirTemp("", "pd-listbench-")
	if err != nil {
		return nil, err
	}
	f = &listFixture{dir: dir, n: n}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.s, err = projectdata.Open(dir, nil); err != nil {
		return f, err
	}
	if _, _, err = f.s.CreateProject(ctx, "acme", ""); err != nil {
		return f, err
	}
	_, _, err = f.s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "grp", Type: "INTEGER"}, {Name: "price", Type: "REAL"},
	}})
	if err != nil {
		return f, err
	}
	if _, err = f.s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"grp"}}); err != nil {
		return f, err
	}
	if f.raw, err = sqlite3.Open(filepath.Join(dir, "acme", "project.db")); err != nil {
		return f, err
	}
	if err = f.raw.Exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; BEGIN IMMEDIATE`); err != nil {
		return f, err
	}
	st, _, err := f.raw.Prepare(`INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`)
	if err != nil {
		return f, err
	}
	defer st.Close()
	for i := range n {
		name, grp, price := benchValues(i)
		st.BindText(1, name)
		st.BindInt64(2, grp)
		st.BindFloat(3, price)
		if err = st.Exec(); err != nil {
			return f, err
		}
	}
	// The raw insert went around the Store: set the kept count as the
	// Store would have (as of the newest change).
	err = f.raw.Exec(`UPDATE _pd_row_counts SET row_count = (SELECT count(*) FROM items); UPDATE _pd_row_counts_as_of SET change_id = (SELECT coalesce(max(last_id), 0) FROM _pd_changes); COMMIT`)
	return f, err
}

func (f *listFixture) close() {
	if f.raw != nil {
		f.raw.Close()
	}
	if f.s != nil {
		f.s.Close()
	}
	os.RemoveAll(f.dir)
}

// closeListFixture removes the fixture, if a benchmark built it.
func closeListFixture() {
	if listFix != nil {
		listFix.close()
	}
}

// rawStmt prepares sql with args bound on the raw twin's connection,
// closed when b ends.
func (f *listFixture) rawStmt(b *testing.B, sql string, args ...int64) *sqlite3.Stmt {
	b.Helper()
	st, _, err := f.raw.Prepare(sql)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	for i, a := range args {
		if err := st.BindInt64(i+1, a); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

// rawRows runs st once, stepping every row and reading its columns as the
// Store does (a map per row); want is the number of rows it must return.
func rawRows(b *testing.B, st *sqlite3.Stmt, want int) {
	names := make([]string, st.ColumnCount())
	for c := range names {
		names[c] = st.ColumnName(c)
	}
	n := 0
	for st.Step() {
		row := make(map[string]any, len(names))
		for c, name := range names {
			switch st.ColumnType(c) {
			case sqlite3.INTEGER:
				row[name] = st.ColumnInt64(c)
			case sqlite3.FLOAT:
				row[name] = st.ColumnFloat(c)
			case sqlite3.TEXT:
				row[name] = st.ColumnText(c)
			default:
				row[name] = nil
			}
		}
		n++
	}
	if err := st.Reset(); err != nil || n != want {
		b.Fatal(err, n)
	}
}

// BenchmarkListAtScale measures lists on a table of 1,000,000 rows against
// the other operations and the raw-driver twins of the same run (figures
// as ratios). The goals:
//
//   - List20ExactTotal vs GetRecord: a first page of 20 rows with its exact
//     total (the kept count) against reads by id (≥ 0.5×).
//   - Page10000ByCursor vs FirstPage, by key and by the indexed grp, up and
//     down (within 1.5×); Page10000ByOffset shows what an offset costs at
//     that depth.
//   - FilteredList vs FilteredQuery: where grp = 3, 20 rows, through
//     ListRecords and the same SELECT through Query (within 2×);
//     FilteredListExactTotal adds the COUNT(*) of the 100,000 matches.
//   - KeptCount vs CountStar (raw): what an unfiltered exact total costs
//     now and what its COUNT(*) cost.
//
// go test -run '^$' -bench ListAtScale -benchtime 200ms -count 3 .
func BenchmarkListAtScale(b *testing.B) {
	f := listAtScale(b)
	s, n := f.s, int64(f.n)
	const cols = `id, name, grp, price`

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
	raw := func(b *testing.B, sql string, want int, args ...int64) {
		b.Helper()
		st := f.rawStmt(b, sql, args...)
		b.ReportAllocs()
		for b.Loop() {
			rawRows(b, st, want)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	}
	// deep is the offset of page 10,001 of 20 rows.
	deep := min(199_980, f.n-40)
	deepCursor := func(b *testing.B, order string) projectdata.Cursor {
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: order, Offset: deep - 20, Limit: 20, Count: projectdata.CountNone})
		if err != nil || l.NextCursor == "" {
			b.Fatal(err)
		}
		return l.NextCursor
	}

	b.Run("GetRecord", func(b *testing.B) {
		b.ReportAllocs()
		id := int64(0)
		for b.Loop() {
			id = id*7919%n + 1
			if _, err := s.GetRecord(ctx, "acme", "items", id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	})
	b.Run("RawGetByID", func(b *testing.B) {
		raw(b, `SELECT `+cols+` FROM items WHERE id = ?`, 1, n/2)
	})
	b.Run("List20ExactTotal", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20}, 20)
	})
	b.Run("FirstPage", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20, Count: projectdata.CountNone}, 20)
	})
	b.Run("RawFirstPage", func(b *testing.B) {
		raw(b, `SELECT `+cols+` FROM items ORDER BY id LIMIT 20`, 20)
	})
	b.Run("Page10000ByCursor", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20, After: deepCursor(b, ""), Count: projectdata.CountNone}, 20)
	})
	b.Run("Page10000ByOffset", func(b *testing.B) {
		list(b, projectdata.ListOptions{Limit: 20, Offset: deep, Count: projectdata.CountNone}, 20)
	})
	b.Run("RawPage10000Keyset", func(b *testing.B) {
		raw(b, `SELECT `+cols+` FROM items WHERE id > ? ORDER BY id LIMIT 20`, 20, int64(deep))
	})
	b.Run("FirstPageByGrp", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "grp", Limit: 20, Count: projectdata.CountNone}, 20)
	})
	b.Run("Page10000ByGrpByCursor", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "grp", Limit: 20, After: deepCursor(b, "grp"), Count: projectdata.CountNone}, 20)
	})
	b.Run("Page10000ByGrpByOffset", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "grp", Limit: 20, Offset: deep, Count: projectdata.CountNone}, 20)
	})
	b.Run("FirstPageByGrpDesc", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "-grp", Limit: 20, Count: projectdata.CountNone}, 20)
	})
	b.Run("Page10000ByGrpDescByCursor", func(b *testing.B) {
		list(b, projectdata.ListOptions{Order: "-grp", Limit: 20, After: deepCursor(b, "-grp"), Count: projectdata.CountNone}, 20)
	})
	grp3 := projectdata.Where{{Column: "grp", Op: "=", Value: int64(3)}}
	b.Run("FilteredList", func(b *testing.B) {
		list(b, projectdata.ListOptions{Where: grp3, Limit: 20, Count: projectdata.CountNone}, 20)
	})
	b.Run("FilteredListExactTotal", func(b *testing.B) {
		list(b, projectdata.ListOptions{Where: grp3, Limit: 20}, 20)
	})
	b.Run("FilteredQuery", func(b *testing.B) {
		req := projectdata.QueryRequest{SQL: `SELECT ` + cols + ` FROM items WHERE grp = ? ORDER BY id LIMIT 20`, Args: []any{int64(3)}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := s.Query(ctx, "acme", req)
			if err != nil || res.RowCount != 20 {
				b.Fatal(err, res.RowCount)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	})
	b.Run("RawFiltered", func(b *testing.B) {
		raw(b, `SELECT `+cols+` FROM items WHERE grp = ? ORDER BY id LIMIT 20`, 20, 3)
	})
	b.Run("KeptCount", func(b *testing.B) {
		raw(b, `SELECT row_count + coalesce((SELECT sum(CASE op WHEN 'insert' THEN count WHEN 'delete' THEN -count ELSE 0 END) FROM _pd_changes
			WHERE last_id > (SELECT change_id FROM _pd_row_counts_as_of) AND table_name = 'items' COLLATE NOCASE), 0)
			FROM _pd_row_counts WHERE table_id = (SELECT id FROM _pd_tables WHERE name = 'items')`, 1)
	})
	b.Run("CountStar", func(b *testing.B) {
		raw(b, `SELECT count(*) FROM items`, 1)
	})
}

// BenchmarkRowsAtScale walks the whole table of 1,000,000 rows with
// Store.Rows (pages of 1,000 by cursor) against a raw-driver scan of the
// same rows, and reports the peak of the Go heap during the walk, sampled
// every 10,000 rows: it stays at a page's worth whatever the table's size
// (compare -pd.listrows=100000).
//
// go test -run '^$' -bench RowsAtScale -benchtime 1x -count 3 .
func BenchmarkRowsAtScale(b *testing.B) {
	f := listAtScale(b)
	b.Run("Rows", func(b *testing.B) {
		b.ReportAllocs()
		var peak uint64
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		for b.Loop() {
			n := 0
			for _, err := range f.s.Rows(ctx, "acme", "items", projectdata.ListOptions{Limit: 1000}) {
				if err != nil {
					b.Fatal(err)
				}
				if n++; n%10_000 == 0 {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
				}
			}
			if n != f.n {
				b.Fatal(n)
			}
		}
		reportRows(b, f.n)
		b.ReportMetric(float64(before)/(1<<20), "heap-before-MB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
	b.Run("RawScan", func(b *testing.B) {
		st := f.rawStmt(b, `SELECT id, name, grp, price FROM items ORDER BY id`)
		b.ReportAllocs()
		for b.Loop() {
			rawRows(b, st, f.n)
		}
		reportRows(b, f.n)
	})
}
