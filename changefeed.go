package projectdata

import (
	"context"
	"iter"
	"strings"
	"sync"
	"time"
)

// Following the change log: one feed per project that has followers. After
// each commit that logged changes, the writer signals the project's feed
// (a non-blocking send); the feed's one goroutine reads the new changes
// once, encodes each once, appends them to an in-memory tail of the newest
// changes and wakes every follower of the project by closing one channel.
// Followers read the tail (or, when they are further behind than the tail
// reaches, pages of the log itself), each at its own pace: a slow follower
// holds no connection while it waits and never slows the writer or the
// other followers. No follower polls; the feed itself reads the log once a
// second while it has followers, for commits made by other processes or
// Stores on the same folder.

const (
	// feedTail is the fewest changes a feed keeps in memory (up to twice
	// as many).
	feedTail = 8192
	// feedTailBytes bounds the JSON of the changes a feed keeps in memory
	// (up to twice as much, and one page): the changes of rows of
	// megabytes would otherwise keep gigabytes. Followers the tail no
	// longer reaches read the log itself.
	feedTailBytes = 8 << 20
	// feedPoll is how often a followed feed reads the log for commits of
	// other processes.
	feedPoll = time.Second
	// feedPage is the most changes one read of the log returns.
	feedPage = 1000
	// pruneEvery is how often a project's log is pruned, at most.
	pruneEvery = time.Minute
)

// feeds is the Store's registry of the feeds followed now.
type feeds struct {
	s      *Store
	mu     sync.Mutex
	bySlug map[string]*feed
	done   chan struct{} // closed by Store.Close
	closed bool
	// held counts the followers of each token on each project, against
	// Options.MaxChangeStreamsPerToken.
	held map[tokenOf]int

	pruneMu sync.Mutex
	pruned  map[string]time.Time // slug → last prune started
}

func newFeeds(s *Store) *feeds {
	return &feeds{s: s, bySlug: map[string]*feed{}, done: make(chan struct{}), held: map[tokenOf]int{}, pruned: map[string]time.Time{}}
}

// tokenOf is a token of a project: token ids are a project's own.
type tokenOf struct {
	slug    string
	tokenID int64
}

// count returns how many followers there are now.
func (fs *feeds) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, f := range fs.bySlug {
		n += f.followers
	}
	return n
}

// close ends every feed and its followers.
func (fs *feeds) close() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.closed {
		fs.closed = true
		close(fs.done)
	}
}

// feed is the live change feed of one project.
type feed struct {
	fs        *feeds
	slug      string
	followers int           // guarded by fs.mu
	dirty     chan struct{} // capacity 1: a commit logged changes
	stop      chan struct{} // closed when the last follower leaves

	mu    sync.Mutex
	wake  chan struct{} // closed and replaced when the tail grows
	tail  []Change      // the newest changes, ids contiguous and ascending
	bytes int           // the JSON of the tail's changes (see feedTailBytes)
	last  int64         // the last change read from the log
	ready bool          // last is known
}

// follow registers a follower of the project's feed for the token with
// the id tokenID (0: the application's own call, not bounded), starting
// the feed if it is the first. A token that holds
// Options.MaxChangeStreamsPerToken followers of the project already gets
// ErrServerBusy. Every follower that follow returns is ended by leave
// with the same tokenID.
func (fs *feeds) follow(slug string, tokenID int64) (*feed, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if tokenID != 0 {
		k, most := tokenOf{slug, tokenID}, fs.s.opts.MaxChangeStreamsPerToken
		if fs.held[k] >= most {
			return nil, errorf(ErrServerBusy, "this token already holds the most change streams of project %q that one token may hold at once (%d); end one, or retry once one has ended", slug, most)
		}
		fs.held[k]++
	}
	f, ok := fs.bySlug[slug]
	if !ok {
		f = &feed{fs: fs, slug: slug, dirty: make(chan struct{}, 1), stop: make(chan struct{}), wake: make(chan struct{})}
		fs.bySlug[slug] = f
		go f.run()
	}
	f.followers++
	return f, nil
}

// leave unregisters a follower that follow registered for tokenID; the
// last one stops the feed.
func (fs *feeds) leave(f *feed, tokenID int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if tokenID != 0 {
		k := tokenOf{f.slug, tokenID}
		if fs.held[k]--; fs.held[k] <= 0 {
			delete(fs.held, k)
		}
	}
	if f.followers--; f.followers == 0 {
		delete(fs.bySlug, f.slug)
		close(f.stop)
	}
}

