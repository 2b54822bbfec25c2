package projectdata_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// bigValueStore returns a Store whose table big holds 60 rows, each with a
// value of size bytes.
func bigValueStore(t *testing.T, opts *projectdata.Options, size int) *projectdata.Store {
	t.Helper()
	s, _ := pdtest.NewProject(t, opts)
	createTable(t, s, "big", projectdata.ColumnDef{Name: "v"})
	value := strings.Repeat("x", size)
	for range 6 {
		batch := make([]projectdata.Row, 10)
		for i := range batch {
			batch[i] = projectdata.Row{"v": value}
		}
		if _, err := s.Insert(ctx, "acme", "big", batch); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestListResultBudget is the regression of issue 11, item 1: a list of a
// 60-row table of 8 MB values built the whole 480 MB page (3 GB encoded).
// Now the page stops at the result budget, and continues by cursor.
func TestListResultBudget(t *testing.T) {
	t.Run("PagesStopAtTheBudget", func(t *testing.T) {
		is := is.New(t)
		const size = 512 << 10
		s := bigValueStore(t, nil, size) // the default budget, 4 MiB, holds 7 rows
		var l projectdata.RecordList
		alloc := allocated(func() {
			var err error
			l, err = s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{})
			is.NoErr(err)
		})
		is.Equal(len(l.Rows), 7)
		is.True(l.Truncated)
		is.True(l.NextCursor != "")
		is.Equal(*l.Total, int64(60))
		is.True(alloc < 16<<20) // at most the budget and one row, not the 30 MB of the table
		seen := 0
		for row, err := range s.Rows(ctx, "acme", "big", projectdata.ListOptions{}) {
			is.NoErr(err)
			is.Equal(len(row["v"].(string)), size)
			seen++
		}
		is.Equal(seen, 60) // the truncated pages continue where they stopped
	})
	t.Run("ARowOverTheBudgetIs413", func(t *testing.T) {
		s := bigValueStore(t, &projectdata.Options{QueryMaxBytes: 256 << 10}, 512<<10)
		_, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
		l, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{Columns: []string{"id"}})
		if err != nil || len(l.Rows) != 60 || l.Truncated {
			t.Fatalf("without the big column: %d rows, truncated %v, err %v", len(l.Rows), l.Truncated, err)
		}
	})
	t.Run("RowsOverTheBudgetAreNotEncoded", func(t *testing.T) {
		// 2 MiB of '<' is 12 MiB of JSON: over the 4 MiB budget, the row is
		// refused without its JSON being built.
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "big", projectdata.ColumnDef{Name: "v"})
		_, err := s.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("<", 2<<20)}})
		is.NoErr(err)
		var err2 error
		alloc := allocated(func() {
			_, err2 = s.AppendRecordListJSON(ctx, nil, "acme", "big", projectdata.ListOptions{})
		})
		pdtest.Code(t, err2, projectdata.ErrQueryResultTooLarge)
		is.True(alloc < 8<<20) // not the 12 MiB of the row's JSON
		alloc = allocated(func() {
			_, err2 = s.AppendQueryJSON(ctx, nil, "acme", projectdata.QueryRequest{SQL: "SELECT v FROM big"})
		})
		pdtest.Code(t, err2, projectdata.ErrQueryResultTooLarge)
		is.True(alloc < 8<<20)
	})
	t.Run("ARecordOverTheBudgetIs413", func(t *testing.T) {
		// A single record's read and update carry its row too (CONTRACT
		// §10: every response that carries rows): over the budget they are
		// refused as a list refuses it, without its JSON being built, and
		// the update is not made.
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "big", projectdata.ColumnDef{Name: "v"}, projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		res, err := s.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("<", 2<<20), "n": 1}, {"v": "small", "n": 2}})
		is.NoErr(err)
		id := res.InsertedIDs[0]
		var err2 error
		alloc := allocated(func() { _, err2 = s.AppendRecordJSON(ctx, nil, "acme", "big", id) })
		pdtest.Code(t, err2, projectdata.ErrQueryResultTooLarge)
		is.True(alloc < 8<<20) // not the 12 MiB of the row's JSON
		_, err = s.GetRecord(ctx, "acme", "big", id)
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
		_, err = s.UpdateRecord(ctx, "acme", "big", id, projectdata.Row{"n": 3})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
		// Growing a small row past the budget is refused; shrinking the big
		// one is not.
		_, err = s.UpdateRecord(ctx, "acme", "big", res.InsertedIDs[1], projectdata.Row{"v": strings.Repeat("<", 2<<20)})
		pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
		row, err := s.UpdateRecord(ctx, "acme", "big", id, projectdata.Row{"v": "shrunk"})
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": id, "v": "shrunk", "n": int64(1)}) // n was not made 3
		row, err = s.GetRecord(ctx, "acme", "big", res.InsertedIDs[1])
		is.NoErr(err)
		is.Equal(row["v"], "small")
	})
	t.Run("SixtyRowsOf8MB", func(t *testing.T) {
		if testing.Short() {
			t.Skip("writes 480 MB; the 512 KiB version above runs with -short")
		}
		is := is.New(t)
		s := bigValueStore(t, &projectdata.Options{QueryMaxBytes: 20 << 20}, 8<<20)
		var l projectdata.RecordList
		alloc := allocated(func() {
			var err error
			l, err = s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{})
			is.NoErr(err)
		})
		is.Equal(len(l.Rows), 2)
		is.True(l.Truncated)
		is.True(alloc < 64<<20)
	})
}

