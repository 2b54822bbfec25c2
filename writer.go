package projectdata

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Group commit. Writes to a project queue for its one writer connection.
// Whoever gets the writer runs the next writes queued: consecutive
// ordinary writes share one transaction, each in a savepoint of its own,
// so one failure undoes only its own changes; a write is acknowledged
// (write returns) only after the shared COMMIT. Schema and bulk changes
// (writeAlone) run in a transaction of their own, one at a time: each may
// hold the writer for long, so the writes queued meanwhile are looked at
// again after each (see writeQueue.next).

// writeRequest is one unit of work waiting for the writer connection.
type writeRequest struct {
	ctx   context.Context
	fn    func(c *conn) error
	alone bool   // runs in its own transaction, interruptible by ctx
	seq   uint64 // order in the queue (see writeQueue.add)
	// budget, when not zero, bounds how long fn of a write alone runs:
	// SQLite is interrupted when it runs out (see writeBulk).
	budget time.Duration

	changed  bool // fn logged changes (see loggingChanges)
	err      error
	panicked any           // a panic of fn, raised again in the caller
	done     chan struct{} // closed when err and panicked are final
}

// ran reports whether r has run (or failed for good).
func (r *writeRequest) ran() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// writeQueue holds the writes waiting for the writer connection.
type writeQueue struct {
	mu      sync.Mutex
	pending []*writeRequest
	spare   []*writeRequest // the slice of the last writes run, emptied for the next (see recycle)
	alone   int             // writes alone in pending
	seq     uint64          // writes queued so far
	// dueBefore: the ordinary writes queued before it waited for a write
	// alone, and served are the callers of the last writes alone taken,
	// the latest last (at most maxServedCallers); see next.
	dueBefore uint64
	served    []int64
}

// add queues r.
func (q *writeQueue) add(r *writeRequest) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	r.seq = q.seq
	q.pending = append(q.pending, r)
	if r.alone {
		q.alone++
	}
}

// ranAlone notes that a write alone has run: the ordinary writes queued
// meanwhile, or before it, go next.
func (q *writeQueue) ranAlone() {
	q.mu.Lock()
	q.dueBefore = q.seq + 1
	q.mu.Unlock()
}

// remove takes r out of the queue, unless a runner has taken it.
func (q *writeQueue) remove(r *writeRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.pending, r)
	if i < 0 {
		return false
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	if r.alone {
		q.alone--
	}
	return true
}

// takeAll empties the queue and returns what it held.
func (q *writeQueue) takeAll() []*writeRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	reqs := q.pending
	q.pending, q.alone = nil, 0
	return reqs
}

// maxServedCallers bounds writeQueue.served.
const maxServedCallers = 16

// next takes the writes to run next out of the queue, in order but for
// the writes alone. While none waits (the common case), it takes every
// write queued, which the runner splits into groups. Else: the ordinary
// writes at the head of the queue and those that waited for a write alone
// (at most max), if any; or one write alone, that of the caller (a token;
// writes without one are one caller) whose last write alone ran longest
// ago, the oldest among equals. So the ordinary writes waiting run after
// each write alone, and a token that queues many slow bulk changes makes
// its own wait, not another token's.
func (q *writeQueue) next(max int) []*writeRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.alone == 0 {
		reqs := q.pending
		q.pending, q.spare = q.spare, nil
		return reqs
	}
	var reqs []*writeRequest
	head := true // before the first write alone
	q.pending = slices.DeleteFunc(q.pending, func(r *writeRequest) bool {
		if r.alone {
			head = false
			return false
		}
		if len(reqs) == max || !head && r.seq >= q.dueBefore {
			return false
		}
		reqs = append(reqs, r)
		return true
	})
	if len(reqs) > 0 {
		return reqs
	}
	best, bestRank := -1, 0
	for i, r := range q.pending {
		if !r.alone {
			continue
		}
		// The rank of r's caller: -1 if it ran no recent write alone, else
		// where its latest is in served (0: longest ago).
		rank := slices.Index(q.served, callerOf(r.ctx))
		if best < 0 || rank < bestRank {
			best, bestRank = i, rank
		}
		if rank < 0 {
			break // none ran longer ago
		}
	}
	r := q.pending[best]
	q.pending = slices.Delete(q.pending, best, best+1)
	q.alone--
	caller := callerOf(r.ctx)
	if i := slices.Index(q.served, caller); i >= 0 {
		q.served = slices.Delete(q.served, i, i+1)
	} else if len(q.served) == maxServedCallers {
		q.served = slices.Delete(q.served, 0, 1)
	}
	q.served = append(q.served, caller)
	return []*writeRequest{r}
}

// maxSpareWrites bounds the slice a queue keeps for reuse.
const maxSpareWrites = 1024

