package projectdata

import (
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
	// MaxReadersPerProject bounds the read-only connections of one project
	// that serve its reads (besides the exports', MaxExportsPerProject, and
	// one for token checks), and so how many reads of a project run in
	// parallel. When all are busy, a reader that comes free goes to the
	// waiting caller (a token; calls without one count as one caller)
	// holding the fewest, so a token that keeps them busy with slow
	// queries makes its own requests wait, not another token's. Zero: 4.
	MaxReadersPerProject int
	// MaxExportsPerProject bounds the exports (CSV exports and project
	// snapshots) of one project that run at once. Each reads on a
	// read-only connection of its own for as long as it runs, besides the
	// MaxReadersPerProject readers, so that exports never hold the
	// connections the project's other reads need; an export beyond the
	// bound waits for one to end, up to QueueTimeout, then fails with
	// ErrServerBusy. Zero: 2.
	MaxExportsPerProject int
	// MaxExportBytes bounds the bytes of export files (CSV exports and
	// project snapshots) one project keeps at once: the size_bytes of its
	// ready manifests (expired files are removed first), plus the bytes
	// its exports under way have written so far. An export is refused
	// before it reads anything when the project is at or past the bound,
	// and stopped, its file removed and no manifest recorded, as soon as
	// its file would take the project past it; both fail with
	// ErrExportQuotaExceeded. Room frees as exports expire (ExportTTL) or
	// their files are removed. Zero: 4 GiB.
	MaxExportBytes int64
	// BusyTimeout is how long a connection waits for a lock held by another
	// process (or another Store on the folder) before the operation fails
	// with ErrServerBusy. Zero: 5s.
	BusyTimeout time.Duration
	// QueryTimeout is the execution budget of one read-only query; SQLite is
	// interrupted when it runs out (query_budget_exceeded). Zero: 1s.
	QueryTimeout time.Duration
	// WriteTimeout is the execution budget of one bulk update or bulk
	// delete (UpdateRecords, DeleteRecords) on the project's writer,
	// counted from when it starts running there (its wait in the writer's
	// queue is QueueTimeout's): SQLite is interrupted when it runs out, the
	// change rolls back whole, and the call fails with
	// ErrQueryBudgetExceeded. A bulk change holds every other write of its
	// project while it runs, and those wait at most QueueTimeout each.
	// Bulk and schema changes run one at a time, the next going to the
	// caller (token) whose last one ran longest ago, with the row writes
	// waiting run after each.
	// Schema changes (tables, columns, indexes: long on big tables, and
	// the admin's) have no such budget, nor have the row writes (Insert,
	// UpdateRecord, DeleteRecord), which are bounded by MaxInsertRows or one
	// row and share transactions that an interruption would roll back
	// whole. Zero or negative: 30s.
	WriteTimeout time.Duration
	// QueryMaxBytes is the result budget of one query, in bytes of encoded
	// rows: the JSON array of the rows as the answer encodes it, brackets
	// and commas included (query_result_too_large). It also ends a page of
	// a record list or of the change log. Zero: 4 MiB.
	QueryMaxBytes int
	// QueryMaxMemory caps the memory SQLite may use for one query or
	// record list (each connection is its own SQLite instance); one that
	// needs more fails with query_budget_exceeded. Their sorts and
	// temporary tables are held within it, never in temporary files.
	// Zero: 64 MiB.
	QueryMaxMemory int64
	// MaxInsertRows bounds the rows of one insert (too_many_rows). Zero: 10,000.
	MaxInsertRows int
	// ExportTTL is how long an export file is kept. Zero: 7 days.
	ExportTTL time.Duration
	// QueueTimeout bounds how long an operation waits for a connection of
	// its project (a reader, or the writer), or for the project to open
	// (the first open after an upgrade may migrate its data); a longer wait
	// fails with ErrServerBusy. Zero: 2s.
	QueueTimeout time.Duration
	// MaxSQLiteMemory caps the memory of every SQLite connection of the
	// Store together: each open connection counts for the usual heap of a
	// reader (8 MiB), and a query that needs more reserves
	// QueryMaxMemory until it ends. A query that would pass the cap fails
	// with ErrServerBusy; writes are never refused for it. Zero: 512 MiB.
	MaxSQLiteMemory int64
	// QueryMaxSQLBytes bounds the SQL text of one query
	// (ErrInvalidRequest). SQLite cannot interrupt the parsing of a
	// statement, so this bounds its time. Zero: 100,000 bytes.
	QueryMaxSQLBytes int
	// QueryMaxCallArgs bounds the arguments one query's statement passes
	// to functions, summed over its calls, where a call without arguments
	// and each -> or ->> count one (sqlguard.Shape.CallArgs); a statement
	// with more is ErrInvalidRequest. SQLite looks at the query budget
	// only between the steps of its loops, so the calls of one row's
	// expressions, or of a statement's constant ones, run to their end
	// past it; on values of a few MiB each takes up to tens of
	// milliseconds (every JSON path walks the whole document), and one
	// statement of a thousand such calls held a core for seconds to
	// minutes. Zero: 256.
	QueryMaxCallArgs int
	// MaxWriteGroup bounds how many concurrent writes to one project share
	// one transaction (group commit; each write in its own savepoint, and
	// acknowledged only after the shared commit). Zero: 128. One: every
	// write commits in a transaction of its own.
	MaxWriteGroup int
	// IdempotencyTTL is how long the answer of a write made with an
	// idempotency key is kept for its retries (see WithIdempotency).
	// Zero: 24 hours.
	IdempotencyTTL time.Duration
	// ChangeRetention is how long the change log keeps a change; resuming
	// the log before the oldest change kept is ErrChangesExpired. Zero:
	// 7 days.
	ChangeRetention time.Duration
	// MaxChangeStreamsPerToken bounds the followers of a project's change
	// log (FollowChanges, Changes, and so the change streams of httpapi)
	// that one token holds at once: one more, for that token on that
	// project, fails with ErrServerBusy before it yields anything, until
	// one of its followers ends. Each stream holds a connection for as
	// long as it lasts, and a server serves a bounded number of them, so
	// that one token could otherwise take every connection of the server.
	// Only callers with a token count (see WithCaller); the application's
	// own calls, without a Caller, are not bounded. Zero: 16, room for a
	// backend's few streams per token (one stream follows several tables)
	// and for the streams a client that reconnected left behind, which
	// the server notices are gone only when a write to them fails.
	MaxChangeStreamsPerToken int
	// ReplicatorCheckpoints, when true, leaves checkpointing the
	// write-ahead log to a replicator running beside the Store (Litestream,
	// as `server serve -replica` runs it): the Store never checkpoints
	// (PRAGMA wal_autocheckpoint=0 and no checkpointer), so it never
	// competes with the replicator's own checkpoints. While the replicator
	// is down the WAL grows until it is back. Zero (false): each project
	// checkpoints its WAL in the background, without waiting for its
	// readers or its writer, when it reaches 1,000 pages and each 250
	// pages more, and 250 ms after its last write; its writer checkpoints
	// itself past 2,000.
	ReplicatorCheckpoints bool

	changeLogOff bool          // benchmarks only: write no change log
	readerIdle   time.Duration // tests only; zero: defaultReaderIdle
}

