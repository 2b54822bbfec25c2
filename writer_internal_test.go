package projectdata

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

// writerTest is a project with a table t (id INTEGER PRIMARY KEY, v TEXT
// UNIQUE) and a count of the writer's commits.
type writerTest struct {
	s       *Store
	p       *project
	commits atomic.Int64
}

func newWriterTest(t *testing.T) *writerTest {
	t.Helper()
	ctx := context.Background()
	// No change log: its pruning would queue writes of its own.
	s, err := Open(t.TempDir(), &Options{changeLogOff: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "v", Unique: true}}}); err != nil {
		t.Fatal(err)
	}
	pctx, release, err := s.Pin(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	p, _ := s.pinned(pctx, "acme")
	w := &writerTest{s: s, p: p}
	p.writer.db.CommitHook(func() bool { w.commits.Add(1); return true })
	return w
}

// insert is a write that inserts one row with value v.
func insert(v string) func(c *conn) error {
	return func(c *conn) error { return c.exec(`INSERT INTO t (v) VALUES (?)`, v) }
}

// queued submits every write while the writer is held, so that they all
// wait in the queue, then lets the writer go and returns each outcome (a
// panic as an error starting "panic: ").
func (w *writerTest) queued(t *testing.T, ctxs []context.Context, fns []func(c *conn) error, alone []bool) []error {
	t.Helper()
	w.p.wsem <- struct{}{}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					errs[i] = fmt.Errorf("panic: %v", v)
				}
			}()
			errs[i] = w.p.submit(ctxs[i], fn, alone != nil && alone[i], 0)
		})
		waitQueued(w.p, i+1) // queue in order
	}
	w.commits.Store(0)
	<-w.p.wsem
	wg.Wait()
	return errs
}

// waitQueued waits until n writes wait in p's queue.
func waitQueued(p *project, n int) {
	for {
		p.wq.mu.Lock()
		queued := len(p.wq.pending)
		p.wq.mu.Unlock()
		if queued == n {
			return
		}
		runtime.Gosched()
	}
}

// values returns the v of every row of t, in id order.
func (w *writerTest) values(t *testing.T) []string {
	t.Helper()
	var out []string
	rows, err := w.s.ListRecords(context.Background(), "acme", "t", ListOptions{Order: "id", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows.Rows {
		out = append(out, r["v"].(string))
	}
	return out
}

func background(n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return ctxs
}

func TestGroupCommit(t *testing.T) {
	t.Run("ConcurrentWritesShareOneCommit", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		errs := w.queued(t, background(4), []func(c *conn) error{insert("a"), insert("b"), insert("c"), insert("d")}, nil)
		for _, err := range errs {
			is.NoErr(err)
		}
		is.Equal(w.commits.Load(), int64(1))
		is.Equal(w.values(t), []string{"a", "b", "c", "d"})
	})
	t.Run("AFailureUndoesOnlyItsOwnChanges", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		boom := errors.New("boom")
		failing := func(c *conn) error {
			if err := insert("x")(c); err != nil {
				return err
			}
			return boom // after writing a row
		}
		errs := w.queued(t, background(4), []func(c *conn) error{insert("a"), failing, insert("a"), insert("b")}, nil)
		is.NoErr(errs[0])
		is.True(errors.Is(errs[1], boom))
		is.True(errs[2] != nil) // a duplicate of a, in the same transaction
		is.NoErr(errs[3])
		is.Equal(w.commits.Load(), int64(1))
		is.Equal(w.values(t), []string{"a", "b"})
	})
	t.Run("APanicUndoesOnlyItsOwnChangesAndReachesItsCaller", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		panicking := func(c *conn) error {
			insert("x")(c)
			panic("bad write")
		}
		errs := w.queued(t, background(3), []func(c *conn) error{insert("a"), panicking, insert("b")}, nil)
		is.NoErr(errs[0])
		is.Equal(errs[1].Error(), "panic: bad write")
		is.NoErr(errs[2])
		is.Equal(w.values(t), []string{"a", "b"})
	})
	t.Run("ACancelledWriteThatFinishedCommitsAndOneCancelledInTheQueueIsDropped", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		ctxs := background(4)
		var cancel context.CancelFunc
		ctxs[1], cancel = context.WithCancel(context.Background())
		cancelling := func(c *conn) error { // cancelled after its work, before the commit: it commits
			err := insert("x")(c)
			cancel()
			return err
		}
		ended, end := context.WithCancel(context.Background())
		end()
		ctxs[2] = &endsLater{Context: context.Background(), after: ended} // ends while queued
		errs := w.queued(t, ctxs, []func(c *conn) error{insert("a"), cancelling, insert("y"), insert("b")}, nil)
		is.NoErr(errs[0])
		is.NoErr(errs[1])
		is.True(errors.Is(errs[2], context.Canceled))
		is.NoErr(errs[3])
		is.Equal(w.values(t), []string{"a", "x", "b"})
	})
	t.Run("AcknowledgedOnlyAfterTheCommit", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		var late atomic.Int64 // writes that returned with no commit after they ran
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				var ranAt int64
				err := w.p.write(context.Background(), func(c *conn) error {
					ranAt = w.commits.Load()
					return insert(fmt.Sprint(i))(c)
				})
				if err != nil {
					t.Error(err)
				}
				if w.commits.Load() == ranAt {
					late.Add(1)
				}
			})
		}
		wg.Wait()
		is.Equal(late.Load(), int64(0))
		is.Equal(len(w.values(t)), 16)
	})
	t.Run("SchemaAndBulkChangesRunAlone", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		errs := w.queued(t, background(3), []func(c *conn) error{insert("a"), insert("b"), insert("c")}, []bool{false, true, false})
		for _, err := range errs {
			is.NoErr(err)
		}
		is.Equal(w.commits.Load(), int64(3))
	})
	t.Run("OneWriteGroupMeansOneCommitEach", func(t *testing.T) {
		is := is.New(t)
		w := newWriterTest(t)
		w.s.opts.MaxWriteGroup = 1
		errs := w.queued(t, background(3), []func(c *conn) error{insert("a"), insert("b"), insert("c")}, nil)
		for _, err := range errs {
			is.NoErr(err)
		}
		is.Equal(w.commits.Load(), int64(3))
	})
}

