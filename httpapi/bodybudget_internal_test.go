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
	b := newBodyBudget(10, 100, 100) // one caller: no part of its own
	nobody, err := b.acquire(ctx, 6, time.Second)
	is.NoErr(err)

	got := make(chan string, 2)
	wait := func(name string, n int64, d time.Duration) {
		go func() {
			if _, err := b.acquire(ctx, n, d); err != nil {
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
	b.release(nobody, 6) // room for both now: granted together, in turn
	served := map[string]bool{<-got: true, <-got: true}
	is.Equal(served, map[string]bool{"big": true, "small": true})
	is.Equal(b.free, int64(1))
	b.release(nobody, 6)
	b.release(nobody, 3)

	// A waiter at the head that gives up lets the next one in.
	_, err = b.acquire(ctx, 8, time.Second)
	is.NoErr(err)
	wait("impatient", 5, 20*time.Millisecond)
	waitQueued(t, b, 1)
	wait("patient", 2, time.Minute)
	served = map[string]bool{<-got: true, <-got: true}
	is.Equal(served, map[string]bool{"impatient: server_busy": true, "patient": true})
	is.Equal(b.free, int64(0))
	b.release(nobody, 2)
	b.release(nobody, 8)
	is.Equal(b.free, b.size)
	is.Equal(b.waiters.Len(), 0)
}

// TestBodyBudgetPartsPerTokenAndProject: a request past its token's or its
// project's part of the budget waits for their own requests to end, and
// the requests of other tokens and projects go past it; token ids are a
// project's.
func TestBodyBudgetPartsPerTokenAndProject(t *testing.T) {
	is := is.New(t)
	b := newBodyBudget(10, 4, 6)
	as := func(project string, token int64) context.Context {
		return projectdata.WithCaller(context.Background(), projectdata.Caller{Project: project, TokenID: token})
	}
	a1, a2, a3, o1 := as("acme", 1), as("acme", 2), as("acme", 3), as("other", 1)
	take := func(ctx context.Context, n int64) tokenKey {
		t.Helper()
		who, err := b.acquire(ctx, n, time.Second)
		is.NoErr(err)
		return who
	}
	got := make(chan string, 2)
	wait := func(name string, ctx context.Context, n int64) {
		go func() {
			if _, err := b.acquire(ctx, n, time.Minute); err != nil {
				got <- name + ": " + err.Error()
				return
			}
			got <- name
		}()
	}

	first := take(a1, 4)   // a1's part
	wait("a1 more", a1, 1) // past it: waits for a1's own
	waitQueued(t, b, 1)
	second := take(a2, 2) // goes past it; acme holds its part
	wait("a3", a3, 1)     // past acme's part: waits
	waitQueued(t, b, 2)
	other := take(o1, 4) // another project (its token 1 is not acme's)
	is.Equal(b.free, int64(0))

	b.release(second, 2) // room, and acme under its part: a3, not a1
	is.Equal(<-got, "a3")
	b.release(first, 4)
	is.Equal(<-got, "a1 more")
	b.release(first, 1)
	b.release(tokenKey{"acme", 3}, 1)
	b.release(other, 4)
	is.Equal(b.free, b.size)
	is.Equal(len(b.byToken), 0)
	is.Equal(len(b.byProject), 0)
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