// defaultMaxInsertRows is the zero value of Options.MaxInsertRows.
const defaultMaxInsertRows = 10000

// defaultMaxExportBytes is the zero value of Options.MaxExportBytes: 4 GiB.
const defaultMaxExportBytes = 4 << 30

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
	if r.readerIdle <= 0 {
		r.readerIdle = defaultReaderIdle
	}
	if r.MaxExportsPerProject <= 0 {
		r.MaxExportsPerProject = 2
	}
	if r.MaxExportBytes <= 0 {
		r.MaxExportBytes = defaultMaxExportBytes
	}
	if r.BusyTimeout <= 0 {
		r.BusyTimeout = 5 * time.Second
	}
	if r.QueryTimeout <= 0 {
		r.QueryTimeout = time.Second
	}
	if r.WriteTimeout <= 0 {
		r.WriteTimeout = 30 * time.Second
	}
	if r.QueryMaxBytes <= 0 {
		r.QueryMaxBytes = 4 << 20
	}
	if r.QueryMaxMemory <= 0 {
		r.QueryMaxMemory = 64 << 20
	}
	if r.MaxInsertRows <= 0 {
		r.MaxInsertRows = defaultMaxInsertRows
	}
	if r.ExportTTL <= 0 {
		r.ExportTTL = 7 * 24 * time.Hour
	}
	if r.QueueTimeout <= 0 {
		r.QueueTimeout = 2 * time.Second
	}
	if r.MaxSQLiteMemory <= 0 {
		r.MaxSQLiteMemory = 512 << 20
	}
	if r.QueryMaxSQLBytes <= 0 {
		r.QueryMaxSQLBytes = 100000
	}
	if r.QueryMaxCallArgs <= 0 {
		r.QueryMaxCallArgs = 256
	}
	if r.MaxWriteGroup <= 0 {
		r.MaxWriteGroup = 128
	}
	if r.IdempotencyTTL <= 0 {
		r.IdempotencyTTL = 24 * time.Hour
	}
	if r.ChangeRetention <= 0 {
		r.ChangeRetention = 7 * 24 * time.Hour
	}
	if r.MaxChangeStreamsPerToken <= 0 {
		r.MaxChangeStreamsPerToken = 16
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
	projects *lru[*project] // the open projects, by slug
	closing  sync.WaitGroup // closes of evicted projects under way; Close waits for them

	queue queueStats  // waits for a connection, for Stats
	heap  *sqliteHeap // SQLite memory of every connection, against MaxSQLiteMemory

	feeds *feeds // live change feeds of the projects followed now

	exportUse exportQuota // bytes of the exports under way, against MaxExportBytes

	tokenPage int // tokens per read of Tokens: tokenPage, fewer in tests
}

