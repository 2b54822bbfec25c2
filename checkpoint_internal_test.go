package projectdata

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// fillLog inserts rows of about 1 KiB until the project's log has passed
// the checkpoint size several times over, and returns the project.
func fillLog(t *testing.T, s *Store) *project {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	rows := make([]Row, 100)
	for i := range rows {
		rows[i] = Row{"name": strings.Repeat("x", 1000), "qty": i}
	}
	for range 3 * checkpointPages / 25 { // a batch of ~100 KiB fills ~25 pages
		_, err := s.Insert(ctx, "acme", "items", rows)
		is.NoErr(err)
	}
	return acmeProject(t, s)
}

// dbFileSize is the size of the project's database file, without its log.
func dbFileSize(t *testing.T, s *Store) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(s.dir, "acme", dbFileName))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCheckpointsRunInTheBackground: the writer's commits leave the
// checkpoint to the project's checkpointer, which copies the log into the
// database file.
func TestCheckpointsRunInTheBackground(t *testing.T) {
	s := itemsStore(t, nil)
	before := dbFileSize(t, s)
	p := fillLog(t, s)
	waitFor(t, "a background checkpoint", func() bool { return p.ckpt.runs.Load() > 0 })
	waitFor(t, "the rows in the database file", func() bool { return dbFileSize(t, s) > before+checkpointPages*4096 })
	waitFor(t, "the checkpointer's connection closed", func() bool { return !p.ckpt.open.Load() }) // idle: none held
}

// TestBigTransactionLeavesNoBigLog: once a transaction far past the
// checkpoint size (here 40 rows of 1 MiB, about 80 MiB of log with their
// change records) is checkpointed, the next write cuts the log's file down
// to walKeepBytes; it kept the size of the transaction for as long as the
// project stayed open.
func TestBigTransactionLeavesNoBigLog(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, nil)
	rows := make([]Row, 40)
	for i := range rows {
		rows[i] = Row{"name": strings.Repeat("x", 1<<20), "qty": i}
	}
	_, err := s.Insert(ctx, "acme", "items", rows)
	is.NoErr(err)
	walSize := func() int64 {
		fi, err := os.Stat(filepath.Join(s.dir, "acme", dbFileName+"-wal"))
		is.NoErr(err)
		return fi.Size()
	}
	if size := walSize(); size < 4*walKeepBytes {
		t.Fatalf("the insert left a log of %d bytes, expected one far past %d", size, walKeepBytes)
	}
	waitFor(t, "the log's file cut down", func() bool {
		_, err := s.Insert(ctx, "acme", "items", []Row{{"name": "x"}}) // starts the log over once checkpointed
		is.NoErr(err)
		time.Sleep(50 * time.Millisecond)
		return walSize() <= walKeepBytes
	})
}

// TestCheckpointerKeepsItsConnection: checkpoints that follow each other
// (here those after each pause of the writer) share one connection of the
// checkpointer, instead of opening one each.
func TestCheckpointerKeepsItsConnection(t *testing.T) {
	s := itemsStore(t, nil)
	p := acmeProject(t, s)
	for range 3 {
		runs := p.ckpt.runs.Load()
		_, err := s.Insert(context.Background(), "acme", "items", []Row{{"name": "x"}})
		is.New(t).NoErr(err)
		waitFor(t, "the checkpoint after the write", func() bool { return p.ckpt.runs.Load() > runs })
	}
	if opens, runs := p.ckpt.opens.Load(), p.ckpt.runs.Load(); opens >= runs {
		t.Fatalf("the checkpointer opened %d connections for %d checkpoints", opens, runs)
	}
}

// TestCheckpointsFallBackToTheWriter: without its own connection the
// writer checkpoints itself after the commit that fills the log.
func TestCheckpointsFallBackToTheWriter(t *testing.T) {
	s := itemsStore(t, nil)
	ctx := context.Background()
	is.New(t).NoErr(s.withProject(ctx, "acme", "", func(p *project) error {
		p.ckpt.inline.Store(true)
		return nil
	}))
	before := dbFileSize(t, s)
	p := fillLog(t, s)
	if p.ckpt.runs.Load() != 0 {
		t.Fatal("the background checkpointer ran")
	}
	if dbFileSize(t, s) <= before+checkpointPages*4096 {
		t.Fatal("the writer did not checkpoint")
	}
}

// TestReplicatorCheckpointsLeaveTheLog: with ReplicatorCheckpoints nobody
// but the replicator checkpoints.
func TestReplicatorCheckpointsLeaveTheLog(t *testing.T) {
	s := itemsStore(t, &Options{ReplicatorCheckpoints: true})
	before := dbFileSize(t, s)
	p := fillLog(t, s)
	if p.ckpt != nil || dbFileSize(t, s) != before {
		t.Fatal("checkpointed without the replicator")
	}
}

// TestCheckpointerIsWokenAsTheLogGrows: past checkpointPages, the writer
// wakes the checkpointer each time the log has grown by a quarter of that
// size, not after every commit, and again once the log has started over.
func TestCheckpointerIsWokenAsTheLogGrows(t *testing.T) {
	is := is.New(t)
	k := &checkpointer{wake: make(chan struct{}, 1)}
	wakes := func(from, to int) (n int) {
		for pages := from; pages < to; pages += 3 { // commits of 3 pages
			k.logGrew(pages)
			select {
			case <-k.wake:
				n++
			default:
			}
		}
		return n
	}
	is.Equal(wakes(checkpointPages, 2*checkpointPages), 4) // at 1,000, 1,250, 1,500 and 1,750 pages
	is.Equal(wakes(checkpointPages, checkpointPages+3), 1) // the log started over, and grew again
}

// TestCommitsWakeTheCheckpointerAsTheLogGrows: the writer's commits (about
// 25 pages each, 3,000 in all) wake the checkpointer at most four times
// each time the log grows from checkpointPages to twice that, not after
// every commit past checkpointPages.
func TestCommitsWakeTheCheckpointerAsTheLogGrows(t *testing.T) {
	s := itemsStore(t, nil)
	p := fillLog(t, s)
	if wakes := p.ckpt.wakes.Load(); wakes == 0 || wakes > 12 {
		t.Fatalf("the writer woke the checkpointer %d times for 3,000 pages of log", wakes)
	}
}

// BenchmarkCheckpointsUnderInserts: single-row inserts from 8 goroutines
// per core, as a busy project takes them. checkpoints/1k_inserts counts the
// checkpointer's runs, wal_MB is the log file's size at the end.
//
//	go test . -run '^$' -bench CheckpointsUnderInserts -benchtime 300000x
func BenchmarkCheckpointsUnderInserts(b *testing.B) {
	s := itemsStore(b, nil)
	ctx := context.Background()
	p := acmeProject(b, s)
	runs := p.ckpt.runs.Load()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Insert(ctx, "acme", "items", []Row{{"name": "x", "qty": 1}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(p.ckpt.runs.Load()-runs)*1000/float64(b.N), "checkpoints/1k_inserts")
	fi, err := os.Stat(p.dbPath() + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "wal_MB")
}