// changesCommitted is called after a unit of work that logged changes
// committed: it signals the project's feed, if followed, and prunes the
// log now and then.
func (s *Store) changesCommitted(p *project) {
	fs := s.feeds
	fs.mu.Lock()
	f := fs.bySlug[p.slug]
	fs.mu.Unlock()
	if f != nil {
		select {
		case f.dirty <- struct{}{}:
		default: // a signal is pending: the feed will read this commit too
		}
	}
	now := s.now()
	fs.pruneMu.Lock()
	due := now.Sub(fs.pruned[p.slug]) >= min(pruneEvery, s.opts.ChangeRetention)
	if due {
		fs.pruned[p.slug] = now
	}
	fs.pruneMu.Unlock()
	if due {
		go s.runChore(p.slug, "prune change log", func(p *project) error {
			_, err := s.pruneChanges(context.Background(), p)
			return err
		})
	}
}

// run reads the log after each signal (and every feedPoll) until the feed
// stops.
func (f *feed) run() {
	poll := time.NewTicker(feedPoll)
	defer poll.Stop()
	for {
		f.logReadError(f.read())
		select {
		case <-f.dirty:
		case <-poll.C:
		case <-f.stop:
			return
		case <-f.fs.done:
			f.mu.Lock()
			close(f.wake)
			f.wake = make(chan struct{})
			f.mu.Unlock()
			return
		}
	}
}

// logReadError logs a failed read of the log, which the next signal or
// poll retries: as a warning when the project was busy (its readers all
// taken, by many followers catching up, say: load, not a fault), not at
// all once the Store is closed.
func (f *feed) logReadError(err error) {
	switch ErrorCode(err) {
	case "", ErrStoreClosed:
	case ErrServerBusy:
		f.fs.s.opts.Logger.Warn("read change log", "project", f.slug, "err", err)
	default:
		f.fs.s.opts.Logger.Error("read change log", "project", f.slug, "err", err)
	}
}

// read appends the changes committed since the last read to the tail and
// wakes the followers.
func (f *feed) read() error {
	s := f.fs.s
	ctx := context.Background()
	return s.withProject(ctx, f.slug, "", func(p *project) error {
		for {
			var page ChangePage
			full := false
			err := p.read(ctx, func(c *conn) (err error) {
				if !f.ready {
					_, f.last, err = changeBounds(c)
					return err
				}
				page, full, err = readChanges(c, ChangeQuery{After: f.last, Limit: feedPage}, s.opts.QueryMaxBytes)
				return err
			})
			if ErrorCode(err) == ErrChangesExpired { // the feed stalled longer than the retention
				f.mu.Lock()
				f.tail, f.bytes, f.ready = nil, 0, false
				f.mu.Unlock()
				continue
			}
			if err != nil {
				return err
			}
			if !f.ready {
				f.mu.Lock()
				f.ready = true
				close(f.wake)
				f.wake = make(chan struct{})
				f.mu.Unlock()
				continue
			}
			read := 0
			for i := range page.Changes {
				page.Changes[i].encoded, _ = page.Changes[i].encode()
				read += len(page.Changes[i].encoded)
			}
			f.mu.Lock()
			if len(page.Changes) > 0 {
				f.tail, f.bytes = append(f.tail, page.Changes...), f.bytes+read
				if len(f.tail) > 2*feedTail || f.bytes > 2*feedTailBytes { // trimmed now and then, not on every append
					f.trim()
				}
				close(f.wake)
				f.wake = make(chan struct{})
			}
			f.last = max(f.last, page.NextAfter)
			f.mu.Unlock()
			if !full {
				return nil
			}
		}
	})
}

// trim drops the tail's oldest changes until it keeps at most feedTail
// changes and feedTailBytes of their JSON, into an array of its own (the
// old one is let go). f.mu is held.
func (f *feed) trim() {
	cut := max(len(f.tail)-feedTail, 0)
	for _, c := range f.tail[:cut] {
		f.bytes -= len(c.encoded)
	}
	for cut < len(f.tail) && f.bytes > feedTailBytes {
		f.bytes -= len(f.tail[cut].encoded)
		cut++
	}
	f.tail = append(make([]Change, 0, 2*(len(f.tail)-cut)), f.tail[cut:]...)
}

// since returns the tail's changes after the id after, at most feedPage,
// and the channel closed when there are more. ok is false when the tail
// does not reach back to after: the caller reads the log itself.
func (f *feed) since(after int64) (changes []Change, wake <-chan struct{}, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ready {
		return nil, f.wake, true // wait for the first read
	}
	if after >= f.last {
		return nil, f.wake, true
	}
	if len(f.tail) == 0 || after < f.tail[0].ID-1 {
		return nil, f.wake, false
	}
	i := int(after - f.tail[0].ID + 1)
	return f.tail[i:min(len(f.tail), i+feedPage)], f.wake, true
}