// endsLater is a context that is live when a write is submitted and ended
// (as after) from the second time its Err is asked on.
type endsLater struct {
	context.Context
	after context.Context
	asked atomic.Int64
}

func (e *endsLater) Err() error {
	if e.asked.Add(1) > 1 {
		return e.after.Err()
	}
	return nil
}

func (e *endsLater) Done() <-chan struct{} { return nil }

// TestLoneWrites: a write with nobody to share its transaction runs
// without a savepoint; it commits, or leaves nothing when it fails or
// panics, and the writer goes on.
func TestLoneWrites(t *testing.T) {
	is := is.New(t)
	w := newWriterTest(t)
	ctx := context.Background()
	is.NoErr(w.p.write(ctx, insert("a")))
	is.Equal(w.commits.Load(), int64(1))

	err := w.p.write(ctx, func(c *conn) error {
		if err := insert("b")(c); err != nil {
			return err
		}
		return insert("a")(c) // a unique violation: b goes too
	})
	is.True(err != nil)

	func() {
		defer func() { is.Equal(recover(), "bad write") }()
		w.p.write(ctx, func(c *conn) error {
			insert("c")(c)
			panic("bad write")
		})
	}()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	is.Equal(w.p.write(cancelled, insert("d")), context.Canceled)

	is.NoErr(w.p.write(ctx, insert("e")))
	is.Equal(w.values(t), []string{"a", "e"})
	is.Equal(w.commits.Load(), int64(2))
}

// TestWritesAreAcknowledgedIffCommitted: writes through two Stores on one
// folder, sharing group commits, many with contexts that end while they
// wait or run, some with idempotency keys, next to bulk updates: every
// insert that returned nil committed both its rows, every one that failed
// committed none.
func TestWritesAreAcknowledgedIffCommitted(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, other, _ := storesOnOneFolder(t)
	var mu sync.Mutex
	acked := map[string]bool{}
	writeOnBoth(8, s, other, func(w int, st *Store) {
		for i := range 60 {
			name := fmt.Sprintf("%d-%d", w, i)
			cctx, cancel := context.WithTimeout(ctx, time.Duration(i%7)*200*time.Microsecond)
			if i%3 == 0 {
				cctx = WithIdempotencyKey(cctx, name)
			}
			var err error
			if i%5 == 4 {
				_, err = st.UpdateRecords(cctx, "acme", "items", BulkUpdate{Data: Row{"qty": i}, Where: Where{{Column: "qty", Op: "<", Value: 0}}})
			} else {
				_, err = st.Insert(cctx, "acme", "items", []Row{{"name": name, "qty": i}, {"name": name, "qty": -1}})
			}
			cancel()
			mu.Lock()
			if i%5 != 4 {
				acked[name] = err == nil
			}
			mu.Unlock()
		}
	})
	q, err := s.Query(ctx, "acme", QueryRequest{SQL: "SELECT name, count(*) AS n FROM items GROUP BY name", Limit: 1000})
	is.NoErr(err)
	rows := map[string]int64{}
	for _, r := range q.Rows {
		rows[r["name"].(string)] = r["n"].(int64)
	}
	for name, ok := range acked {
		if want := map[bool]int64{true: 2}[ok]; rows[name] != want {
			t.Errorf("insert %s (acknowledged: %v): %d rows", name, ok, rows[name])
		}
	}
}

