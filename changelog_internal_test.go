package projectdata

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// Every test of the package checks that each unit of work logs exactly the
// application rows SQLite changed (see verifyChangeLog).
func init() { verifyChangeLog = true }

// clock is a settable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// itemsStore opens a Store with project acme and its table items (name,
// qty).
func itemsStore(tb testing.TB, opts *Options) *Store {
	tb.Helper()
	return itemsStoreIn(tb, tb.TempDir(), opts)
}

func TestChangeRetention(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := itemsStore(t, &Options{Now: clk.Now, ChangeRetention: time.Hour}) // change 1: the table
	const old = 1200                                                       // records, to prune in several batches
	for i := range old {
		_, err := s.Insert(ctx, "acme", "items", []Row{{"qty": i}})
		is.NoErr(err)
	}
	clk.advance(2 * time.Hour)
	_, err := s.Insert(ctx, "acme", "items", []Row{{"qty": -1}, {"qty": -2}}) // changes 1202, 1203
	is.NoErr(err)
	prune := func() {
		err := s.withProject(ctx, "acme", "", func(p *project) error {
			_, err := s.pruneChanges(ctx, p)
			return err
		})
		is.NoErr(err)
	}
	prune()

	_, err = s.ListChanges(ctx, "acme", ChangeQuery{After: 0})
	is.Equal(ErrorCode(err), ErrChangesExpired) // resuming before the window
	_, err = s.ListChanges(ctx, "acme", ChangeQuery{After: 1200})
	is.Equal(ErrorCode(err), ErrChangesExpired)
	page, err := s.ListChanges(ctx, "acme", ChangeQuery{After: 1201})
	is.NoErr(err)
	is.Equal(len(page.Changes), 2)
	is.Equal(page.Changes[0].ID, int64(1202))
	for _, err := range s.Changes(ctx, "acme", 5) {
		is.Equal(ErrorCode(err), ErrChangesExpired) // followers too
		break
	}

	// Changes younger than the retention are kept, newest or not.
	clk.advance(45 * time.Minute)
	_, err = s.Insert(ctx, "acme", "items", []Row{{"qty": -3}}) // change 1204
	is.NoErr(err)
	prune()
	page, err = s.ListChanges(ctx, "acme", ChangeQuery{After: 1201})
	is.NoErr(err) // 1202 and 1203, 45 minutes old, and 1204
	is.Equal(len(page.Changes), 3)

	clk.advance(2 * time.Hour)
	prune()
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	is.Equal(last, int64(1204)) // the newest record is kept, so ids never go back
	_, err = s.Insert(ctx, "acme", "items", []Row{{"qty": 0}})
	is.NoErr(err)
	page, err = s.ListChanges(ctx, "acme", ChangeQuery{After: 1204})
	is.NoErr(err)
	is.Equal(page.Changes[0].ID, int64(1205))
}

// TestChangePruneBatchesAreBoundedInBytes: a retention transaction
// deletes at most changePruneBytes of records (or one record), not
// changePruneBatch records whatever their size: 500 records of big rows
// (up to maxChangeRecordBytes each) held the writer past QueueTimeout.
// Pruning still deletes every record due, batch after batch.
func TestChangePruneBatchesAreBoundedInBytes(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := itemsStore(t, &Options{Now: clk.Now, ChangeRetention: time.Hour}) // change 1: the table
	const records = 3 * changePruneBytes >> 20                             // of 1 MiB: three batches' worth
	big := strings.Repeat("x", 1<<20)
	for i := range records {
		_, err := s.Insert(ctx, "acme", "items", []Row{{"name": big, "qty": i}}) // a record each
		is.NoErr(err)
	}
	clk.advance(2 * time.Hour) // with no commit after it, which would prune in the background
	cutoff := formatTime(clk.Now().Add(-time.Hour))
	var n int
	var more bool
	is.NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		return p.write(ctx, func(c *conn) (err error) {
			_, n, more, err = changePruneSelect(c, cutoff)
			return err
		})
	}))
	if n < 1 || n > changePruneBytes>>20 || !more {
		t.Fatalf("one transaction would delete %d records of 1 MiB (more: %v); want 1 to %d, and more", n, more, changePruneBytes>>20)
	}
	is.NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		pruned, err := s.pruneChanges(ctx, p)
		is.Equal(pruned, records) // the table's record and the big ones but the newest
		return err
	}))
	_, err := s.ListChanges(ctx, "acme", ChangeQuery{After: records - 1})
	is.Equal(ErrorCode(err), ErrChangesExpired)
	page, err := s.ListChanges(ctx, "acme", ChangeQuery{After: records})
	is.NoErr(err)
	is.Equal(len(page.Changes), 1) // the newest, kept
	is.Equal(page.Changes[0].ID, int64(records+1))
	l, err := s.ListRecords(ctx, "acme", "items", ListOptions{Count: CountExact, Limit: 1})
	is.NoErr(err)
	is.Equal(*l.Total, int64(records)) // the counts folded before the records went
}