// recycle keeps reqs, a slice next returned whose writes have all run,
// for the queue to fill again: a write then queues without an allocation.
func (q *writeQueue) recycle(reqs []*writeRequest) {
	if cap(reqs) > maxSpareWrites {
		return
	}
	clear(reqs) // the writes run are not kept from the collector
	q.mu.Lock()
	q.spare = reqs[:0]
	q.mu.Unlock()
}

// write runs fn on the writer connection inside a transaction: all of fn's
// changes commit together, or none do (on error, panic, or ctx ending
// before fn ran). Concurrent writes may share the
// transaction, each in its own savepoint; write returns once that
// transaction committed. fn must not keep its conn, and must write through
// it everything that has to commit with its effect.
func (p *project) write(ctx context.Context, fn func(c *conn) error) error {
	return p.submit(ctx, fn, false, 0)
}

// writeAlone is write in a transaction of its own, interruptible by ctx:
// for schema changes (which other writes must not see uncommitted, and
// which may run long on a big table: they have no budget).
func (p *project) writeAlone(ctx context.Context, fn func(c *conn) error) error {
	return p.submit(ctx, fn, true, 0)
}

// writeBulk is writeAlone under the write budget, Options.WriteTimeout,
// counted from when fn starts on the writer: for the bulk changes, whose
// cost the caller's where decides and which hold every other write of the
// project while they run. Past the budget SQLite is interrupted, the
// transaction rolls back whole, and the write fails with
// ErrQueryBudgetExceeded (see writeBudgetError).
//
// Writes in groups (write) have no budget: SQLite rolls back the whole
// transaction of a write statement it interrupts, savepoints or not, so
// the budget of one write would undo the others of its group; and each is
// bounded by its size (Options.MaxInsertRows rows, or one row).
func (p *project) writeBulk(ctx context.Context, fn func(c *conn) error) error {
	return p.submit(ctx, fn, true, p.store.opts.WriteTimeout)
}

// submit queues the write and waits for its outcome: whenever it gets the
// writer, it runs the next writes queued (see writeQueue.next), until
// they include its own; else another runner takes it. A write still in
// the queue when ctx ends is dropped with ctx's error; one still there
// after Options.QueueTimeout, with ErrServerBusy. A write alone with a
// budget (see writeBulk) runs at most that long.
func (p *project) submit(ctx context.Context, fn func(c *conn) error, alone bool, budget time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.faulted.Load() {
		return errWriterFault(p.slug)
	}
	fn = recordingAnswer(ctx, fn) // an idempotent operation's answer commits with its effect
	r := &writeRequest{ctx: ctx, alone: alone, budget: budget, done: make(chan struct{})}
	r.fn = p.loggingChanges(r, fn)
	p.wq.add(r)
	queued := time.Now()
	if tryEnter(p.wsem) {
		p.runHolding()
	}
	if !r.ran() {
		if err := p.awaitWrite(ctx, r, queued); err != nil {
			return err
		}
	}
	// Taken by a runner (this one or another, which closes done before
	// it lets the writer go).
	<-r.done
	if r.panicked != nil {
		panic(r.panicked)
	}
	if r.err == nil && r.changed {
		p.store.changesCommitted(p) // after the commit: followers may read it
	}
	return r.err
}

// awaitWrite waits until r, queued at queued, is taken by a runner: this
// one, each time it gets the writer, or another. It returns ctx's error,
// or ErrServerBusy once r has been queued Options.QueueTimeout, when r was
// still in the queue (and so is not anymore); time spent running others'
// writes counts. The wait is counted in the Store's Stats.
func (p *project) awaitWrite(ctx context.Context, r *writeRequest, queued time.Time) error {
	defer func() {
		p.store.queue.waits.Add(1)
		p.store.queue.nanos.Add(int64(time.Since(queued)))
	}()
	timeout := p.store.opts.QueueTimeout
	t := time.NewTimer(timeout - time.Since(queued))
	defer t.Stop()
	for time.Since(queued) < timeout {
		select {
		case p.wsem <- struct{}{}:
			p.runHolding()
			if r.ran() {
				return nil
			}
			continue
		case <-r.done:
			return nil
		case <-ctx.Done():
			if p.wq.remove(r) {
				return ctx.Err()
			}
			return nil
		case <-t.C:
		}
		break
	}
	if p.wq.remove(r) {
		return errorf(ErrServerBusy, "project %q is busy: the writer did not come free within %s; retry", p.slug, timeout)
	}
	return nil // taken meanwhile
}

// loggingChanges wraps the fn of r as one unit of work of the change log:
// its changes share a timestamp, and r notes whether it logged any.
func (p *project) loggingChanges(r *writeRequest, fn func(c *conn) error) func(c *conn) error {
	return func(c *conn) error {
		c.beginUnit(p.store.now(), p.store.opts.changeLogOff)
		if err := fn(c); err != nil {
			return err
		}
		r.changed = c.changes.records > 0
		return c.checkChangeLog()
	}
}

