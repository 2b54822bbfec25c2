package projectdata

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// Checkpoints. SQLite copies the write-ahead log back into the database
// file (a checkpoint) by default inside the commit that takes the log past
// 1,000 pages: that write, and every write queued behind it, waits for the
// copy and its fsync. Instead, the writer's WAL hook wakes a goroutine of
// the project (at that size, then each time the log has grown by a
// quarter of it: see logGrew) that checkpoints on a connection of its
// own, PASSIVE: it never waits for the writer or the readers, nor they
// for it. The log starts over only once a checkpoint has copied all of
// it; a writer that never pauses keeps it from catching up, so past twice
// that size (or when the checkpointer's connection cannot be opened: no
// file descriptor left) the writer checkpoints itself, as SQLite would
// have, when no checkpoint is under way, and past four times that size
// after the one under way.
//
// With Options.ReplicatorCheckpoints none of this runs: the replicator
// checkpoints.

// checkpointPages is the log size, in pages, that wakes the checkpointer
// (SQLite's default auto-checkpoint size).
const checkpointPages = 1000

// walKeepBytes is the size the writer cuts the log's file down to when the
// log starts over after a complete checkpoint (PRAGMA journal_size_limit):
// without it a big transaction (a table rebuilt, a bulk change, a large
// insert) left a file of its size on the disk for as long as the project
// stayed open (358 MB after a million-row table was rebuilt). It is four
// times checkpointPages of 4 KiB pages, past which the writer checkpoints
// itself, so the file of ordinary writes is never cut.
const walKeepBytes = 4 * checkpointPages * 4096

// checkpointer checkpoints one project's log in the background.
type checkpointer struct {
	mu     sync.Mutex    // held by whoever checkpoints: two at once, one would do nothing
	wake   chan struct{} // capacity 1: a checkpoint is due
	stop   chan struct{} // closed by close
	done   chan struct{} // closed when the goroutine has ended
	inline atomic.Bool   // the writer checkpoints itself (see run)
	runs   atomic.Int64  // checkpoints completed, for tests
	open   atomic.Bool   // the checkpointer's connection is open, for tests
	opens  atomic.Int64  // connections opened, for tests
	wakes  atomic.Int64  // the writer's wakes (logGrew), for tests

	wokenAt    int          // the log's size (pages) at the writer's last wake; the writer's alone
	lastCommit atomic.Int64 // when the writer last committed (Unix ns)
	idleArmed  atomic.Bool  // afterCommits is due
}

// checkpointIdle is how long after the writer's last commit the log is
// checkpointed, whatever its size: readers then read the database file
// alone and may keep their transactions between reads (see project.read).
const checkpointIdle = 250 * time.Millisecond

// committed notes a commit of the writer, and has the log checkpointed
// once no other came for checkpointIdle.
func (k *checkpointer) committed() {
	if k.inline.Load() {
		return // the writer checkpoints itself
	}
	k.lastCommit.Store(time.Now().UnixNano())
	if k.idleArmed.CompareAndSwap(false, true) {
		time.AfterFunc(checkpointIdle, k.afterCommits)
	}
}

// afterCommits wakes the checkpointer once the writer has been idle for
// checkpointIdle.
func (k *checkpointer) afterCommits() {
	if wait := checkpointIdle - time.Duration(time.Now().UnixNano()-k.lastCommit.Load()); wait > 0 {
		time.AfterFunc(wait, k.afterCommits)
		return
	}
	k.idleArmed.Store(false)
	if k.inline.Load() {
		return // the writer checkpoints itself
	}
	select {
	case k.wake <- struct{}{}:
	default: // already due
	}
}

