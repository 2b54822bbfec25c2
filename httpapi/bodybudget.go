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
//
// One token, and one project, hold at most a part of the budget
// (Options.MaxBodyBytesPerToken, MaxBodyBytesPerProject): else a client
// that sends a few large bodies slowly would hold all of it, and every
// other client's writes, in every project, would wait and fail. A request
// past its token's or its project's part waits for their own requests to
// end, and the requests behind it do not wait for it.
type bodyBudget struct {
	mu         sync.Mutex
	free       int64
	size       int64
	perToken   int64
	perProject int64
	byToken    map[tokenKey]int64 // bytes held, by token; tokens holding none are not kept
	byProject  map[string]int64   // bytes held, by project; likewise
	waiters    list.List          // *bodyWaiter, in arrival order
}

// tokenKey is a token of a project: token ids are a project's.
type tokenKey struct {
	project string
	token   int64
}

// tokenKeyOf is the token of the caller ctx carries.
func tokenKeyOf(ctx context.Context) tokenKey {
	c, _ := projectdata.CallerFrom(ctx)
	return tokenKey{c.Project, c.TokenID}
}

// bodyWaiter is a request waiting for its share.
type bodyWaiter struct {
	who   tokenKey
	n     int64
	ready chan struct{} // closed when the share is taken for it
}

func newBodyBudget(size, perToken, perProject int64) *bodyBudget {
	return &bodyBudget{free: size, size: size, perToken: perToken, perProject: perProject,
		byToken: make(map[tokenKey]int64), byProject: make(map[string]int64)}
}

// bodyShare is what a request takes of the budget: the bytes its body may
// hold (its Content-Length, or MaxBodyBytes when unknown), none without
// a body, at most the whole budget and a token's and a project's part of
// it (else it would never fit).
func (h *Handler) bodyShare(r *http.Request) int64 {
	n := r.ContentLength
	if n < 0 || n > h.opts.MaxBodyBytes {
		n = h.opts.MaxBodyBytes // a longer body is refused at MaxBodyBytes+1
	}
	return min(n, h.bodyRoom.size, h.bodyRoom.perToken, h.bodyRoom.perProject)
}

// acquire takes n bytes of the budget for the caller ctx carries, waiting
// up to wait, or until ctx ends, for earlier requests to give theirs back:
// then it fails with ErrServerBusy (or ctx's error) and takes nothing.
// Give the share back with release.
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) (tokenKey, error) {
	who := tokenKeyOf(ctx)
	if n == 0 {
		return who, nil
	}
	b.mu.Lock()
	if b.waiters.Len() == 0 && n <= b.free && !b.capped(who, n) {
		b.take(who, n)
		b.mu.Unlock()
		return who, nil
	}
	w := &bodyWaiter{who: who, n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.grant() // it may fit where the waiters ahead of it wait for their own
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return who, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errorf(projectdata.ErrServerBusy, "the server is reading as many request bodies as it may at once, or as this token or project may; retry")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.giveBack(who, n)
	default:
		b.waiters.Remove(e)
	}
	b.grant() // the head may have left: the next ones may fit
	return who, err
}

// release gives back n bytes that acquire took for who.
func (b *bodyBudget) release(who tokenKey, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.giveBack(who, n)
	b.grant()
	b.mu.Unlock()
}

// capped reports whether who's token or project would hold more than its
// part with n bytes more. b.mu is held.
func (b *bodyBudget) capped(who tokenKey, n int64) bool {
	return b.byToken[who]+n > b.perToken || b.byProject[who.project]+n > b.perProject
}

// take takes n bytes for who. b.mu is held.
func (b *bodyBudget) take(who tokenKey, n int64) {
	b.free -= n
	b.byToken[who] += n
	b.byProject[who.project] += n
}

// giveBack gives back n bytes held by who. b.mu is held.
func (b *bodyBudget) giveBack(who tokenKey, n int64) {
	b.free += n
	if b.byToken[who] -= n; b.byToken[who] <= 0 {
		delete(b.byToken, who)
	}
	if b.byProject[who.project] -= n; b.byProject[who.project] <= 0 {
		delete(b.byProject, who.project)
	}
}

// grant takes their shares for the waiters that fit, in arrival order: a
// waiter past its token's or project's part is passed over (it waits for
// their own requests), and the first that waits for room stops the
// grants, so that small bodies do not starve big ones. b.mu is held.
func (b *bodyBudget) grant() {
	for e := b.waiters.Front(); e != nil; {
		next := e.Next()
		w := e.Value.(*bodyWaiter)
		switch {
		case b.capped(w.who, w.n):
		case w.n > b.free:
			return
		default:
			b.take(w.who, w.n)
			b.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
}
