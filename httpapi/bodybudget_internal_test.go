package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

// TestBodyBudgetServesInTurn: waiters get their shares first come, first
// served (a small one does not pass a big one ahead of it), and one that
// gives up lets those behind it in.
func TestBodyBudgetServesInTurn(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	b := newBodyBudget(10)
	is.NoErr(b.acquire(ctx, 6, time.Second))

	got := make(chan string, 2)
	wait := func(name string, n int64, d time.Duration) {
		go func() {
			if err := b.acquire(ctx, n, d); err != nil {
				got <- name + ": " + string(projectdata.ErrorCode(err))
				return
			}
			got <- name
		}()
	}
	wait("big", 6, time.Minute)
	waitQueued(t, b, 1)
	wait("small", 3, time.Minute) // fits the 4 left, but the big one came first
	waitQueued(t, b, 2)
	select {
	case name := <-got:
		t.Fatalf("%s got its share ahead of its turn", name)
	case <-time.After(50 * time.Millisecond):
	}
	b.release(6) // room for both now: granted together, in turn
	served := map[string]bool{<-got: true, <-got: true}
	is.Equal(served, map[string]bool{"big": true, "small": true})
	is.Equal(b.free, int64(1))
	b.release(6)
	b.release(3)

	// A waiter at the head that gives up lets the next one in.
	is.NoErr(b.acquire(ctx, 8, time.Second))
	wait("impatient", 5, 20*time.Millisecond)
	waitQueued(t, b, 1)
	wait("patient", 2, time.Minute)
	served = map[string]bool{<-got: true, <-got: true}
	is.Equal(served, map[string]bool{"impatient: server_busy": true, "patient": true})
	is.Equal(b.free, int64(0))
	b.release(2)
	b.release(8)
	is.Equal(b.free, b.size)
	is.Equal(b.waiters.Len(), 0)
}

// waitQueued waits until n requests wait for their shares.
func waitQueued(t *testing.T, b *bodyBudget, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		queued := b.waiters.Len()
		b.mu.Unlock()
		if queued == n {
			return
		}
	}
	t.Fatalf("%d requests never waited", n)
}
