package projectdata

import (
	"container/list"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pkg/errors"
)

// Options configures a Store. A nil *Options, and the zero value of every
// field, mean the documented default.
type Options struct {
	// Now returns the current time. Zero: time.Now.
	Now func() time.Time
	// Logger receives the Store's own diagnostics (never token secrets).
	// Zero: a logger that discards everything.
	Logger *slog.Logger
	// MaxOpenProjects bounds how many project databases are open at once;
	// the least recently used idle project is closed first. Zero: 64.
	MaxOpenProjects int
	// MaxReadersPerProject bounds the read-only connections of one project,
	// and so how many reads of a project run in parallel. Zero: 4.
	MaxReadersPerProject int
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before it fails. Zero: 5s.
	BusyTimeout time.Duration
	// QueryTimeout is the execution budget of one read-only query; SQLite is
	// interrupted when it runs out (query_budget_exceeded). Zero: 1s.
	QueryTimeout time.Duration
	// QueryMaxBytes is the result budget of one query, in bytes of encoded
	// rows (query_result_too_large). Zero: 4 MiB.
	QueryMaxBytes int
	// QueryMaxMemory caps the memory SQLite may use for one query (each
	// connection is its own SQLite instance); a query that needs more fails
	// with query_budget_exceeded. Large sorts spill to temporary files
	// within it. Zero: 64 MiB.
	QueryMaxMemory int64
	// MaxInsertRows bounds the rows of one insert (too_many_rows). Zero: 10,000.
	MaxInsertRows int
	// ExportTTL is how long an export file is kept. Zero: 7 days.
	ExportTTL time.Duration
	// ChangeRetention is how long the change log keeps a change; resuming
	// the log before the oldest change kept is ErrChangesExpired. Zero:
	// 7 days.
	ChangeRetention time.Duration

	changeLogOff bool // benchmarks only: write no change log
}

// withDefaults returns a copy of o with every zero field set to its default.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.MaxOpenProjects <= 0 {
		r.MaxOpenProjects = 64
	}
	if r.MaxReadersPerProject <= 0 {
		r.MaxReadersPerProject = 4
	}
	if r.BusyTimeout <= 0 {
		r.BusyTimeout = 5 * time.Second
	}
	if r.QueryTimeout <= 0 {
		r.QueryTimeout = time.Second
	}
	if r.QueryMaxBytes <= 0 {
		r.QueryMaxBytes = 4 << 20
	}
	if r.QueryMaxMemory <= 0 {
		r.QueryMaxMemory = 64 << 20
	}
	if r.MaxInsertRows <= 0 {
		r.MaxInsertRows = 10000
	}
	if r.ExportTTL <= 0 {
		r.ExportTTL = 7 * 24 * time.Hour
	}
	if r.ChangeRetention <= 0 {
		r.ChangeRetention = 7 * 24 * time.Hour
	}
	return r
}

// Store is the project data service over one data folder: every project is
// a folder dir/<slug>/ holding its SQLite database and its exports.
//
// A Store is safe for concurrent use. Within a project, writes are
// serialized on one connection and reads run in parallel on a pool of
// read-only connections.
type Store struct {
	dir  string
	opts Options

	mu       sync.Mutex
	idle     *sync.Cond // signalled when active drops to zero
	active   int        // operations holding a project
	closed   bool
	projects map[string]*list.Element // slug → element of lru holding *project
	lru      *list.List               // most recently used at the front

	feeds *feeds // live change feeds of the projects followed now
}

// Open returns a Store over the data folder dir, creating the folder if
// needed. A nil opts means the defaults.
func Open(dir string, opts *Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("projectdata: empty data folder")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrap(err, "projectdata: create data folder")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errors.Wrap(err, "projectdata: data folder")
	}
	s := &Store{
		dir:      abs,
		opts:     opts.withDefaults(),
		projects: make(map[string]*list.Element),
		lru:      list.New(),
	}
	s.idle = sync.NewCond(&s.mu)
	s.feeds = newFeeds(s)
	return s, nil
}

