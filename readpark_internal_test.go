package projectdata

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// parkedReaders counts the project's idle readers that keep a read
// transaction between reads.
func parkedReaders(p *project) (n int) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	for _, c := range p.readers {
		if c.parked {
			n++
		}
	}
	return n
}

// storesOnOneFolder returns a Store with project acme and table items,
// another Store on its folder, and the folder.
func storesOnOneFolder(t *testing.T) (s, other *Store, dir string) {
	t.Helper()
	dir = t.TempDir()
	s = itemsStoreIn(t, dir, nil)
	other, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return s, other, dir
}

// writeOnBoth runs n writers at once, write(w, st) each, w their number
// and st s or other in turn, and waits for them.
func writeOnBoth(n int, s, other *Store, write func(w int, st *Store)) {
	var wg sync.WaitGroup
	for w := range n {
		st := s
		if w%2 == 1 {
			st = other
		}
		wg.Go(func() { write(w, st) })
	}
	wg.Wait()
}

// acmeProject returns the open project acme of s.
func acmeProject(t testing.TB, s *Store) *project {
	t.Helper()
	var p *project
	is.New(t).NoErr(s.withProject(context.Background(), "acme", "", func(q *project) error { p = q; return nil }))
	return p
}

// TestParkedReadsSeeEveryCommit: a reader kept in its read transaction
// between reads sees every commit made since, by the same Store, by
// another Store on the folder and by a connection of another program, on
// the next read.
func TestParkedReadsSeeEveryCommit(t *testing.T) {
	if watchWAL(filepath.Join(t.TempDir(), "none")) != nil {
		t.Fatal("watched a database that does not exist")
	}
	is := is.New(t)
	ctx := context.Background()
	s, other, dir := storesOnOneFolder(t)
	raw, err := sqlite3.Open(filepath.Join(dir, "acme", dbFileName))
	is.NoErr(err)
	defer raw.Close()
	is.NoErr(raw.BusyTimeout(5e9))

	res, err := s.Insert(ctx, "acme", "items", []Row{{"name": "a", "qty": 0}})
	is.NoErr(err)
	id := res.InsertedIDs[0]
	p := acmeProject(t, s)
	if p.wal == nil && walWatchBuilt {
		t.Fatal("no watch of the WAL index")
	}
	writers := []struct {
		name  string
		write func(qty int) error
	}{
		{"the same Store", func(qty int) error {
			_, err := s.UpdateRecord(ctx, "acme", "items", id, Row{"qty": qty})
			return err
		}},
		{"another Store", func(qty int) error {
			_, err := other.UpdateRecord(ctx, "acme", "items", id, Row{"qty": qty})
			return err
		}},
		{"another program", func(qty int) error {
			return raw.Exec(fmt.Sprintf(`UPDATE items SET qty = %d WHERE id = %d`, qty, id))
		}},
	}
	parked := 0
	for i := 1; i <= 300; i++ {
		w := writers[i%len(writers)]
		is.NoErr(w.write(i))
		if i%2 == 0 {
			// The log checkpointed whole, as the checkpointer does once
			// the writer is idle, so that readers park.
			p.releaseParked(0)
			is.NoErr(raw.Exec(`PRAGMA wal_checkpoint(PASSIVE)`))
		}
		for range 2 { // the first read may park; the second reuses
			row, err := s.GetRecord(ctx, "acme", "items", id)
			is.NoErr(err)
			if row["qty"] != int64(i) {
				t.Fatalf("after a write by %s: qty %v, want %d", w.name, row["qty"], i)
			}
			parked += parkedReaders(p)
		}
	}
	if walWatchBuilt && parked == 0 {
		t.Fatal("no reader was ever parked")
	}
}

// TestParkedReadersLetGo: a reader parks only on a log checkpointed whole
// (which the checkpointer does once the writer is idle): its transaction
// then holds back no writer from starting the log over. An idle reader
// gives up its parked transaction within parkedIdle or so, and at once
// before a checkpoint of the Store's, so that the log can be copied.
func TestParkedReadersLetGo(t *testing.T) {
	if !walWatchBuilt {
		t.Skip("readers never park in this build")
	}
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, nil)
	_, err := s.Insert(ctx, "acme", "items", []Row{{"name": "a", "qty": 1}})
	is.NoErr(err)
	p := acmeProject(t, s)
	_, err = s.GetRecord(ctx, "acme", "items", 1)
	is.NoErr(err)
	if now, _ := p.stamp(); !now.backfilled() {
		is.Equal(parkedReaders(p), 0) // the log holds frames not copied yet
	}
	waitFor(t, "a reader parked after the idle writer's checkpoint", func() bool {
		_, err := s.GetRecord(ctx, "acme", "items", 1)
		is.NoErr(err)
		return parkedReaders(p) == 1
	})
	waitFor(t, "the idle reader to let go", func() bool { return parkedReaders(p) == 0 })
	p.rmu.Lock()
	for _, c := range p.readers {
		is.True(c.db.GetAutocommit()) // no transaction left open
	}
	p.rmu.Unlock()

	// The checkpointer: a reader parked before a log of 3,000 pages
	// would keep the checkpoint from copying it.
	_, err = s.GetRecord(ctx, "acme", "items", 1)
	is.NoErr(err)
	is.Equal(parkedReaders(p), 1)
	runs := p.ckpt.runs.Load()
	p.rmu.Lock()
	p.readers[0].idleSince = p.readers[0].idleSince.Add(24 * 3600e9) // the sweep will not let go of it
	p.rmu.Unlock()
	fillLog(t, s)
	waitFor(t, "a background checkpoint", func() bool { return p.ckpt.runs.Load() > runs })
	is.Equal(parkedReaders(p), 0)
	fi, err := os.Stat(filepath.Join(s.dir, "acme", dbFileName))
	is.NoErr(err)
	is.True(fi.Size() > checkpointPages*4096) // the log was copied
}

