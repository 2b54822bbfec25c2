package projectdata_test

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// follower is an iteration of FollowChanges run in its own goroutine.
type follower struct {
	following chan struct{} // closed when ChangeQuery.Following is called
	first     chan error    // the error yielded, if any
	changes   chan int64    // the ids of the changes yielded
	ended     chan struct{} // closed when the iteration has returned
	cancel    context.CancelFunc
}

// fromNow is the after of follow that starts at the log's last change.
const fromNow = -1

// follow starts following project acme's log after the change id after
// (or fromNow) with ctx, which may carry a caller. Each change yielded is
// passed to body, if any, which may stop the iteration (false) or panic
// (the panic is recovered and ends the follower). It returns once the
// follower is admitted (Following) or has ended.
func follow(t *testing.T, s *projectdata.Store, ctx context.Context, after int64, body func(projectdata.Change) bool) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{following: make(chan struct{}), first: make(chan error, 1), changes: make(chan int64, 100),
		ended: make(chan struct{}), cancel: cancel}
	t.Cleanup(f.stop)
	if after == fromNow {
		var err error
		if after, err = s.LastChangeID(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	q := projectdata.ChangeQuery{After: after, Following: func() { close(f.following) }}
	go func() {
		defer close(f.ended)
		defer func() { _ = recover() }()
		for c, err := range s.FollowChanges(ctx, "acme", q) {
			if err != nil {
				f.first <- err
				return
			}
			f.changes <- c.ID
			if body != nil && !body(c) {
				return
			}
		}
	}()
	select {
	case <-f.following:
	case <-f.ended:
	}
	return f
}

// admitted reports whether the follower was admitted. One that was not
// must have yielded an error with the code want (and never called
// Following); ErrServerBusy must say why and name the bound, 2.
func (f *follower) admitted(t *testing.T, want projectdata.Code) bool {
	t.Helper()
	select {
	case <-f.following:
		return true
	default:
	}
	select {
	case err := <-f.first:
		pdtest.Code(t, err, want)
		if want == projectdata.ErrServerBusy && (!strings.Contains(err.Error(), "change streams") || !strings.Contains(err.Error(), "2")) {
			t.Errorf("message %q should say the token holds too many change streams and name the bound, 2", err)
		}
	default:
		t.Fatal("the follower ended without an error and without Following")
	}
	return false
}

// stop ends the follower and waits until its iteration has returned.
func (f *follower) stop() {
	f.cancel()
	<-f.ended
}

// TestFollowChangesBoundPerToken: followers of a caller with a token count
// against Options.MaxChangeStreamsPerToken, per project and token; the
// application's own followers (no Caller) do not; a follower frees its
// place when its iteration ends, however it ends.
func TestFollowChangesBoundPerToken(t *testing.T) {
	const busy = projectdata.ErrServerBusy
	newStore := func(t *testing.T) (s *projectdata.Store, dir string, alice, bob context.Context) {
		s, dir = pdtest.Open(t, &projectdata.Options{MaxChangeStreamsPerToken: 2})
		if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
			t.Fatal(err)
		}
		seedItems(t, s, 0)
		return s, dir, pdtest.As(t, s, projectdata.RoleRead), pdtest.As(t, s, projectdata.RoleRead)
	}
	t.Run("WithoutCallerNotLimited", func(t *testing.T) {
		is := is.New(t)
		s, _, _, _ := newStore(t)
		for range 5 {
			is.True(follow(t, s, ctx, fromNow, nil).admitted(t, busy))
		}
		is.Equal(s.Stats().ChangeFollowers, 5)
	})
	t.Run("WithCallerLimitedPerToken", func(t *testing.T) {
		is := is.New(t)
		s, _, alice, bob := newStore(t)
		a1, a2 := follow(t, s, alice, fromNow, nil), follow(t, s, alice, fromNow, nil)
		is.True(a1.admitted(t, busy))
		is.True(a2.admitted(t, busy))
		is.True(!follow(t, s, alice, fromNow, nil).admitted(t, busy)) // the third of alice's
		is.True(follow(t, s, bob, fromNow, nil).admitted(t, busy))    // another token
		is.True(follow(t, s, ctx, fromNow, nil).admitted(t, busy))    // the application
		is.Equal(s.Stats().ChangeFollowers, 4)                        // the refused one holds nothing
		a1.stop()
		is.True(follow(t, s, alice, fromNow, nil).admitted(t, busy)) // its place is free at once
		is.True(!follow(t, s, alice, fromNow, nil).admitted(t, busy))
	})
	t.Run("EveryEndFreesThePlace", func(t *testing.T) {
		is := is.New(t)
		s, dir, alice, _ := newStore(t)
		for i := range 3 {
			insertItems(t, s, i, i+1)
		}
		// Retention as the Store prunes: every change but the newest, so
		// that following from change 1 is ErrChangesExpired.
		pdtest.Exec(t, pdtest.Raw(t, dir, "acme"), `DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`)
		for range 10 {
			// Ends by a panic in the loop's body, by break, by
			// cancelling, by ErrChangesExpired before anything is
			// yielded, and by a refusal.
			panics := follow(t, s, alice, fromNow, func(projectdata.Change) bool { panic("boom") })
			breaks := follow(t, s, alice, fromNow, func(projectdata.Change) bool { return false })
			is.True(panics.admitted(t, busy))
			is.True(breaks.admitted(t, busy))
			is.True(!follow(t, s, alice, fromNow, nil).admitted(t, busy))
			insertItems(t, s, 0, 1)
			<-panics.ended
			<-breaks.ended

			is.True(!follow(t, s, alice, 1, nil).admitted(t, projectdata.ErrChangesExpired))

			cancelled := follow(t, s, alice, fromNow, nil)
			is.True(cancelled.admitted(t, busy))
			cancelled.stop()
		}
		is.Equal(s.Stats().ChangeFollowers, 0)
		is.True(follow(t, s, alice, fromNow, nil).admitted(t, busy)) // both places are free
		is.True(follow(t, s, alice, fromNow, nil).admitted(t, busy))
		is.True(!follow(t, s, alice, fromNow, nil).admitted(t, busy))
	})
}
