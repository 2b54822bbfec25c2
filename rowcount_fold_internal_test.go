package projectdata

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// countState is what a test reads of the kept row counts of items, with
// the raw driver: the stored count, the records after the counts' change
// id, and COUNT(*).
type countState struct {
	stored, pending, rows int64
}

func readCountState(tb testing.TB, dir string) countState {
	tb.Helper()
	db, err := sqlite3.OpenFlags(filepath.Join(dir, "acme", "project.db"), sqlite3.OPEN_READONLY)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	st, _, err := db.Prepare(`SELECT
		(SELECT row_count FROM _pd_row_counts WHERE table_id = (SELECT id FROM _pd_tables WHERE name = 'items')),
		(SELECT count(*) FROM _pd_changes WHERE last_id > (SELECT change_id FROM _pd_row_counts_as_of)),
		(SELECT count(*) FROM items)`)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	if !st.Step() {
		tb.Fatal(st.Err())
	}
	return countState{st.ColumnInt64(0), st.ColumnInt64(1), st.ColumnInt64(2)}
}

// checkTotal fails unless the unfiltered total of items that s reports is
// its COUNT(*).
func checkTotal(tb testing.TB, s *Store, dir, step string) countState {
	tb.Helper()
	l, err := s.ListRecords(context.Background(), "acme", "items", ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	cs := readCountState(tb, dir)
	if *l.Total != cs.rows {
		tb.Fatalf("after %s: total %d, COUNT(*) %d (stored %d, %d records pending)", step, *l.Total, cs.rows, cs.stored, cs.pending)
	}
	return cs
}

func TestRowCountsFromTheChangeLog(t *testing.T) {
	ctx := context.Background()
	insert := func(t *testing.T, s *Store, rows ...Row) {
		t.Helper()
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("AnInsertWritesNoCountAndTheLogIsFolded", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		s := itemsStoreIn(t, dir, nil)
		insert(t, s, Row{"qty": 1})
		cs := checkTotal(t, s, dir, "one insert")
		is.Equal(cs.stored, int64(0)) // the record carries the insert: no count page written
		for i := range 3 * foldEvery {
			insert(t, s, Row{"qty": i})
		}
		cs = checkTotal(t, s, dir, "many inserts")
		is.True(cs.stored > 0)                   // folded
		is.True(cs.pending < int64(foldEvery)+1) // never more than foldEvery records to sum
	})
	t.Run("EveryWritePath", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		s := itemsStoreIn(t, dir, nil)
		batch := make([]Row, 2500) // several records of one insert
		for i := range batch {
			batch[i] = Row{"qty": i}
		}
		insert(t, s, batch...)
		checkTotal(t, s, dir, "a batch")
		_, err := s.DeleteRecord(ctx, "acme", "items", int64(7))
		is.NoErr(err)
		checkTotal(t, s, dir, "a delete")
		_, err = s.UpdateRecords(ctx, "acme", "items", BulkUpdate{Data: Row{"name": "x"}, Where: Where{{Column: "qty", Op: WhereLt, Value: 1500}}})
		is.NoErr(err)
		checkTotal(t, s, dir, "a bulk update")
		res, err := s.DeleteRecords(ctx, "acme", "items", BulkDelete{Where: Where{{Column: "qty", Op: WhereGe, Value: 100}}})
		is.NoErr(err)
		is.Equal(res.AffectedRows, int64(2400))
		is.Equal(checkTotal(t, s, dir, "a bulk delete").rows, int64(99))
		_, err = s.Insert(ctx, "acme", "items", []Row{{"qty": 1}, {"qty": "not a number"}})
		is.True(err != nil) // rolled back: its rows and its record
		checkTotal(t, s, dir, "a failed insert")
	})
	t.Run("ATableTakingTheNameOfADeletedOne", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		s := itemsStoreIn(t, dir, nil)
		insert(t, s, Row{"qty": 1}, Row{"qty": 2}, Row{"qty": 3})
		_, err := s.DeleteTable(ctx, "acme", "items")
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", TableDef{Name: "items", Columns: []ColumnDef{{Name: "qty", Type: "INTEGER"}}})
		is.NoErr(err)
		is.Equal(checkTotal(t, s, dir, "the table made again").rows, int64(0))
		insert(t, s, Row{"qty": 4})
		is.Equal(checkTotal(t, s, dir, "an insert into it").rows, int64(1))
	})
	t.Run("PruningTheLog", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		s := itemsStoreIn(t, dir, &Options{Now: clk.Now, ChangeRetention: time.Hour})
		for i := range 10 {
			insert(t, s, Row{"qty": i})
		}
		clk.advance(2 * time.Hour)
		insert(t, s, Row{"qty": 10})
		err := s.withProject(ctx, "acme", "", func(p *project) error {
			_, err := s.pruneChanges(ctx, p) // or the prune that the last insert started did
			return err
		})
		is.NoErr(err)
		_, err = s.ListChanges(ctx, "acme", ChangeQuery{After: 0})
		is.Equal(ErrorCode(err), ErrChangesExpired) // the records of the first inserts are gone
		is.Equal(checkTotal(t, s, dir, "pruning").rows, int64(11))
	})
	t.Run("AStoreWithTheLogOffOnTheSameFolder", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		on := itemsStoreIn(t, dir, nil)
		off, err := Open(dir, &Options{changeLogOff: true})
		is.NoErr(err)
		defer off.Close()
		for i := range 2 * foldEvery {
			s := on
			if i%3 == 0 {
				s = off
			}
			res, err := s.Insert(ctx, "acme", "items", []Row{{"qty": i}})
			is.NoErr(err)
			if i%10 == 0 {
				_, err := s.DeleteRecord(ctx, "acme", "items", res.InsertedIDs[0])
				is.NoErr(err)
			}
		}
		checkTotal(t, on, dir, "inserts by both")
		checkTotal(t, off, dir, "inserts by both")
	})
	t.Run("ACountMadeAfresh", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		s := itemsStoreIn(t, dir, nil)
		insert(t, s, Row{"qty": 1}, Row{"qty": 2})
		is.NoErr(s.Close())
		db, err := sqlite3.Open(filepath.Join(dir, "acme", "project.db"))
		is.NoErr(err)
		is.NoErr(db.Exec(`DELETE FROM _pd_row_counts`)) // counted again on open, with the insert's record pending
		is.NoErr(db.Close())
		s, err = Open(dir, nil)
		is.NoErr(err)
		defer s.Close()
		is.Equal(checkTotal(t, s, dir, "counting afresh").rows, int64(2))
	})
	t.Run("UpgradeFromVersion6", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		s := itemsStoreIn(t, dir, nil)
		insert(t, s, Row{"qty": 1}, Row{"qty": 2})
		is.NoErr(s.Close())
		// Version 6 kept exact counts, changed with every write.
		db, err := sqlite3.Open(filepath.Join(dir, "acme", "project.db"))
		is.NoErr(err)
		is.NoErr(db.Exec(`UPDATE _pd_row_counts SET row_count = (SELECT count(*) FROM items); DROP TABLE _pd_row_counts_as_of; DROP INDEX _pd_columns_order; PRAGMA user_version = 6`))
		is.NoErr(db.Close())
		s, err = Open(dir, nil)
		is.NoErr(err)
		defer s.Close()
		is.Equal(checkTotal(t, s, dir, "the upgrade").rows, int64(2))
		insert(t, s, Row{"qty": 3})
		is.Equal(checkTotal(t, s, dir, "an insert").rows, int64(3))
	})
}

