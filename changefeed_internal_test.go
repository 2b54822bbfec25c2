package projectdata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// TestFeedReadsOnPastTheBudget: one read of the feed, after a commit of
// more changes than fit the result budget, brings the tail every change,
// page after page (not the first page only, leaving the rest until a
// later commit or poll), each encoded once.
func TestFeedReadsOnPastTheBudget(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	const budget = 16 << 10
	s := itemsStore(t, &Options{QueryMaxBytes: budget}) // change 1: the table
	f := &feed{fs: s.feeds, slug: "acme", wake: make(chan struct{})}
	is.NoErr(f.read()) // from the log's end
	rows := make([]Row, 20)
	for i := range rows {
		rows[i] = Row{"name": strings.Repeat("x", 2<<10), "qty": i}
	}
	_, err := s.Insert(ctx, "acme", "items", rows) // about 40 KB of changes
	is.NoErr(err)
	is.NoErr(f.read())
	is.Equal(len(f.tail), 20)
	is.Equal(f.last, int64(21))
	for i, c := range f.tail {
		is.Equal(c.ID, int64(i+2))
		enc, err := c.encode()
		is.NoErr(err)
		is.Equal(string(c.encoded), string(enc))
	}
}

// TestFeedTailIsBoundedInBytes: the changes of big rows do not pile up in
// a feed's memory: the tail keeps at most twice feedTailBytes of their
// JSON (it held every one of the last feedTail changes, however big), and
// a follower behind it still gets every change, from the log.
func TestFeedTailIsBoundedInBytes(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, nil) // change 1: the table
	f := &feed{fs: s.feeds, slug: "acme", wake: make(chan struct{})}
	is.NoErr(f.read()) // from the log's end
	big := strings.Repeat("x", 1<<20)
	const inserts, perInsert = 5, 8 // 40 MiB of changes
	for range inserts {
		rows := make([]Row, perInsert)
		for j := range rows {
			rows[j] = Row{"name": big, "qty": j}
		}
		_, err := s.Insert(ctx, "acme", "items", rows)
		is.NoErr(err)
		is.NoErr(f.read())
		sum := 0
		for i, c := range f.tail {
			sum += len(c.encoded)
			is.Equal(c.ID, f.last-int64(len(f.tail)-1-i)) // contiguous, up to the last read
		}
		is.Equal(f.bytes, sum)
		is.True(f.bytes <= 2*feedTailBytes)
	}
	is.Equal(f.last, int64(1+inserts*perInsert))
	is.True(f.tail[0].ID > 2) // trimmed

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	want := int64(2)
	for c, err := range s.FollowChanges(fctx, "acme", ChangeQuery{After: 1}) {
		is.NoErr(err)
		is.Equal(c.ID, want)
		if want++; want > f.last {
			break
		}
	}
}

// TestChangeJSONSize: what a page of the log counts against the result
// budget is the length of each change's JSON.
func TestChangeJSONSize(t *testing.T) {
	at := time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC)
	for _, c := range []Change{
		{ID: 1, Table: "items", Op: ChangeSchema, At: at},
		{ID: 22, Table: "items", Op: ChangeDelete, Key: "a \"quoted\" <key>\n", At: at},
		{ID: 333, Table: "t_2", Op: ChangeInsert, Key: int64(-7), Row: Row{}, At: at},
		{ID: 4444, Table: "t_2", Op: ChangeDelete, Key: 2.0, At: at}, // a REAL key: 2.0, as in its row
		{ID: math.MaxInt64, Table: "items", Op: ChangeUpdate, Key: 1.5, At: at.AddDate(-2000, 0, 0), Row: Row{
			"id": 1.5, "name": "café ☕ & <b>\u2028\x01", "qty": int64(math.MinInt64), "price": 1e-7, "big": 1e21,
			"none": nil, "ok": int64(1), "when": "2026-01-02T03:04:05.000Z", "": "empty key",
		}},
	} {
		enc, err := c.encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := c.jsonSize(); got != len(enc) {
			t.Errorf("jsonSize = %d, want %d: %s", got, len(enc), enc)
		}
	}
}

// TestChangeKeyIsWrittenAsTheRowsKey: a REAL key is written with a fraction
// (2.0), as the row writes it, so that both decode as the same value.
func TestChangeKeyIsWrittenAsTheRowsKey(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, nil)
	_, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "k", Type: TypeReal, Primary: true}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "t", []Row{{"k": 2}})
	is.NoErr(err)
	page, err := s.ListChanges(ctx, "acme", ChangeQuery{Tables: []string{"t"}})
	is.NoErr(err)
	last := page.Changes[len(page.Changes)-1]
	enc, err := json.Marshal(last)
	is.NoErr(err)
	is.True(strings.Contains(string(enc), `"key":2.0,"row":{"k":2.0}`)) // the key as the row's
}