// LastChangeID returns the id of the project's newest change, 0 for an
// empty log: following the log after it gives the changes from now on.
//
// Errors: ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) LastChangeID(ctx context.Context, slug string) (int64, error) {
	var last int64
	err := s.withProject(ctx, slug, OpListChanges, func(p *project) error {
		return p.read(ctx, func(c *conn) (err error) {
			_, last, err = changeBounds(c)
			return err
		})
	})
	return last, err
}

// Changes iterates over the project's changes after the id after, in
// commit order, blocking for new ones until ctx ends (then it stops
// without an error). It is FollowChanges without a table filter.
func (s *Store) Changes(ctx context.Context, slug string, after int64) iter.Seq2[Change, error] {
	return s.FollowChanges(ctx, slug, ChangeQuery{After: after})
}

// FollowChanges iterates over the project's changes after q.After, of
// q.Tables if given, in commit order, each once, blocking for new ones
// until ctx ends (then it stops without an error). An error ends the
// iteration: ErrChangesExpired when the iteration is, or falls, further
// behind than Options.ChangeRetention; ErrServerBusy, before anything
// else is yielded, when the token of the caller in ctx holds
// Options.MaxChangeStreamsPerToken iterations of the project already (an
// iteration holds its place until it ends, however it ends);
// ErrStoreClosed when the Store closes; ErrInvalidToken when the token of
// the caller in ctx is revoked or expires meanwhile (checked before each
// batch of changes and every second); the errors of ListChanges. Resume
// with the id of the last change received. q.Limit is ignored.
//
// A change's Row is shared by every follower of the project: do not
// modify it.
func (s *Store) FollowChanges(ctx context.Context, slug string, q ChangeQuery) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		// The follower may outlive its request's pin of the project.
		ctx := unpinned(ctx)
		q.Limit = feedPage
		if err := q.check(); err != nil {
			yield(Change{}, err)
			return
		}
		if err := s.withProject(ctx, slug, OpListChanges, func(*project) error { return nil }); err != nil {
			if ctx.Err() == nil { // ended before it began: it stops without an error
				yield(Change{}, err)
			}
			return
		}
		// A follower outlives its token's check: the token is checked
		// again before each batch, and every tokenRecheck while idle.
		caller, _ := CallerFrom(ctx) // TokenID 0: the application's own call
		var recheck <-chan time.Time
		if caller.TokenID != 0 {
			t := time.NewTicker(tokenRecheck)
			defer t.Stop()
			recheck = t.C
		}
		tokenValid := func() bool {
			err := s.withProject(ctx, slug, "", func(p *project) error { return p.recheckCaller(ctx) })
			if err != nil && ctx.Err() == nil {
				yield(Change{}, err)
			}
			return err == nil
		}
		f, err := s.feeds.follow(slug, caller.TokenID)
		if err != nil {
			yield(Change{}, err)
			return
		}
		defer s.feeds.leave(f, caller.TokenID)
		caughtUp := false // read the log itself at least once: it checks q.After
		passed := q.After // what the caller knows of: yielded, or told by q.Passed
		for {
			changes, wake, ok := f.since(q.After)
			if !ok || !caughtUp {
				page, err := s.ListChanges(ctx, slug, q)
				if err != nil {
					if ctx.Err() == nil {
						yield(Change{}, err)
					}
					return
				}
				caughtUp = true
				if q.Following != nil {
					q.Following()
					q.Following = nil
				}
				changes, q.After = page.Changes, page.NextAfter
				if len(changes) > 0 && recheck != nil && !tokenValid() {
					return
				}
				for _, c := range changes {
					if !yield(c, nil) {
						return
					}
					passed = c.ID
				}
				if len(changes) > 0 {
					continue
				}
			} else if len(changes) > 0 {
				if recheck != nil && !tokenValid() {
					return
				}
				for _, c := range changes {
					q.After = c.ID
					if !q.selects(c.Table) {
						continue
					}
					if !yield(c, nil) {
						return
					}
					passed = c.ID
				}
				continue
			}
			if q.Passed != nil && q.After > passed {
				passed = q.After
				q.Passed(passed)
			}
			select {
			case <-wake:
			case <-recheck:
				if !tokenValid() {
					return
				}
			case <-ctx.Done():
				return
			case <-s.feeds.done:
				yield(Change{}, errorf(ErrStoreClosed, "the store is closed"))
				return
			}
		}
	}
}

// selects reports whether the query keeps the changes of a table.
func (q *ChangeQuery) selects(table string) bool {
	if len(q.Tables) == 0 {
		return true
	}
	for _, t := range q.Tables {
		if strings.EqualFold(t, table) {
			return true
		}
	}
	return false
}