// TestWriteQueueOrder: while no write alone waits, the queue is taken
// whole, in order; with writes alone, they are taken one at a time, that
// of the caller whose last write alone ran longest ago first (the oldest
// among equals), and the ordinary writes at the head of the queue, or
// that waited for a write alone, before them.
func TestWriteQueueOrder(t *testing.T) {
	is := is.New(t)
	var q writeQueue
	names := map[*writeRequest]string{}
	add := func(name string, caller int64, alone bool) {
		ctx := context.Background()
		if caller != 0 {
			ctx = WithCaller(ctx, Caller{TokenID: caller})
		}
		r := &writeRequest{ctx: ctx, alone: alone}
		names[r] = name
		q.add(r)
	}
	next := func() string { // as runQueued
		var out []string
		reqs := q.next(2)
		for _, r := range reqs {
			out = append(out, names[r])
		}
		if len(reqs) == 1 && reqs[0].alone {
			q.ranAlone()
		}
		return fmt.Sprint(out)
	}
	add("w1", 1, false)
	add("w2", 2, false)
	add("w3", 0, false)
	is.Equal(next(), "[w1 w2 w3]") // whole, in order

	add("w4", 2, false)
	add("a1", 1, true)
	add("w5", 2, false)
	add("a2", 1, true)
	add("b1", 2, true)
	add("w6", 1, false)
	add("w7", 0, false)
	add("c1", 0, true)
	is.Equal(next(), "[w4]")    // the head
	is.Equal(next(), "[a1]")    // none ran alone yet: the oldest
	is.Equal(next(), "[w5 w6]") // they waited for a1; at most 2
	is.Equal(next(), "[w7]")    //
	is.Equal(next(), "[b1]")    // 2 and 0 ran none alone: 2's is older
	is.Equal(next(), "[c1]")    // 0 ran none
	add("w8", 0, false)         // behind a2, queued when none ran
	add("d1", 5, true)
	is.Equal(next(), "[d1]") // 5 ran none; w8 waited for none
	is.Equal(next(), "[w8]") // it waited for d1
	is.Equal(next(), "[a2]")
	add("b2", 2, true)
	add("a3", 1, true)
	add("c2", 0, true)
	is.Equal(next(), "[b2]") // 2 ran longest ago: b1, then c1, d1 and a2
	is.Equal(next(), "[c2]")
	is.Equal(next(), "[a3]")
	is.Equal(next(), "[]")
	is.Equal(q.alone, 0)

	// A write removed from the line is not taken; callers are remembered
	// as far as maxServedCallers.
	for i := range maxServedCallers + 1 {
		add(fmt.Sprint("x", i), int64(10+i), true)
	}
	for i := range maxServedCallers + 1 {
		is.Equal(next(), fmt.Sprintf("[x%d]", i))
	}
	is.Equal(len(q.served), maxServedCallers)
	add("x0again", 10, true) // forgotten: as one that ran none
	add("x1again", 11, true)
	add("x16again", 26, true)
	add("y", 99, true)
	is.Equal(next(), "[x0again]")
	for r, name := range names {
		if name == "y" {
			is.True(q.remove(r))
			is.True(!q.remove(r))
		}
	}
	is.Equal(next(), "[x1again]")
	is.Equal(next(), "[x16again]")
	is.Equal(next(), "[]")
	is.Equal(q.alone, 0)
}

// TestRunnerWaitsNoLongerThanQueueTimeout: a write whose caller got the
// writer, but ran another caller's write alone with it (the one whose
// turn it was), still waits at most Options.QueueTimeout for its own: past
// it, it fails with ErrServerBusy rather than run late.
func TestRunnerWaitsNoLongerThanQueueTimeout(t *testing.T) {
	is := is.New(t)
	w := newWriterTest(t)
	w.s.opts.QueueTimeout = 50 * time.Millisecond
	a := WithCaller(context.Background(), Caller{TokenID: 1})
	is.NoErr(w.p.writeAlone(a, insert("first"))) // a had its turn

	other := &writeRequest{ctx: WithCaller(context.Background(), Caller{TokenID: 2}), alone: true, done: make(chan struct{})}
	other.fn = func(c *conn) error {
		time.Sleep(200 * time.Millisecond) // past a's QueueTimeout
		return insert("other")(c)
	}
	w.p.wq.add(other) // queued, its caller waiting elsewhere
	err := w.p.writeAlone(a, insert("late"))
	is.Equal(ErrorCode(err), ErrServerBusy)
	<-other.done
	is.NoErr(other.err)
	is.Equal(w.values(t), []string{"first", "other"})
}

// TestLoneWriteInterruptedFailsWithItsContext: a write alone (a schema
// change) whose context ends while SQLite runs one of its statements fails
// with the context's error, not SQLite's interruption: over HTTP that was a
// 500 internal_error instead of client_aborted.
func TestLoneWriteInterruptedFailsWithItsContext(t *testing.T) {
	w := newWriterTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := w.p.writeAlone(ctx, func(c *conn) error {
		cancel()
		// Runs until interrupted.
		return c.db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