// TestFollowerGetsEveryChangeOfTwoStores: a follower of one Store gets
// every change committed through it and another Store on the folder, each
// once and in id order, while writes share group commits, some roll back
// (unique violations) and bulk deletes run.
func TestFollowerGetsEveryChangeOfTwoStores(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, other, _ := storesOnOneFolder(t)
	_, err := s.AddColumn(ctx, "acme", "items", ColumnDef{Name: "sku", Unique: true})
	is.NoErr(err)
	start, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan Change, 4096)
	go func() {
		defer close(got)
		for ch, err := range s.FollowChanges(fctx, "acme", ChangeQuery{After: start}) {
			if err != nil {
				t.Error(err)
				return
			}
			got <- ch
		}
	}()
	writeOnBoth(6, s, other, func(w int, st *Store) {
		for i := range 40 {
			sku := fmt.Sprintf("%d-%d", w, i)
			if i%7 == 3 {
				sku = "dup"
			}
			_, err := st.Insert(ctx, "acme", "items", []Row{{"qty": i, "sku": sku}, {"qty": -1}})
			if err != nil && ErrorCode(err) != ErrUniqueViolation {
				t.Error(err)
				return
			}
			if i%10 == 9 {
				if _, err := st.DeleteRecords(ctx, "acme", "items", BulkDelete{Where: Where{{Column: "qty", Op: "=", Value: -1}}}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	for next := start + 1; next <= last; next++ {
		select {
		case ch, ok := <-got:
			if !ok {
				t.Fatalf("the follower stopped before change %d", next)
			}
			is.Equal(ch.ID, next)
		case <-time.After(time.Minute):
			t.Fatalf("no change %d of %d", next, last)
		}
	}
}

// TestChangePageBudgetCountsTheEncodedChanges: a page of the log holds the
// changes whose JSON array, brackets and commas included, fits the result
// budget: a budget of exactly the JSON of k changes holds k, one byte less
// k-1.
func TestChangePageBudgetCountsTheEncodedChanges(t *testing.T) {
	ctx := context.Background()
	s := itemsStore(t, nil)
	rows := make([]Row, 30)
	for i := range rows {
		rows[i] = Row{"name": strings.Repeat("<é\n", i%5) + strings.Repeat("x", i), "qty": i}
	}
	_, err := s.Insert(ctx, "acme", "items", rows)
	if err != nil {
		t.Fatal(err)
	}
	read := func(maxBytes int) (page ChangePage) {
		err := s.withProject(ctx, "acme", OpListChanges, func(p *project) error {
			return p.read(ctx, func(c *conn) (err error) {
				page, _, err = readChanges(c, ChangeQuery{Limit: 1000}, maxBytes)
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	const k = 20
	first, err := json.Marshal(read(1 << 20).Changes[:k])
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{len(first), len(first) - 1} {
		want := k
		if budget < len(first) {
			want = k - 1
		}
		page := read(budget)
		enc, err := json.Marshal(page.Changes)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) != want || len(enc) > budget {
			t.Errorf("budget %d: a page of %d changes of %d bytes, want %d changes", budget, len(page.Changes), len(enc), want)
		}
	}
}

// TestChangePageReadsNoRecordPastIt: a page of the log stops reading the
// log once it is full. It went on stepping through up to Limit more records
// (a page of 1,000 changes of a log of 1,000-row inserts read 1,000
// records, some 300 MB of a million-row table's log, to answer 300 KB),
// each record's row images read in full though none was used. Counted in
// page reads: the pages stay in the WAL (no checkpoint), so SQLite reads
// every one through its page cache.
func TestChangePageReadsNoRecordPastIt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, &Options{ReplicatorCheckpoints: true}) // change 1: the table
	const records, perRecord = 10, 100
	rows := make([]Row, perRecord)
	for i := range rows {
		rows[i] = Row{"name": strings.Repeat("x", 1<<10), "qty": i} // a record: about 25 pages
	}
	for range records {
		_, err := s.Insert(ctx, "acme", "items", rows)
		is.NoErr(err)
	}
	pageGets := func(c *conn) int64 {
		hit, _, err := c.db.Status(sqlite3.DBSTATUS_CACHE_HIT, false)
		is.NoErr(err)
		miss, _, err := c.db.Status(sqlite3.DBSTATUS_CACHE_MISS, false)
		is.NoErr(err)
		return hit + miss
	}
	var page ChangePage
	var gets int64
	err := s.withProject(ctx, "acme", OpListChanges, func(p *project) error {
		return p.read(ctx, func(c *conn) (err error) {
			before := pageGets(c)
			page, _, err = readChanges(c, ChangeQuery{After: 1, Limit: perRecord}, 1<<20)
			gets = pageGets(c) - before
			return err
		})
	})
	is.NoErr(err)
	is.Equal(len(page.Changes), perRecord) // the first insert's record
	is.Equal(page.NextAfter, int64(1+perRecord))
	if all := int64(records * perRecord << 10 / 4096); gets > all/3 {
		t.Errorf("a page of one record read %d pages of the log; its %d records hold about %d", gets, records, all)
	}
}

// TestFeedLogsABusyProjectAsAWarning: a read of the log that finds the
// project's readers all taken is load, logged as a warning, and retried;
// other failures are errors; a closed Store is not logged.
func TestFeedLogsABusyProjectAsAWarning(t *testing.T) {
	is := is.New(t)
	var logged strings.Builder
	s := itemsStore(t, &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	f := &feed{fs: s.feeds, slug: "acme", wake: make(chan struct{})}
	f.logReadError(nil)
	f.logReadError(errorf(ErrStoreClosed, "the store is closed"))
	is.Equal(logged.String(), "")
	f.logReadError(errorf(ErrServerBusy, "busy"))
	is.True(strings.Contains(logged.String(), "level=WARN"))
	logged.Reset()
	f.logReadError(errors.New("disk on fire"))
	is.True(strings.Contains(logged.String(), "level=ERROR"))
}

// TestFollowChangesWithAnEndedContext: an iteration whose context has
// ended before it begins stops without an error, as one that ends while
// it waits does (it yielded context.Canceled: a test's follower, stopped
// at once, failed with it now and then).
func TestFollowChangesWithAnEndedContext(t *testing.T) {
	s := itemsStore(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for c, err := range s.FollowChanges(ctx, "acme", ChangeQuery{}) {
		t.Fatalf("yielded %v, %v", c, err)
	}
}