// BenchmarkInsertChangeLog measures inserts with the change log on and
// off in the same run: one row per insert and 1,000 rows per insert.
func BenchmarkInsertChangeLog(b *testing.B) {
	verifyChangeLog = false // its update hook would slow both sides (benchmarks run after the tests)
	defer func() { verifyChangeLog = true }()
	ctx := context.Background()
	for _, batch := range []int{1, 1000} {
		rows := make([]Row, batch)
		for i := range rows {
			rows[i] = Row{"name": fmt.Sprint("item-", i), "qty": i}
		}
		for _, logOn := range []bool{false, true} {
			name := fmt.Sprintf("Rows%d/Log%v", batch, map[bool]string{false: "Off", true: "On"}[logOn])
			b.Run(name, func(b *testing.B) {
				s := itemsStore(b, &Options{changeLogOff: !logOn})
				before := storedBytes(b, s)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric((storedBytes(b, s)-before)/float64(b.N*batch), "dbB/row")
			})
		}
	}
}

// storedBytes is the size of project acme's database (its pages): the
// growth per row with the change log on and off tells the log's bytes per
// change.
func storedBytes(b *testing.B, s *Store) float64 {
	b.Helper()
	var n int64
	err := s.withProject(context.Background(), "acme", "", func(p *project) error {
		return p.read(context.Background(), func(c *conn) error {
			_, err := c.queryRow(`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`, nil, func(st *sqlite3.Stmt) error {
				n = st.ColumnInt64(0)
				return nil
			})
			return err
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(n)
}

// TestPruningWithNothingDueTakesNoWriter: the log's pruning, run in the
// background after a project's first change, asks a point read first; with
// nothing due it never waits for the writer (which would hold up other
// writes, and make a token's last_used_at wait for a later request).
func TestPruningWithNothingDueTakesNoWriter(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	// A wait for the writer fails after the queue timeout; the point-read
	// connection, which the pruning the insert starts in the background
	// holds a moment, comes free well within it, even under load (10 ms did
	// not, under -race with the package's other tests).
	s := itemsStore(t, &Options{QueueTimeout: 2 * time.Second})
	_, err := s.Insert(ctx, "acme", "items", []Row{{"qty": 1}})
	is.NoErr(err)
	err = s.withProject(ctx, "acme", "", func(p *project) error {
		p.wsem <- struct{}{} // the writer is busy
		defer func() { <-p.wsem }()
		n, err := s.pruneChanges(ctx, p)
		is.Equal(n, 0)
		return err // ErrServerBusy if it had waited for the writer
	})
	is.NoErr(err)
}

// TestLargeWritesLogSeveralRecords: the row images of an insert (or a
// bulk update) past maxChangeRecordBytes go on in further records (one record of a large
// insert took SQLite's memory), and the feed delivers every row once, in
// order, with its image.
func TestLargeWritesLogSeveralRecords(t *testing.T) {
	is := is.New(t)
	s := itemsStore(t, nil)
	ctx := context.Background()
	big := strings.Repeat("x", maxChangeRecordBytes/3)
	rows := make([]Row, 8)
	for i := range rows {
		rows[i] = Row{"name": big + strconv.Itoa(i), "qty": i}
	}
	res, err := s.Insert(ctx, "acme", "items", rows)
	is.NoErr(err)
	var records int
	is.NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		return p.read(ctx, func(c *conn) error {
			_, err := c.queryRow(`SELECT count(*) FROM _pd_changes WHERE op = 'insert'`, nil, func(st *sqlite3.Stmt) error {
				records = st.ColumnInt(0)
				return nil
			})
			return err
		})
	}))
	is.True(records > 1) // split
	is.True(records < 8) // by size, not row by row
	seen := 0
	var last int64
	for _, ch := range allChanges(t, s, 0) {
		if ch.Op != ChangeInsert {
			continue // the table's creation
		}
		if seen > 0 {
			is.Equal(ch.ID, last+1) // no gap between records
		}
		last = ch.ID
		is.Equal(ch.Key, res.InsertedIDs[seen])
		is.Equal(ch.Row["name"], big+strconv.Itoa(seen))
		seen++
	}
	is.Equal(seen, 8)

	// A bulk update of the same rows: its images are split the same way.
	_, err = s.UpdateRecords(ctx, "acme", "items", BulkUpdate{Data: Row{"qty": 7}, AllowAll: true})
	is.NoErr(err)
	updateRecords := 0
	is.NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		return p.read(ctx, func(c *conn) error {
			_, err := c.queryRow(`SELECT count(*) FROM _pd_changes WHERE op = 'update'`, nil, func(st *sqlite3.Stmt) error {
				updateRecords = st.ColumnInt(0)
				return nil
			})
			return err
		})
	}))
	is.True(updateRecords > 1)
	updates := allChanges(t, s, last)
	is.Equal(len(updates), 8)
	for i, ch := range updates {
		is.Equal(ch.ID, last+int64(i)+1)
		is.Equal(ch.Op, ChangeUpdate)
		is.Equal(ch.Row["qty"], int64(7))
		is.Equal(ch.Row["name"], big+strconv.Itoa(i))
	}
}