func TestListTimeBudget(t *testing.T) {
	t.Run("OutOfBudgetIs422WithTheIndexHint", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: time.Nanosecond})
		createTable(t, s, "events", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		batch := make([]projectdata.Row, 5000)
		for i := range batch {
			batch[i] = projectdata.Row{"n": len(batch) - i}
		}
		_, err := s.Insert(ctx, "acme", "events", batch)
		is.NoErr(err)
		for _, opts := range []projectdata.ListOptions{
			{Order: "n"},
			{Where: where(t, `[{"column":"n","op":">","value":7}]`), Count: projectdata.CountExact, Limit: 1},
		} {
			_, err = s.ListRecords(ctx, "acme", "events", opts)
			pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
			is.True(strings.Contains(err.Error(), "events")) // the hint names the table scanned in full
			is.True(strings.Contains(err.Error(), "index"))  // and says what helps
		}
	})
	t.Run("ALikeOverABigValueStopsAtTheBudget", func(t *testing.T) {
		// One call of SQLite's like, a pattern of MaxLikePattern bytes over
		// 3 MB, ran for minutes: SQLite looks at its interrupt only between
		// instructions.
		is := is.New(t)
		s, _ := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: 200 * time.Millisecond})
		createTable(t, s, "big", projectdata.ColumnDef{Name: "v"})
		_, err := s.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("a", 3000000)}})
		is.NoErr(err)
		slow := "%" + strings.Repeat("a", projectdata.MaxLikePattern-2) + "b"
		done := make(chan error, 1)
		go func() {
			_, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{
				Columns: []string{"id"},
				Where:   projectdata.Where{{Column: "v", Op: projectdata.WhereLike, Value: slow}},
			})
			done <- err
		}()
		select {
		case err := <-done:
			pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
		case <-time.After(30 * time.Second):
			t.Fatal("the list ran on far past its budget")
		}
		l, err := s.ListRecords(ctx, "acme", "big", projectdata.ListOptions{
			Columns: []string{"id"},
			Where:   projectdata.Where{{Column: "v", Op: projectdata.WhereLike, Value: "A%"}},
		})
		is.NoErr(err)
		is.Equal(len(l.Rows), 1)
	})
	t.Run("UnindexedOrderOnABigTableFitsTheDefaultBudget", func(t *testing.T) {
		if testing.Short() || raceEnabled {
			t.Skip("builds 300,000 rows")
		}
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "events", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		batch := make([]projectdata.Row, 10000)
		for k := range 30 {
			for i := range batch {
				batch[i] = projectdata.Row{"n": (k*10000 + i) * 7919 % 300000}
			}
			_, err := s.Insert(ctx, "acme", "events", batch)
			is.NoErr(err)
		}
		l, err := s.ListRecords(ctx, "acme", "events", projectdata.ListOptions{Order: "-n", Limit: 20})
		is.NoErr(err)
		is.Equal(l.Rows[0]["n"], int64(299999))
		l, err = s.ListRecords(ctx, "acme", "events", projectdata.ListOptions{Order: "-n", Limit: 20, After: l.NextCursor})
		is.NoErr(err)
		is.Equal(l.Rows[0]["n"], int64(299979))
	})
}