// itemsStoreIn is itemsStore with its data folder dir.
func itemsStoreIn(tb testing.TB, dir string, opts *Options) *Store {
	tb.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "items", Columns: []ColumnDef{{Name: "name"}, {Name: "qty", Type: "INTEGER"}}}); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestRowCountsInEverySnapshot reads the total and COUNT(*) of items in one
// read transaction on a connection of its own while writers insert and
// delete, in groups sharing commits, through two Stores on the folder.
func TestRowCountsInEverySnapshot(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := itemsStoreIn(t, dir, nil)
	b, err := Open(dir, nil)
	is.NoErr(err)
	defer b.Close()

	done := make(chan struct{})
	errs := make(chan error, 4)
	for w, s := range []*Store{a, a, b, b} {
		go func() {
			for i := range 3 * foldEvery {
				res, err := s.Insert(ctx, "acme", "items", []Row{{"qty": i}, {"qty": w}})
				if err == nil && i%4 == 0 {
					_, err = s.DeleteRecord(ctx, "acme", "items", res.InsertedIDs[0])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		for range 4 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		close(done)
	}()
	defer func() { <-done }() // the writers end before the Stores close, even when a check fails

	c, err := openConn(filepath.Join(dir, "acme", "project.db"), true, time.Second)
	is.NoErr(err)
	defer c.close()
	sc, err := loadSchema(c)
	is.NoErr(err)
	items, err := sc.lookupTable("items")
	is.NoErr(err)
	for reads := 0; ; reads++ {
		select {
		case <-done:
			is.True(reads > 0)
			return
		default:
		}
		func() {
			tx := c.db.Begin() // deferred: the snapshot starts with the first read
			defer tx.End(&err)
			total, ok, err := rowCount(c, items)
			is.NoErr(err)
			is.True(ok)
			var rows int64
			_, err = c.queryRow(`SELECT count(*) FROM items`, nil, func(st *sqlite3.Stmt) error {
				rows = st.ColumnInt64(0)
				return nil
			})
			is.NoErr(err)
			is.Equal(total, rows) // the kept total is exact in this snapshot
		}()
	}
}

// TestRowCountsAfterConcurrentBulkChanges: inserts that fail on a unique
// column, bulk updates (of the primary key too: a delete and an insert in
// the log), bulk and single deletes, through two Stores on one folder in
// shared commits, leave the kept total equal to COUNT(*).
func TestRowCountsAfterConcurrentBulkChanges(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, other, dir := storesOnOneFolder(t)
	_, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "k", Columns: []ColumnDef{{Name: "code", Primary: true}, {Name: "v", Type: "INTEGER", Unique: true}}})
	is.NoErr(err)
	writeOnBoth(6, s, other, func(w int, st *Store) {
		for i := range 40 {
			var err error
			switch i % 8 {
			case 0, 1, 2: // the second row often collides on v
				_, err = st.Insert(ctx, "acme", "k", []Row{{"code": fmt.Sprintf("c%d-%d", w, i), "v": w*1000 + i}, {"code": fmt.Sprintf("d%d-%d", w, i), "v": i % 5}})
			case 3:
				_, err = st.UpdateRecords(ctx, "acme", "k", BulkUpdate{Data: Row{"v": nil}, Where: Where{{Column: "v", Op: "<", Value: 5}}})
			case 4:
				_, err = st.DeleteRecords(ctx, "acme", "k", BulkDelete{Where: Where{{Column: "v", Op: "is_null"}}})
			case 5:
				_, err = st.UpdateRecord(ctx, "acme", "k", fmt.Sprintf("c%d-%d", w, i-5), Row{"code": fmt.Sprintf("m%d-%d", w, i)})
			case 6:
				_, err = st.UpdateRecords(ctx, "acme", "k", BulkUpdate{Data: Row{"code": fmt.Sprintf("x%d-%d", w, i)}, Where: Where{{Column: "code", Op: "=", Value: fmt.Sprintf("m%d-%d", w, i-1)}}})
			case 7:
				_, err = st.DeleteRecord(ctx, "acme", "k", fmt.Sprintf("x%d-%d", w, i-1))
			}
			if code := ErrorCode(err); err != nil && code != ErrUniqueViolation && code != ErrRecordNotFound {
				t.Error(err)
				return
			}
		}
	})
	c, err := openConn(filepath.Join(dir, "acme", dbFileName), true, time.Second)
	is.NoErr(err)
	defer c.close()
	sc, err := loadSchema(c)
	is.NoErr(err)
	k, err := sc.lookupTable("k")
	is.NoErr(err)
	total, ok, err := rowCount(c, k)
	is.NoErr(err)
	is.True(ok)
	var rows int64
	_, err = c.queryRow(`SELECT count(*) FROM k`, nil, func(st *sqlite3.Stmt) error {
		rows = st.ColumnInt64(0)
		return nil
	})
	is.NoErr(err)
	is.True(rows > 0)
	is.Equal(total, rows)
}