// runHolding runs the next writes queued (see writeQueue.next) with the
// writer, which the caller took (p.wsem), and gives it back, even when a
// write's runner panics.
func (p *project) runHolding() {
	defer func() { <-p.wsem }()
	p.runQueued()
}

// runQueued runs the next writes queued, holding the writer. A panic that
// escapes a group (see runGroup) goes on after the writes taken but not
// yet run, and those queued, have failed: none waits for ever, and none
// runs on a connection in a state the panic left unknown, nor without its
// caller, should the runner's own write be among them.
func (p *project) runQueued() {
	// Handlers about to submit a write get to queue it first and share
	// this group's commit: with the cores busy, groups were about two
	// writes, and every commit costs its pages' WAL writes and locks.
	runtime.Gosched()
	taken := p.wq.next(p.store.opts.MaxWriteGroup)
	reqs := taken
	defer func() {
		if v := recover(); v != nil {
			for _, r := range append(reqs, p.wq.takeAll()...) {
				r.err = errGroupFailed
				close(r.done)
			}
			panic(v)
		}
	}()
	for len(reqs) > 0 {
		if p.faulted.Load() {
			for _, r := range reqs {
				r.err = errWriterFault(p.slug)
				close(r.done)
			}
			return
		}
		n := 1
		for !reqs[0].alone && n < len(reqs) && n < p.store.opts.MaxWriteGroup && !reqs[n].alone {
			n++
		}
		group := reqs[:n]
		reqs = reqs[n:] // what is left to run, should group's runner panic
		switch {
		case group[0].alone:
			p.runAlone(group[0])
			p.wq.ranAlone()
		case n == 1:
			p.runSingle(group[0])
		default:
			p.runGroup(group)
		}
	}
	p.wq.recycle(taken)
}

// errGroupFailed answers the writes of a group whose transaction failed
// with the writer's state unknown (a panic, SQLite's rollback of the whole
// transaction), or that did not run for it: their changes did not commit.
// It carries none of the writes' own codes, so that no idempotent answer
// is stored for them and a retry runs.
var errGroupFailed = errors.New("a write sharing the transaction failed, and the transaction with it; retry")

// runAlone runs one write in its own immediate transaction, with SQLite
// interrupted when its context ends.
func (p *project) runAlone(r *writeRequest) {
	defer close(r.done)
	defer func() {
		if v := recover(); v != nil {
			if isTrap(v) {
				p.writerTrapped(p.writer)
				r.err = errWriterFault(p.slug)
				return
			}
			r.panicked = v
		}
	}()
	if r.err = r.ctx.Err(); r.err != nil {
		return
	}
	r.err = func() (err error) {
		c := p.writer
		old := c.db.SetInterrupt(r.ctx)
		tx, err := c.db.BeginImmediate()
		if err != nil {
			c.db.SetInterrupt(old)
			return dbError(r.ctx, err)
		}
		defer tx.End(&err)
		// Runs before tx.End: work that finished commits even if its
		// context ended meanwhile; work the context interrupted failed,
		// so it rolls back (SQLite rolled it back already, if the
		// interruption stopped a statement that writes).
		defer c.db.SetInterrupt(old)
		if r.budget <= 0 {
			// A statement its context interrupted (a schema change's
			// CREATE INDEX, say) fails with the context's error.
			return dbError(r.ctx, r.fn(c))
		}
		// The budget starts now, past the queue and the lock's wait
		// (QueueTimeout's and BusyTimeout's); it is r's alone, released
		// before the writer runs another write.
		budget, release := withBudget(r.ctx, r.budget)
		defer release()
		c.db.SetInterrupt(budget)
		return p.writeBudgetError(r.ctx, c, r.fn(c), "the write")
	}()
}

// writeBudgetError returns err, or ErrQueryBudgetExceeded if err is the
// interruption of a write by its budget (see writeBulk): SQLite was
// interrupted, and the context c's interrupt watches has ended while the
// caller's, ctx, has not (the caller's own end stays its context's error).
// what names the write in the message.
func (p *project) writeBudgetError(ctx context.Context, c *conn, err error, what string) error {
	if err == nil || !errors.Is(err, sqlite3.INTERRUPT) || ctx.Err() != nil || c.db.GetInterrupt().Err() == nil {
		return err
	}
	return errorf(ErrQueryBudgetExceeded, "%s ran past the write budget of %s and was rolled back, changing nothing; narrow the where, or add an index on the columns it tests", what, p.store.opts.WriteTimeout)
}

