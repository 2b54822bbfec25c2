package projectdata

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// slots hands out a fixed number of slots (a project's readers, its export
// slots) to the operations that need one. While one is free, an operation
// takes it at once. When none is, operations wait, and a slot that comes
// free goes to the waiting caller that holds the fewest slots, the one
// waiting longest among those: a caller (a token; operations without one
// are one caller) that keeps every slot busy with slow queries waits behind
// its own requests, and another caller's request gets the next slot that
// comes free, instead of the queue's end.
type slots struct {
	mu      sync.Mutex
	free    int
	held    map[int64]int // slots in use, by caller; callers holding none are kept up to keptCallers
	waiting []*slotWaiter // oldest first
}

// slotWaiter is an operation waiting for a slot.
type slotWaiter struct {
	caller  int64
	granted bool          // the slot is the waiter's; guarded by slots.mu
	ready   chan struct{} // closed once granted
}

// keptCallers bounds the callers holding no slot that slots keeps counts of.
const keptCallers = 64

func newSlots(n int) *slots {
	return &slots{free: n, held: make(map[int64]int)}
}

// callerOf names the caller that ctx carries for slots: its token, or 0
// for an operation without one.
func callerOf(ctx context.Context) int64 {
	if c, ok := CallerFrom(ctx); ok {
		return c.TokenID
	}
	return 0
}

// tryTake takes a slot for caller if one is free now.
func (s *slots) tryTake(caller int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == 0 {
		return false
	}
	s.free--
	s.held[caller]++
	return true
}

// take takes a slot for caller, waiting for one at most timeout. It returns
// ctx's error if ctx ends first, and errTimeout (the caller's error) if the
// wait runs out; either way the caller holds no slot.
func (s *slots) take(ctx context.Context, caller int64, timeout time.Duration, errTimeout func() error) error {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.held[caller]++
		s.mu.Unlock()
		return nil
	}
	w := &slotWaiter{caller: caller, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errTimeout()
	}
	s.mu.Lock()
	if !w.granted {
		s.removeWaiter(w)
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	// The slot came as the wait ended: a wait that ran out keeps it; an
	// operation whose context ended gives it to the next.
	if ctx.Err() != nil {
		s.give(caller)
		return err
	}
	return nil
}

// give gives back a slot caller took.
func (s *slots) give(caller int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[caller]--
	if len(s.held) > keptCallers {
		// Callers holding none are kept (a delete and an insert for each
		// operation of the one caller of most projects cost more than the
		// rest of the slot), up to here; those holding some are at most
		// the slots' number.
		maps.DeleteFunc(s.held, func(_ int64, n int) bool { return n == 0 })
	}
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	w := s.next()
	s.removeWaiter(w)
	s.held[w.caller]++
	w.granted = true
	close(w.ready)
}

// next returns the waiter that a slot coming free goes to: of the callers
// that hold the fewest slots, the one waiting longest.
func (s *slots) next() *slotWaiter {
	best, bestHeld := s.waiting[0], s.held[s.waiting[0].caller]
	seen := best.caller
	for _, w := range s.waiting[1:] {
		if bestHeld == 0 {
			break // none holds fewer
		}
		if w.caller == seen {
			// A later waiter of the caller just weighed: a line of one
			// caller's waiters costs no lookup.
			continue
		}
		seen = w.caller
		if h := s.held[w.caller]; h < bestHeld {
			best, bestHeld = w, h
		}
	}
	return best
}

// removeWaiter takes w out of the waiting line; s.mu is held.
func (s *slots) removeWaiter(w *slotWaiter) {
	for i, x := range s.waiting {
		if x == w {
			s.waiting = slices.Delete(s.waiting, i, i+1)
			return
		}
	}
}
