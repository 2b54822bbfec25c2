package projectdata

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// budgetContext is a context that ends at a deadline, as
// context.WithTimeout's does, with no timer until someone asks for Done:
// what watches a query's execution budget only polls Err (SQLite's
// interrupt, Conn.SetInterrupt, every thousand VM instructions; the
// sandbox's authorizer), and a query usually ends long before its budget.
// The timer's setup and teardown were some 4% of a query by primary key
// over HTTP under wrk.
type budgetContext struct {
	context.Context // the parent
	deadline        time.Time
	stopped         atomic.Bool // stop was called

	once   sync.Once
	timed  context.Context // made by the first Done, or nil
	cancel context.CancelFunc
}

// withBudget returns parent with a budget of d from now, and the function
// that releases it (as context.WithTimeout's cancel does).
func withBudget(parent context.Context, d time.Duration) (*budgetContext, context.CancelFunc) {
	b := &budgetContext{Context: parent, deadline: time.Now().Add(d)}
	return b, b.stop
}

// Deadline is the budget's end, or the parent's when that comes first.
func (b *budgetContext) Deadline() (time.Time, bool) {
	if d, ok := b.Context.Deadline(); ok && d.Before(b.deadline) {
		return d, true
	}
	return b.deadline, true
}

// Err is the parent's error, else context.Canceled once released, else
// context.DeadlineExceeded once the budget has run out.
func (b *budgetContext) Err() error {
	if err := b.Context.Err(); err != nil {
		return err
	}
	if b.stopped.Load() {
		return context.Canceled
	}
	if !time.Now().Before(b.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Done makes, the first time, the timer that closes it at the deadline.
func (b *budgetContext) Done() <-chan struct{} {
	b.once.Do(func() {
		b.timed, b.cancel = context.WithDeadline(b.Context, b.deadline)
	})
	if b.timed == nil { // released before any Done
		return closedChan
	}
	return b.timed.Done()
}

// closedChan is the Done of a released budgetContext that had no timer.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (b *budgetContext) stop() {
	b.stopped.Store(true)
	b.once.Do(func() {}) // Done makes no timer from now on
	if b.cancel != nil {
		b.cancel()
	}
}
