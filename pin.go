package projectdata

import (
	"context"
	"sync/atomic"
)

// pinKey is the context key of a pinned project.
type pinKey struct{}

// pin is a project held open for the operations run with one context; it
// is that context (one allocation where context.WithValue adds another).
type pin struct {
	context.Context
	store    *Store
	p        *project
	released atomic.Bool
}

// Pin opens the project and keeps it open until release is called. The
// Store's operations on that project run with the returned context (or one
// derived from it) use the open project directly instead of looking it up
// again: an HTTP request pins its project once, for its authentication and
// its operation. Call release exactly once, when those operations have
// returned; the context must not be used for Store operations afterwards
// (they would look the project up again). Close waits for pinned projects
// to be released.
//
// Errors: ErrInvalidProjectSlug, ErrProjectNotFound, ErrStoreClosed.
func (s *Store) Pin(ctx context.Context, slug string) (context.Context, func(), error) {
	p, err := s.acquire(ctx, slug)
	if err != nil {
		return ctx, func() {}, busyIfUnavailable(err)
	}
	pn := &pin{Context: ctx, store: s, p: p}
	return pn, pn.release, nil
}

func (pn *pin) Value(key any) any {
	if key == (pinKey{}) {
		return pn
	}
	return pn.Context.Value(key)
}

// release lets the project go, once.
func (pn *pin) release() {
	if pn.released.CompareAndSwap(false, true) {
		pn.store.release(pn.p)
	}
}

// pinned returns the project that ctx pinned, if it is the Store's project
// with the slug and still pinned.
func (s *Store) pinned(ctx context.Context, slug string) (*project, bool) {
	pn, ok := ctx.Value(pinKey{}).(*pin)
	if !ok || pn.store != s || pn.p.slug != slug || pn.released.Load() {
		return nil, false
	}
	return pn.p, true
}

// unpinned returns ctx without its pinned project, if any: the Store's
// operations run with it look the project up anew each time. An operation
// that lasts as long as its caller wants (FollowChanges) runs so, so that
// it goes on with the project's new database once its folder was replaced
// (RestoreProject into its slug, another process; see acquire), not with
// the removed one that its request pinned.
func unpinned(ctx context.Context) context.Context {
	if _, ok := ctx.Value(pinKey{}).(*pin); !ok {
		return ctx
	}
	return unpinnedCtx{ctx}
}

// unpinnedCtx is a context without the pinned project of its parent.
type unpinnedCtx struct{ context.Context }

func (c unpinnedCtx) Value(key any) any {
	if key == (pinKey{}) {
		return nil
	}
	return c.Context.Value(key)
}
