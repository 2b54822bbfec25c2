package projectdata

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"
)

// takeAllSlots takes every free slot of sl, as operations would, for a
// caller of its own, and returns the function that gives them back.
func takeAllSlots(sl *slots) (giveBack func()) {
	const caller = -1
	n := 0
	for sl.tryTake(caller) {
		n++
	}
	return func() {
		for range n {
			sl.give(caller)
		}
	}
}

// TestSlotsGoToTheCallerHoldingFewest: a slot that comes free goes to the
// waiting caller holding the fewest, the longest waiting among equals, and
// each caller's waiters are served in their order.
func TestSlotsGoToTheCallerHoldingFewest(t *testing.T) {
	is := is.New(t)
	const a, b, c = 1, 2, 3
	sl := newSlots(2)
	is.True(sl.tryTake(a))
	is.True(sl.tryTake(a))
	is.True(!sl.tryTake(b)) // none free

	served := make(chan string, 8)
	wait := func(caller int64, name string) {
		n := len(waitersOf(sl))
		go func() {
			err := sl.take(context.Background(), caller, time.Minute, nil)
			if err != nil {
				served <- err.Error()
				return
			}
			served <- name
		}()
		for len(waitersOf(sl)) == n { // queued before the next comes
			time.Sleep(time.Millisecond)
		}
	}
	wait(a, "a1")
	wait(a, "a2")
	wait(b, "b1")
	wait(a, "a3")
	wait(b, "b2")
	wait(c, "c1")

	next := func() string {
		select {
		case name := <-served:
			return name
		case <-time.After(10 * time.Second):
			t.Fatal("no waiter was served")
			return ""
		}
	}
	sl.give(a) // a holds 1, b and c none: b1 waited longest
	is.Equal(next(), "b1")
	sl.give(a) // a holds 0, b 1, c 0: a1 waited longest
	is.Equal(next(), "a1")
	sl.give(b) // a 1, b 0, c 0: b2 is older than c1
	is.Equal(next(), "b2")
	sl.give(b) // a 1, b 0, c 0: c1
	is.Equal(next(), "c1")
	sl.give(c) // only a waits: in its order
	is.Equal(next(), "a2")
	sl.give(a)
	is.Equal(next(), "a3")
	select {
	case name := <-served:
		t.Fatalf("%s served without a slot", name)
	default:
	}
	is.Equal(len(waitersOf(sl)), 0)
	sl.give(a)
	sl.give(a)
	is.Equal(sl.free, 2)
	is.Equal(holding(sl), 0)
}

// TestSlotsWaitIsBounded: a wait that runs out, or whose context ends,
// leaves the line and holds no slot.
func TestSlotsWaitIsBounded(t *testing.T) {
	is := is.New(t)
	sl := newSlots(1)
	is.True(sl.tryTake(1))
	busy := errors.New("busy")
	err := sl.take(context.Background(), 2, time.Millisecond, func() error { return busy })
	is.Equal(err, busy)
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = sl.take(cctx, 2, time.Minute, nil)
	is.Equal(err, context.Canceled)
	is.Equal(len(waitersOf(sl)), 0)
	sl.give(1)
	is.Equal(sl.free, 1)
	is.Equal(holding(sl), 0)
}

func waitersOf(sl *slots) []*slotWaiter {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return slices.Clone(sl.waiting)
}

// holding is how many callers hold slots of sl.
func holding(sl *slots) int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	n := 0
	for _, h := range sl.held {
		if h > 0 {
			n++
		}
	}
	return n
}

// TestSlotsForgetIdleCallers: the counts of callers holding no slot are
// kept up to keptCallers, then forgotten.
func TestSlotsForgetIdleCallers(t *testing.T) {
	is := is.New(t)
	sl := newSlots(2)
	is.True(sl.tryTake(-1)) // held throughout
	for caller := range int64(keptCallers * 3) {
		is.True(sl.tryTake(caller))
		sl.give(caller)
		is.True(len(sl.held) <= keptCallers+1)
	}
	is.Equal(holding(sl), 1)
	is.Equal(sl.held[-1], 1)
}