// Open returns a Store over the data folder dir, creating the folder if
// needed; a project's own folder is refused. A nil opts means the
// defaults. It removes the temporary folders of project creations and
// restores whose process died (unmodified for an hour).
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
	// A project's own folder, given by mistake, would get projects made
	// inside it.
	if _, err := os.Lstat(filepath.Join(abs, dbFileName)); err == nil {
		return nil, errors.Errorf("projectdata: %s is a project's folder (it holds %s), not a data folder: give the folder that holds it", abs, dbFileName)
	}
	s := &Store{
		dir:       abs,
		opts:      opts.withDefaults(),
		projects:  newLRU[*project](),
		tokenPage: tokenPage,
	}
	s.heap = &sqliteHeap{max: s.opts.MaxSQLiteMemory}
	s.idle = sync.NewCond(&s.mu)
	s.feeds = newFeeds(s)
	s.removeAbandonedStaging()
	return s, nil
}

// Close refuses new operations (they fail with ErrStoreClosed), ends the
// change feeds followed (see FollowChanges), waits for the operations under
// way to finish, then closes every project database, and returns once every
// database is closed, those being closed after an eviction included. Close
// is idempotent.
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
	open := s.projects.drain()
	s.mu.Unlock()

	var first error
	for _, p := range open {
		<-p.ready
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	s.closing.Wait()
	return first
}

// begin counts an operation that opens no project (CreateProject,
// RestoreProject) as under way, for Close to wait on, or refuses it once
// the Store is closed; end ends it.
func (s *Store) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errorf(ErrStoreClosed, "the store is closed")
	}
	s.active++
	return nil
}

// end ends an operation counted by begin.
func (s *Store) end() {
	s.mu.Lock()
	s.active--
	if s.active == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// Stats describes the Store's open resources.
type Stats struct {
	// OpenProjects is how many project databases are open now.
	OpenProjects int
	// Operations is how many operations are under way now.
	Operations int
	// QueueWaits counts, since Open, the operations that found every
	// connection they could use busy and waited for one.
	QueueWaits int64
	// QueueWaitTime is the time those operations waited, in all.
	QueueWaitTime time.Duration
	// ChangeFollowers is how many iterations of FollowChanges (or
	// Changes) follow a change log now: each change stream of httpapi is
	// one.
	ChangeFollowers int
}

// Stats returns the Store's open resources and its counters.
func (s *Store) Stats() Stats {
	followers := s.feeds.count()
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		OpenProjects:    s.projects.len(),
		Operations:      s.active,
		QueueWaits:      s.queue.waits.Load(),
		QueueWaitTime:   time.Duration(s.queue.nanos.Load()),
		ChangeFollowers: followers,
	}
}