// runSingle is runGroup for a group of one write: its transaction is its
// own, so it needs no savepoint (whose journal copies every page the write
// changes); on error or panic the transaction rolls back.
func (p *project) runSingle(r *writeRequest) {
	c := p.writer
	defer close(r.done)
	if r.err = r.ctx.Err(); r.err != nil {
		return
	}
	if err := c.exec(`BEGIN IMMEDIATE`); err != nil {
		r.err = dbError(r.ctx, err)
		return
	}
	c.keepVersion()
	defer c.forgetVersion()
	committed := false
	defer func() {
		if v := recover(); v != nil {
			if isTrap(v) {
				p.writerTrapped(c)
				r.err = errWriterFault(p.slug)
				return
			}
			r.panicked = v
		}
		if !committed && !c.db.GetAutocommit() {
			c.exec(`ROLLBACK`)
		}
	}()
	// As in a group, a write whose fn finished commits even if its
	// context ended since.
	if r.err = r.fn(c); r.err != nil {
		return
	}
	if err := c.exec(`COMMIT`); err != nil {
		r.err = dbError(r.ctx, err)
		return
	}
	committed = true
}

// runGroup runs writes in one immediate transaction, each in a savepoint,
// and commits them together. A write whose context ended before it ran is
// skipped with its context's error; one whose fn finished commits with the
// group.
func (p *project) runGroup(reqs []*writeRequest) {
	c := p.writer
	var joined []*writeRequest // released into the transaction
	committed := false
	defer c.forgetVersion()
	defer func() {
		v := recover()
		if v != nil { // in BEGIN or COMMIT: no write of the group is acknowledged
			lost := errGroupFailed
			if isTrap(v) {
				p.writerTrapped(c)
				lost, v = errWriterFault(p.slug), nil
			} else if !c.db.GetAutocommit() {
				c.exec(`ROLLBACK`)
			}
			for _, r := range reqs {
				if r.err == nil && r.panicked == nil && !committed {
					r.err = lost
				}
			}
		}
		for _, r := range reqs {
			close(r.done)
		}
		if v != nil {
			panic(v)
		}
	}()
	begin := func(rest []*writeRequest) bool {
		if err := c.exec(`BEGIN IMMEDIATE`); err != nil {
			for _, r := range rest {
				r.err = dbError(r.ctx, err)
			}
			return false
		}
		c.keepVersion()
		return true
	}
	if !begin(reqs) {
		return
	}
	for i, r := range reqs {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		ok := p.runSavepoint(c, r)
		if c.trapped {
			// The transaction is gone with the writer, and the writes that
			// had joined it; the rest do not run.
			for _, j := range joined {
				j.err = errWriterFault(p.slug)
			}
			for _, rest := range reqs[i+1:] {
				rest.err = errWriterFault(p.slug)
			}
			return
		}
		if c.db.GetAutocommit() {
			// SQLite rolled the whole transaction back (an I/O error, a
			// full disk): the writes that had joined it are lost too. Their
			// error is a failure of the service, not r's: it carries none of
			// r's code, so that no idempotent answer is stored for them and
			// a retry runs.
			for _, j := range joined {
				j.err = errGroupFailed
			}
			joined = joined[:0]
			if !begin(reqs[i+1:]) {
				return
			}
			continue
		}
		if ok {
			joined = append(joined, r)
		}
	}
	if err := c.exec(`COMMIT`); err != nil {
		for _, j := range joined {
			j.err = dbError(j.ctx, err)
		}
		if !c.db.GetAutocommit() {
			c.exec(`ROLLBACK`)
		}
		return
	}
	committed = true
}

// runSavepoint runs one write of a group in a savepoint and reports
// whether its changes joined the transaction.
func (p *project) runSavepoint(c *conn, r *writeRequest) (joined bool) {
	defer func() {
		if v := recover(); v != nil {
			if isTrap(v) {
				p.writerTrapped(c)
				r.err = errWriterFault(p.slug)
				joined = false
				return
			}
			r.panicked = v
			rollbackSavepoint(c)
			joined = false
		}
	}()
	if err := c.exec(`SAVEPOINT pd_write`); err != nil {
		r.err = dbError(r.ctx, err)
		return false
	}
	// A write whose fn finished commits even if its context ended since:
	// the work is done, and undoing it would turn success into failure.
	err := r.fn(c)
	if err == nil {
		err = c.exec(`RELEASE pd_write`)
	}
	if err != nil {
		r.err = err
		rollbackSavepoint(c)
		return false
	}
	return true
}

// rollbackSavepoint undoes the changes since SAVEPOINT pd_write and ends
// it; if that fails, it rolls the whole transaction back.
func rollbackSavepoint(c *conn) {
	if c.db.GetAutocommit() {
		return
	}
	if c.exec(`ROLLBACK TO pd_write`) != nil || c.exec(`RELEASE pd_write`) != nil {
		c.exec(`ROLLBACK`)
	}
}