// Close refuses new operations (they fail with ErrStoreClosed), ends the
// change feeds followed (see FollowChanges), waits for the operations under
// way to finish, then closes every project database. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.feeds.close()
	for s.active > 0 {
		s.idle.Wait()
	}
	var open []*project
	for e := s.lru.Front(); e != nil; e = e.Next() {
		open = append(open, e.Value.(*project))
	}
	s.projects = nil
	s.lru.Init()
	s.mu.Unlock()

	var first error
	for _, p := range open {
		<-p.ready
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats describes the Store's open resources.
type Stats struct {
	// OpenProjects is how many project databases are open now.
	OpenProjects int
	// Operations is how many operations are under way now.
	Operations int
}

// Stats returns the Store's open resources.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{OpenProjects: s.lru.Len(), Operations: s.active}
}

// now returns the Store's clock reading, in UTC to the millisecond.
func (s *Store) now() time.Time {
	return s.opts.Now().UTC().Truncate(time.Millisecond)
}

// acquire returns the open project with the slug, opening it if needed, and
// pins it until release. Unknown projects are ErrProjectNotFound.
func (s *Store) acquire(ctx context.Context, slug string) (*project, error) {
	if err := validateSlug(slug); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errorf(ErrStoreClosed, "the store is closed")
	}
	s.active++
	if e, ok := s.projects[slug]; ok {
		p := e.Value.(*project)
		p.refs++
		s.lru.MoveToFront(e)
		s.mu.Unlock()
		<-p.ready
		if p.openErr != nil {
			s.release(p)
			return nil, p.openErr
		}
		return p, nil
	}
	p := &project{slug: slug, dir: filepath.Join(s.dir, slug), store: s, refs: 1, ready: make(chan struct{})}
	s.projects[slug] = s.lru.PushFront(p)
	s.mu.Unlock()

	p.openErr = p.open()
	close(p.ready)
	if p.openErr != nil {
		s.mu.Lock()
		if e, ok := s.projects[slug]; ok && e.Value == p {
			delete(s.projects, slug)
			s.lru.Remove(e)
		}
		s.mu.Unlock()
		s.release(p)
		return nil, p.openErr
	}
	s.evict()
	return p, nil
}

// release unpins a project acquired with acquire.
func (s *Store) release(p *project) {
	s.mu.Lock()
	p.refs--
	s.active--
	if s.active == 0 {
		s.idle.Broadcast()
	}
	closeNow := p.refs == 0 && p.evicted && p.openErr == nil
	s.mu.Unlock()
	if closeNow {
		s.closeQuietly(p)
	}
	s.evict()
}

// evict closes least recently used idle projects while more than
// MaxOpenProjects are open. Projects in use are never closed under a caller.
func (s *Store) evict() {
	s.mu.Lock()
	var idle []*project
	for e := s.lru.Back(); e != nil && s.lru.Len() > s.opts.MaxOpenProjects; {
		prev := e.Prev()
		p := e.Value.(*project)
		if p.refs == 0 {
			delete(s.projects, p.slug)
			s.lru.Remove(e)
			p.evicted = true
			idle = append(idle, p)
		}
		e = prev
	}
	s.mu.Unlock()
	for _, p := range idle {
		s.closeQuietly(p)
	}
}

func (s *Store) closeQuietly(p *project) {
	if err := p.close(); err != nil {
		s.opts.Logger.Error("close project", "project", p.slug, "err", err)
	}
}

// withProject runs fn with the open project, after checking that the
// caller in ctx (if any) may do op on it; an empty op checks no caller.
func (s *Store) withProject(ctx context.Context, slug string, op Operation, fn func(p *project) error) error {
	p, err := s.acquire(ctx, slug)
	if err != nil {
		return err
	}
	defer s.release(p)
	if op != "" {
		if err := authorize(ctx, slug, op); err != nil {
			return err
		}
	}
	return fn(p)
}