// Closed reports whether Close has been called: from then on the Store
// refuses new operations.
func (s *Store) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
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
	if p, ok := s.projects.get(slug); ok {
		p.refs++
		s.mu.Unlock()
		if err := p.awaitOpen(ctx); err != nil {
			s.release(p)
			return nil, err
		}
		if p.openErr != nil {
			s.release(p)
			return nil, p.openErr
		}
		if p.replaced() {
			s.drop(p)
			s.release(p)
			return s.acquire(ctx, slug)
		}
		return p, nil
	}
	p := &project{slug: slug, dir: filepath.Join(s.dir, slug), store: s, refs: 1, ready: make(chan struct{})}
	s.projects.add(slug, p)
	s.mu.Unlock()

	p.openErr = p.open()
	close(p.ready)
	if p.openErr != nil {
		s.mu.Lock()
		s.projects.removeIf(slug, func(q *project) bool { return q == p })
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
	forgotten := p.forgotten && p.refs == 0 // see forget
	if forgotten {
		s.closing.Add(1)
	}
	s.mu.Unlock()
	if forgotten {
		s.closeForgotten(p)
	}
	s.evict()
}

// evict closes least recently used idle projects while more than
// MaxOpenProjects are open. Projects in use are never closed under a
// caller: a project busy now is evicted by a later release. Close waits
// for the closes evict starts.
func (s *Store) evict() {
	s.mu.Lock()
	idle := s.projects.trim(s.opts.MaxOpenProjects, func(p *project) bool { return p.refs == 0 })
	s.closing.Add(len(idle))
	s.mu.Unlock()
	for _, p := range idle {
		s.closeQuietly(p)
		s.closing.Done()
	}
}

func (s *Store) closeQuietly(p *project) {
	if err := p.close(); err != nil {
		s.opts.Logger.Error("close project", "project", p.slug, "err", err)
	}
}

// runChore runs fn, background work of a project (pruning), holding the
// project: a closed Store or a deleted project ends it quietly, and other
// failures are logged as what.
func (s *Store) runChore(slug, what string, fn func(p *project) error) {
	err := s.withProject(context.Background(), slug, "", fn)
	if err != nil && ErrorCode(err) != ErrStoreClosed && ErrorCode(err) != ErrProjectNotFound {
		s.opts.Logger.Error(what, "project", slug, "err", err)
	}
}

// withProject runs fn with the open project, after checking that the
// caller in ctx (if any) may do op on it; an empty op checks no caller.
// A project pinned by ctx (see Pin) is used as it is.
func (s *Store) withProject(ctx context.Context, slug string, op Operation, fn func(p *project) error) error {
	p, ok := s.pinned(ctx, slug)
	if ok {
		if err := ctx.Err(); err != nil {
			return err
		}
	} else {
		var err error
		if p, err = s.acquire(ctx, slug); err != nil {
			return busyIfUnavailable(err)
		}
		defer s.release(p)
	}
	if op != "" {
		if err := authorize(ctx, slug, op); err != nil {
			return err
		}
		p.markUsed()
	}
	return busyIfUnavailable(fn(p))
}

// markUsed records that an operation or an accepted token ran on p.
func (p *project) markUsed() {
	if !p.used.Load() { // a load on every operation, a store once
		p.used.Store(true)
	}
}

// demote makes p, opened for a request whose token was refused and used by
// nothing else yet, the least recently used of the open projects, so that
// the next project opened closes it rather than one in use: a client with
// made-up tokens and more slugs than MaxOpenProjects would otherwise push
// every project in use out, one open each.
func (s *Store) demote(p *project) {
	if p.used.Load() {
		return
	}
	s.mu.Lock()
	s.projects.demote(p.slug, func(q *project) bool { return q == p })
	s.mu.Unlock()
}