// allChanges reads the changes of project acme after the id after, page
// by page: the images of large rows fill a page's result budget.
func allChanges(t *testing.T, s *Store, after int64) []Change {
	t.Helper()
	var all []Change
	for {
		page, err := s.ListChanges(context.Background(), "acme", ChangeQuery{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) == 0 {
			return all
		}
		all, after = append(all, page.Changes...), page.NextAfter
	}
}

// TestAppendChangeCopiesRecordOnce: a record goes into SQLite without a
// copy of it on the Go heap (Stmt.BindRawText made one, of some 40 KB for
// a 1,000-row insert).
func TestAppendChangeCopiesRecordOnce(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, nil)
	data := []byte(`{"pk":0,"columns":["id"],"rows":[` + strings.Repeat("[1],", 1<<14) + `[1]]}`)
	const records = 20
	errRollBack := errors.New("roll back")
	var before, after runtime.MemStats
	err := s.withProject(ctx, "acme", "", func(p *project) error {
		return p.write(ctx, func(c *conn) error {
			if err := c.appendChange(changeRecord{table: "items", op: ChangeInsert, count: 1, data: data}); err != nil {
				return err // the statement prepared and cached
			}
			runtime.ReadMemStats(&before)
			for range records {
				if err := c.appendChange(changeRecord{table: "items", op: ChangeInsert, count: 1, data: data}); err != nil {
					return err
				}
			}
			runtime.ReadMemStats(&after)
			return errRollBack
		})
	})
	is.Equal(err, errRollBack)
	perRecord := (after.TotalAlloc - before.TotalAlloc) / records
	t.Logf("%d bytes allocated per record of %d bytes", perRecord, len(data))
	is.True(perRecord < uint64(len(data))/4)
}