// startCheckpointer hooks the writer's commits and starts the goroutine.
func (p *project) startCheckpointer() error {
	if p.store.opts.ReplicatorCheckpoints {
		return p.writer.db.WALAutoCheckpoint(0)
	}
	k := &checkpointer{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	// WALHook replaces SQLite's auto-checkpoint hook.
	p.writer.db.WALHook(func(db *sqlite3.Conn, schema string, pages int) error {
		k.committed()
		if pages < checkpointPages {
			return nil
		}
		if pages >= 2*checkpointPages || k.inline.Load() {
			// While the checkpointer is at work, the writer leaves it to
			// it, unless the log is past four times the size: then it
			// waits its turn (a writer outrunning the checkpoints slows
			// down, as it would checkpointing itself).
			if !k.mu.TryLock() {
				if pages < 4*checkpointPages {
					return nil
				}
				k.mu.Lock()
			}
			db.WALCheckpoint(schema, sqlite3.CHECKPOINT_PASSIVE) // as SQLite's own hook: its error is not the commit's
			k.mu.Unlock()
			return nil
		}
		k.logGrew(pages)
		return nil
	})
	p.ckpt = k
	go k.run(p)
	return nil
}

// logGrew wakes the checkpointer for a log of pages (at least
// checkpointPages) once the log has grown by a quarter of checkpointPages
// since the last wake, or has started over. A checkpoint copies what was
// committed when it began; the writer goes on meanwhile, so the log is not
// all copied when it ends. Woken by every commit then, the checkpointer
// ran back to back, each run copying a few pages and paying two fsyncs:
// about 1,000 checkpoints a second under single-row inserts from 16
// goroutines (BenchmarkCheckpointsUnderInserts: 9 to 12 per 1,000
// inserts, 0.75 now), and 8% of the CPU of a single-row create over
// HTTP. At twice checkpointPages the writer copies what is left itself
// (see startCheckpointer), and the log starts over.
func (k *checkpointer) logGrew(pages int) {
	if pages >= k.wokenAt && pages < k.wokenAt+checkpointPages/4 {
		return
	}
	k.wokenAt = pages
	k.wakes.Add(1)
	select {
	case k.wake <- struct{}{}:
	default: // already due
	}
}

// checkpointerKeep is how long the checkpointer keeps its connection open
// after a checkpoint. Under steady writes checkpoints come a few times a
// second, and opening the connection again for each cost about 2% of the
// server's CPU under single-row creates with idempotency keys.
const checkpointerKeep = 2 * time.Second

// run checkpoints whenever woken, until stopped. Its connection is open
// only while checkpoints come (every thousand pages or so, and once the
// writer has paused), and for checkpointerKeep after the last: an idle
// project holds none, nor its SQLite memory.
func (k *checkpointer) run(p *project) {
	defer close(k.done)
	var c *conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	keep := time.NewTimer(checkpointerKeep)
	keep.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-keep.C:
			c.close()
			c = nil
			k.open.Store(false)
			continue
		case <-k.wake:
		}
		keep.Stop()
		if c == nil {
			var err error
			if c, err = openConn(p.dbPath(), false, p.store.opts.BusyTimeout); err != nil {
				p.store.opts.Logger.Warn("checkpoints fall back to the writer: cannot open a connection for them", "project", p.slug, "err", err)
				k.inline.Store(true)
				return
			}
			p.store.heap.track(c)
			k.open.Store(true)
			k.opens.Add(1)
		}
		// The readers idle in the pool give up their parked snapshots
		// (see project.read): before, so that the checkpoint copies the
		// whole log; after, so that they begin again on the database
		// file, and the next write can start the log over.
		p.releaseParked(0)
		k.mu.Lock()
		_, _, err := c.db.WALCheckpoint("main", sqlite3.CHECKPOINT_PASSIVE)
		k.mu.Unlock()
		p.releaseParked(0)
		if err != nil {
			p.store.opts.Logger.Warn("checkpoint", "project", p.slug, "err", err)
		} else {
			k.runs.Add(1)
		}
		keep.Reset(checkpointerKeep)
	}
}

// close stops the goroutine and waits for it (and its checkpoint under
// way) to end.
func (k *checkpointer) close() {
	close(k.stop)
	<-k.done
}