// budgetRows returns a Store of result budget maxBytes whose table t holds
// the same 60 rows of varied JSON sizes (escapes, non-ASCII text, numbers,
// nulls) whatever the budget.
func budgetRows(t *testing.T, maxBytes int) *projectdata.Store {
	t.Helper()
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxBytes: maxBytes})
	createTable(t, s, "t", projectdata.ColumnDef{Name: "v"}, projectdata.ColumnDef{Name: "n", Type: "REAL"})
	rows := make([]projectdata.Row, 60)
	for i := range rows {
		rows[i] = projectdata.Row{"v": strings.Repeat("<é\n", i%7) + strings.Repeat("x", i), "n": float64(i) / 4}
		if i%5 == 0 {
			rows[i]["n"] = nil
		}
	}
	if _, err := s.Insert(ctx, "acme", "t", rows); err != nil {
		t.Fatal(err)
	}
	return s
}

// rowsJSON returns the rows of a list's or a query's answer as they are
// encoded: the JSON array, byte for byte.
func rowsJSON(t *testing.T, answer []byte) json.RawMessage {
	t.Helper()
	var page struct{ Rows json.RawMessage }
	if err := json.Unmarshal(answer, &page); err != nil {
		t.Fatal(err)
	}
	return page.Rows
}

// TestResultBudgetCountsTheEncodedRows: the result budget counts the rows
// as the answer encodes them, their braces and the commas and brackets
// around them included. A budget of exactly the JSON of k rows holds k
// rows; one byte less holds k-1 (a list stops there, truncated; a query is
// 413). It counted each row a byte or two short, so a full page of small
// rows passed the budget by up to 2 KB.
func TestResultBudgetCountsTheEncodedRows(t *testing.T) {
	const k = 40
	const sql = "SELECT * FROM t ORDER BY id"
	all := budgetRows(t, 1<<20)
	answer, err := all.AppendQueryJSON(ctx, nil, "acme", projectdata.QueryRequest{SQL: sql + " LIMIT 40"})
	if err != nil {
		t.Fatal(err)
	}
	exact := len(rowsJSON(t, answer)) // the JSON of the first k rows
	for _, budget := range []int{exact, exact - 1} {
		want := k
		if budget < exact {
			want = k - 1
		}
		s := budgetRows(t, budget)
		page, err := s.AppendRecordListJSON(ctx, nil, "acme", "t", projectdata.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var got []projectdata.Row
		encoded := rowsJSON(t, page)
		if err := json.Unmarshal(encoded, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != want || len(encoded) > budget {
			t.Errorf("budget %d: the encoded list holds %d rows of %d bytes, want %d rows", budget, len(got), len(encoded), want)
		}
		l, err := s.ListRecords(ctx, "acme", "t", projectdata.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		built, _ := json.Marshal(l.Rows)
		if len(l.Rows) != want || !l.Truncated || string(built) != string(encoded) {
			t.Errorf("budget %d: the built list holds %d rows of %d bytes (truncated %v), want the %d rows encoded", budget, len(l.Rows), len(built), l.Truncated, want)
		}

		req := projectdata.QueryRequest{SQL: fmt.Sprintf("%s LIMIT %d", sql, k)}
		answer, err := s.AppendQueryJSON(ctx, nil, "acme", req)
		res, err2 := s.Query(ctx, "acme", req)
		if budget < exact {
			pdtest.Code(t, err, projectdata.ErrQueryResultTooLarge)
			pdtest.Code(t, err2, projectdata.ErrQueryResultTooLarge)
			continue
		}
		if err != nil || err2 != nil {
			t.Fatalf("budget %d: the query of %d rows fails: %v, %v", budget, k, err, err2)
		}
		built, _ = json.Marshal(res.Rows)
		if encoded := rowsJSON(t, answer); len(encoded) != exact || string(built) != string(encoded) {
			t.Errorf("budget %d: the query's rows take %d bytes encoded, %d built", budget, len(encoded), len(built))
		}
	}
}