// TestParkedReadsFollowConcurrentWrites: readers that run while another
// Store on the folder writes never return a value older than the last
// write acknowledged before the read began.
func TestParkedReadsFollowConcurrentWrites(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, other, _ := storesOnOneFolder(t)
	res, err := s.Insert(ctx, "acme", "items", []Row{{"name": "a", "qty": 0}})
	is.NoErr(err)
	id := res.InsertedIDs[0]

	p := acmeProject(t, s)
	var acked atomic.Int64
	var sawParked atomic.Bool
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				before := acked.Load()
				row, err := s.GetRecord(ctx, "acme", "items", id)
				if err != nil {
					t.Error(err)
					return
				}
				if got := row["qty"].(int64); got < before {
					t.Errorf("read qty %d after the write of %d was acknowledged", got, before)
					return
				}
				if parkedReaders(p) > 0 {
					sawParked.Store(true)
				}
			}
		}()
	}
	for i := int64(1); i <= 300; i++ {
		writer := other
		if i%2 == 0 {
			writer = s
		}
		if i%60 == 0 {
			time.Sleep(2 * checkpointIdle) // readers park on the checkpointed log
		}
		_, err := writer.UpdateRecord(ctx, "acme", "items", id, Row{"qty": i})
		is.NoErr(err)
		acked.Store(i)
	}
	close(done)
	wg.Wait()
	if walWatchBuilt && !sawParked.Load() {
		t.Fatal("no reader was ever parked")
	}
}

// TestEveryReadSeesTheWriteBeforeIt: straight after a write returns, by
// this Store or another on the folder, every kind of read of this Store
// (a record by key, a list with its total, a query, the change log) sees
// it, while readers park in between, another program checkpoints the log
// and starts it over (TRUNCATE: the WAL index header begins again from an
// empty log) and the other Store changes the schema.
func TestEveryReadSeesTheWriteBeforeIt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, other, dir := storesOnOneFolder(t)
	raw, err := sqlite3.Open(filepath.Join(dir, "acme", dbFileName))
	is.NoErr(err)
	defer raw.Close()
	is.NoErr(raw.BusyTimeout(5e9))
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	for i := int64(1); i <= 120; i++ {
		w := s
		if i%2 == 0 {
			w = other
		}
		res, err := w.Insert(ctx, "acme", "items", []Row{{"name": fmt.Sprint(i), "qty": i}})
		is.NoErr(err)
		id := res.InsertedIDs[0]
		row, err := s.GetRecord(ctx, "acme", "items", id)
		is.NoErr(err)
		is.Equal(row["qty"], i)
		l, err := s.ListRecords(ctx, "acme", "items", ListOptions{Limit: 1, Order: "-id"})
		is.NoErr(err)
		is.Equal(*l.Total, i)
		is.Equal(l.Rows[0]["id"], id)
		q, err := s.Query(ctx, "acme", QueryRequest{SQL: `SELECT max(qty) AS q FROM items`})
		is.NoErr(err)
		is.Equal(q.Rows[0]["q"], i)
		page, err := s.ListChanges(ctx, "acme", ChangeQuery{After: last})
		is.NoErr(err)
		is.Equal(len(page.Changes), 1)
		last = page.NextAfter
		switch i % 10 {
		case 3:
			is.NoErr(raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`))
		case 5:
			if i%30 == 5 {
				time.Sleep(2 * checkpointIdle) // the writers' checkpoints: readers park
			}
		case 7:
			col := fmt.Sprintf("c%d", i)
			_, err := other.AddColumn(ctx, "acme", "items", ColumnDef{Name: col})
			is.NoErr(err)
			l, err := s.ListRecords(ctx, "acme", "items", ListOptions{Columns: []string{col}, Where: Where{{Column: col, Op: "is_null"}}})
			is.NoErr(err)
			is.Equal(*l.Total, i)
			page, err := s.ListChanges(ctx, "acme", ChangeQuery{After: last})
			is.NoErr(err)
			is.Equal(page.Changes[0].Op, ChangeSchema)
			last = page.NextAfter
		}
	}
}
