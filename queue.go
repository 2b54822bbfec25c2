package projectdata

import (
	"context"
	"sync/atomic"
	"time"
)

// queueStats counts the operations that had to wait for a connection of
// their project (the writer, or a reader slot), and how long they waited in
// all. Its fields are updated atomically.
type queueStats struct {
	waits atomic.Int64
	nanos atomic.Int64
}

// enter takes a slot of sl (a project's readers, its export slots, its
// point-read connection) for the caller ctx carries, waiting at most
// Options.QueueTimeout: a longer wait is ErrServerBusy, so that a crowd of
// slow requests makes others retry rather than pile up. A wait is counted
// in the Store's Stats; taking a free slot is not. enter returns the
// caller the slot was taken for, to give it back with (slots.give).
func (p *project) enter(ctx context.Context, sl *slots, what string) (caller int64, err error) {
	caller = callerOf(ctx)
	if sl.tryTake(caller) {
		return caller, nil
	}
	start := time.Now()
	defer func() {
		p.store.queue.waits.Add(1)
		p.store.queue.nanos.Add(int64(time.Since(start)))
	}()
	return caller, sl.take(ctx, caller, p.store.opts.QueueTimeout, func() error {
		return errorf(ErrServerBusy, "project %q is busy: no %s came free within %s; retry", p.slug, what, p.store.opts.QueueTimeout)
	})
}

// awaitOpen waits for p, which another operation opens, to be ready, as
// long as enter waits for a connection: the first open after an upgrade
// migrates the project's data, which takes seconds on big tables (version
// 8 reads every DATETIME column), and the operations that come meanwhile
// are told to retry rather than pile up.
func (p *project) awaitOpen(ctx context.Context) error {
	select {
	case <-p.ready:
		return nil
	default:
	}
	t := time.NewTimer(p.store.opts.QueueTimeout)
	defer t.Stop()
	select {
	case <-p.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errorf(ErrServerBusy, "project %q is still opening after %s; retry", p.slug, p.store.opts.QueueTimeout)
	}
}

// tryEnter takes a slot of sem if one is free now.
func tryEnter(sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// tryHoldWriter takes the writer (p.wsem) if it is free now and usable:
// not faulted, its instance gone (see writerTrapped). The caller gives it
// back.
func (p *project) tryHoldWriter() bool {
	if !tryEnter(p.wsem) {
		return false
	}
	if p.faulted.Load() {
		<-p.wsem
		return false
	}
	return true
}

// readOnWriter runs fn, which only reads, on the writer if the writer is
// free now (see readPoint), outside a transaction, and reports whether it
// ran. A trap of the writer there is handled as in a write.
func (p *project) readOnWriter(ctx context.Context, fn func(c *conn) error) (ran bool, err error) {
	if !p.tryHoldWriter() {
		return false, nil
	}
	defer func() { <-p.wsem }()
	c := p.writer
	defer func() {
		if v := recover(); v != nil {
			if !isTrap(v) {
				panic(v)
			}
			p.writerTrapped(c)
			ran, err = true, errWriterFault(p.slug)
		}
	}()
	old := c.db.SetInterrupt(ctx)
	defer c.db.SetInterrupt(old)
	return true, fn(c)
}

// tryWrite runs fn as write does if the writer is free now, and the
// database's write lock too, and reports whether it ran: for work that is
// skipped rather than waited for. It waits neither for this Store's writes
// nor, through the busy timeout, for another connection's (another process
// on the folder).
func (p *project) tryWrite(ctx context.Context, fn func(c *conn) error) (bool, error) {
	if !p.tryHoldWriter() {
		return false, nil
	}
	defer func() { <-p.wsem }()
	w := p.writer
	if err := w.db.BusyTimeout(0); err != nil {
		return false, err
	}
	r := &writeRequest{ctx: ctx, fn: fn, alone: true, done: make(chan struct{})}
	p.runAlone(r)
	if !w.trapped {
		if err := w.db.BusyTimeout(p.store.opts.BusyTimeout); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	if ErrorCode(r.err) == ErrServerBusy { // another connection holds the lock
		return false, nil
	}
	return true, r.err
}

// readPoint runs fn on the project's connection for point reads, a
// read-only connection of its own: a token check (or a bookkeeping check,
// such as whether the change log has anything to prune) never waits behind
// the queries that hold the readers, nor behind the writer, and takes no
// reader from them. Its reads are point reads, so one connection serves
// them in turn.
//
// That connection is opened the first time the writer is busy: until then
// fn runs on the writer, which it does not wait for (see readOnWriter). A
// request with a made-up token on a project it opened thus opens one
// connection, not two, and a project whose tokens stay cached needs none.
func (p *project) readPoint(ctx context.Context, fn func(c *conn) error) (err error) {
	if !p.pointOpened.Load() {
		if ran, err := p.readOnWriter(ctx, fn); ran {
			return err
		}
	}
	caller, err := p.enter(ctx, p.psem, "point-read connection")
	if err != nil {
		return err
	}
	defer p.psem.give(caller)
	if p.point == nil {
		c, err := p.openReader("point-read connection")
		if err != nil {
			return err
		}
		p.point = c
		p.pointOpened.Store(true)
	}
	c := p.point
	old := c.db.SetInterrupt(ctx)
	defer func() {
		if c.trapped {
			c.close()
			p.point = nil // the next point read opens another
			return
		}
		c.db.SetInterrupt(old)
	}()
	defer recoverReaderTrap(c, &err)
	return fn(c)
}
