package httpapi

import (
	"container/list"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/projectdata/projectdata"
)

// bodyBudget bounds the request bodies read at once across all requests
// (Options.MaxBodyBytesInFlight). Each body is bounded by MaxBodyBytes, but
// a thousand of them read and decoded at once, waiting for a connection
// of their project, would take gigabytes: a request takes its body's
// share before reading it and gives it back when it ends, and waits in
// turn (first come, first served, so that small bodies do not starve big
// ones) when the budget is spent.
type bodyBudget struct {
	mu      sync.Mutex
	free    int64
	size    int64
	waiters list.List // *bodyWaiter, in arrival order
}

// bodyWaiter is a request waiting for its share.
type bodyWaiter struct {
	n     int64
	ready chan struct{} // closed when the share is taken for it
}

func newBodyBudget(size int64) *bodyBudget {
	return &bodyBudget{free: size, size: size}
}

// bodyShare is what a request takes of the budget: the bytes its body may
// hold (its Content-Length, or MaxBodyBytes when unknown), none without
// a body, at most the whole budget.
func (h *Handler) bodyShare(r *http.Request) int64 {
	n := r.ContentLength
	if n < 0 || n > h.opts.MaxBodyBytes {
		n = h.opts.MaxBodyBytes // a longer body is refused at MaxBodyBytes+1
	}
	return min(n, h.bodyRoom.size)
}

// acquire takes n bytes of the budget, waiting up to wait, or until ctx
// ends, for earlier requests to give theirs back: then it fails with
// ErrServerBusy (or ctx's error) and takes nothing.
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if n == 0 {
		return nil
	}
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	w := &bodyWaiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errorf(projectdata.ErrServerBusy, "the server is reading as many request bodies as it may at once; retry")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.free += n
	default:
		b.waiters.Remove(e)
	}
	b.grant() // the head may have left: the next ones may fit
	return err
}

// release gives back n bytes taken by acquire.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	b.grant()
	b.mu.Unlock()
}

// grant takes their shares for the waiters at the head of the queue that
// fit. b.mu is held.
func (b *bodyBudget) grant() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*bodyWaiter)
		if w.n > b.free {
			return
		}
		b.free -= w.n
		b.waiters.Remove(e)
		close(w.ready)
	}
}
