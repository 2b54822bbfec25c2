package projectdata

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Names inside a project folder.
const (
	dbFileName     = "project.db"
	exportsDirName = "exports"
)

// maxCachedStmts bounds the prepared statements a connection keeps.
const maxCachedStmts = 128

// project is an open project: its writer connection and its pool of
// read-only connections. The Store pins a project (refs) while an operation
// uses it and closes it only when idle.
type project struct {
	slug  string
	dir   string
	store *Store

	ready   chan struct{} // closed once open has finished
	openErr error         // set before ready is closed

	refs      int  // operations using the project; guarded by store.mu
	forgotten bool // dropped from the Store's open projects (forget); guarded by store.mu
	// used is set once an operation or an accepted token has run on the
	// project since it opened: until then a refused token sends it to the
	// cold end of the open projects (see Store.demote).
	used atomic.Bool

	wsem    chan struct{} // holds the writer; capacity 1
	writer  *conn
	faulted atomic.Bool // the writer trapped: writes fail, the Store opens the project anew (trap.go)
	wq      writeQueue  // writes waiting for the writer (writer.go)

	psem  *slots // holds point; one slot
	esem  *slots // one slot per export running (exportRead)
	point *conn  // read-only connection of point reads (readPoint); nil until used
	// pointOpened is set once point has been opened: until then point
	// reads run on the writer when it is free.
	pointOpened atomic.Bool

	rsem     *slots // one slot per reader in use
	rmu      sync.Mutex
	readers  []*conn // idle readers
	closed   bool    // guarded by rmu
	sweeping bool    // sweepParked is due; guarded by rmu
	trimming bool    // trimReaders is due; guarded by rmu
	wal      *walWatch

	schemaMu sync.Mutex
	schema   *schema // cached registry of application tables, newest version loaded; nil: none

	lastUsedMu sync.Mutex
	lastUsed   map[int64]time.Time // token id → last_used_at minute written

	file      os.FileInfo  // project.db as open opened it
	checkedAt atomic.Int64 // when replaced last looked at project.db (Unix ns)

	cursorKey   []byte        // signs list cursors (see cursorKey); set by open
	tokens      tokenCache    // tokens verified against the database
	idempotency inFlightKeys  // idempotency keys whose first call is running
	ckpt        *checkpointer // nil with Options.ReplicatorCheckpoints
}

func (p *project) dbPath() string { return filepath.Join(p.dir, dbFileName) }

// open opens the writer connection and migrates the control schema.
func (p *project) open() error {
	if _, err := os.Stat(p.dbPath()); err != nil {
		if os.IsNotExist(err) {
			return errorf(ErrProjectNotFound, "project %q does not exist", p.slug)
		}
		return errors.Wrapf(err, "stat project %q", p.slug)
	}
	w, err := openConn(p.dbPath(), false, p.store.opts.BusyTimeout)
	if err != nil {
		return errors.Wrapf(err, "open project %q", p.slug)
	}
	p.store.heap.track(w)
	if err := migrate(w); err != nil {
		w.close()
		return errors.Wrapf(err, "migrate project %q", p.slug)
	}
	if p.cursorKey, err = cursorKey(w); err != nil {
		w.close()
		return errors.Wrapf(err, "open project %q", p.slug)
	}
	p.writer = w
	if err := p.startCheckpointer(); err != nil {
		p.writer = nil
		w.close()
		return errors.Wrapf(err, "configure project %q", p.slug)
	}
	p.wsem = make(chan struct{}, 1)
	p.rsem = newSlots(p.store.opts.MaxReadersPerProject)
	p.psem = newSlots(1)
	p.esem = newSlots(p.store.opts.MaxExportsPerProject)
	p.lastUsed = make(map[int64]time.Time)
	p.wal = watchWAL(p.dbPath())
	if p.file, err = os.Stat(p.dbPath()); err != nil {
		p.close()
		return errors.Wrapf(err, "stat project %q", p.slug)
	}
	p.checkedAt.Store(time.Now().UnixNano())
	p.sweepExports()
	return nil
}

// replacedCheckEvery is how often replaced looks at the project's file.
const replacedCheckEvery = time.Second

// replaced reports whether the project's database file is no longer the
// one open opened: its folder was removed, or removed and made anew (a
// restore by another process, say), while the project was open. The
// connections would go on reading and writing the removed file. It looks
// at most once per replacedCheckEvery.
func (p *project) replaced() bool {
	now, last := time.Now().UnixNano(), p.checkedAt.Load()
	if now-last < int64(replacedCheckEvery) || !p.checkedAt.CompareAndSwap(last, now) {
		return false
	}
	fi, err := os.Stat(p.dbPath())
	if err != nil {
		return os.IsNotExist(err)
	}
	return !os.SameFile(fi, p.file)
}

// close closes every connection. Callers make sure no operation uses the
// project any more.
func (p *project) close() error {
	p.rmu.Lock()
	if p.closed {
		p.rmu.Unlock()
		return nil
	}
	p.closed = true
	readers := p.readers
	p.readers = nil
	p.rmu.Unlock()

	if p.ckpt != nil {
		p.ckpt.close()
	}
	var first error
	for _, r := range readers {
		if err := r.close(); err != nil && first == nil {
			first = err
		}
	}
	if p.point != nil {
		if err := p.point.close(); err != nil && first == nil {
			first = err
		}
	}
	if p.writer != nil {
		if err := p.writer.close(); err != nil && first == nil {
			first = err
		}
	}
	p.wal.close()
	return first
}

// read runs fn on a read-only connection from the pool, inside one read
// transaction: every statement fn runs sees the same snapshot.
//
// A reader keeps its transaction after fn (it is parked) when nothing
// committed meanwhile and the log had been checkpointed whole (see
// walStamp.backfilled; the checkpointer does so once the writer is idle),
// and the next read on it uses it again while the WAL index says nothing
// has committed since (see walWatch): that read then takes no lock, where
// beginning a transaction takes and gives back a lock of the WAL index
// (two system calls, a third of SQLite's time on a read by key). A parked
// reader left behind by a commit would hold back checkpoints, so the
// readers idle in the pool give theirs up within parkedIdle, and before
// and after every checkpoint of the Store's.
func (p *project) read(ctx context.Context, fn func(c *conn) error) (err error) {
	caller, err := p.enter(ctx, p.rsem, "read connection")
	if err != nil {
		return err
	}
	defer p.rsem.give(caller)

	c, err := p.takeReader()
	if err != nil {
		return err
	}
	healthy := false
	defer func() { p.returnReader(c, healthy) }()
	defer recoverReaderTrap(c, &err)

	if err := p.beginRead(c); err != nil {
		return err
	}
	if err = c.runFor(ctx, fn); c.trapped {
		return err
	}
	cerr := p.endRead(c, err == nil)
	healthy = cerr == nil
	if err == nil {
		err = cerr
	}
	return err
}

// exportRead runs fn as read does, in one read transaction, but on a
// read-only connection of its own, opened for it and closed after: an
// export (a table's CSV, a project snapshot) reads for as long as its
// table or the database takes, and must never hold the readers that the
// project's other reads need. At most Options.MaxExportsPerProject run at
// once; beyond that an export waits for one to end as a read waits for a
// reader, and fails with ErrServerBusy after Options.QueueTimeout.
func (p *project) exportRead(ctx context.Context, fn func(c *conn) error) (err error) {
	caller, err := p.enter(ctx, p.esem, "export slot")
	if err != nil {
		return err
	}
	defer p.esem.give(caller)

	c, err := p.openReader("export connection")
	if err != nil {
		return err
	}
	defer c.close()
	defer recoverReaderTrap(c, &err)

	// An export reads in key order, which an index gives; should SQLite
	// sort instead, a table's worth of rows goes to a temporary file, as
	// before readers held theirs in a capped heap (see conn.configure):
	// this connection's heap has no cap.
	if err := c.exec(`PRAGMA temp_store=FILE`); err != nil {
		return err
	}
	if err := c.exec(`BEGIN`); err != nil {
		return err
	}
	if err = c.runFor(ctx, fn); c.trapped {
		return err
	}
	if cerr := c.endTx(); err == nil {
		err = cerr
	}
	return err
}

// runFor runs fn on c with SQLite interrupted when ctx ends; an
// interruption because the caller went away (reading the registry, say)
// is the caller's error, ctx.Err(), not an internal one.
func (c *conn) runFor(ctx context.Context, fn func(c *conn) error) error {
	old := c.db.SetInterrupt(ctx)
	err := fn(c)
	c.db.SetInterrupt(old)
	if !c.trapped && errors.Is(err, sqlite3.INTERRUPT) && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

// beginRead starts the read transaction of one read on c, or keeps the
// one c has parked if the database has not changed since it began.
func (p *project) beginRead(c *conn) error {
	now, ok := p.stamp()
	if c.parked {
		if ok && now == c.snapshot && !c.db.GetAutocommit() {
			return nil
		}
		if err := c.endTx(); err != nil {
			return err
		}
	}
	c.snapshot, c.stamped = now, ok
	c.keepVersion()
	return c.exec(`BEGIN`)
}

// endRead ends the read transaction of one read on c, or parks it: when
// the read succeeded and nothing committed between beginRead and now,
// the transaction's snapshot is the database as of c.snapshot.
func (p *project) endRead(c *conn, succeeded bool) error {
	if c.db.GetAutocommit() { // SQLite ended it (rolled back on out of memory)
		c.parked = false
		c.forgetVersion()
		return nil
	}
	if succeeded && c.stamped && !c.parked {
		now, ok := p.stamp()
		c.parked = ok && now == c.snapshot && now.backfilled()
	}
	if succeeded && c.parked {
		return nil
	}
	return c.endTx()
}

// keepVersion makes c, as its transaction begins, read the registry
// version once for the whole transaction (see schemaFor): a reader's read
// transaction, whose snapshot does not change, or the writer's for writes
// that leave the registry alone (runGroup's, runSingle's), which no other
// connection can change while c holds the write lock.
func (c *conn) keepVersion() {
	c.keepsVersion, c.versionRead = true, false
}

// forgetVersion ends keepVersion, as the transaction ends.
func (c *conn) forgetVersion() {
	c.keepsVersion, c.versionRead = false, false
}

// endTx ends c's read transaction.
func (c *conn) endTx() error {
	c.parked = false
	c.forgetVersion()
	if c.db.GetAutocommit() {
		return nil
	}
	return c.exec(`COMMIT`)
}

// stamp is the WAL index stamp of the project's database (see walWatch).
// A project whose writer faulted has none: the writer's connection is what
// keeps the WAL index file, and the mapping, valid.
func (p *project) stamp() (walStamp, bool) {
	if p.faulted.Load() {
		return walStamp{}, false
	}
	return p.wal.stamp()
}

// parkedIdle is how long a reader idle in the pool keeps a parked read
// transaction.
const parkedIdle = 100 * time.Millisecond

// releaseParked ends the parked transactions of the readers idle in the
// pool for at least idle, and says whether some stay parked. A reader
// whose transaction does not end is closed.
func (p *project) releaseParked(idle time.Duration) (left bool) {
	return p.releaseParkedSweeping(idle, false)
}

// releaseParkedSweeping is releaseParked; the sweep (sweeping) ends when
// no reader stays parked.
func (p *project) releaseParkedSweeping(idle time.Duration, sweeping bool) (left bool) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	now := time.Now()
	kept := p.readers[:0]
	for _, c := range p.readers {
		switch {
		case !c.parked:
		case idle > 0 && now.Sub(c.idleSince) < idle:
			left = true
		case c.endTx() != nil:
			c.close()
			continue
		}
		kept = append(kept, c)
	}
	clear(p.readers[len(kept):])
	p.readers = kept
	if sweeping && !left {
		p.sweeping = false
	}
	return left
}

// sweepParked ends, every parkedIdle, the parked transactions of readers
// that have stayed idle that long, until none is parked.
func (p *project) sweepParked() {
	if p.releaseParkedSweeping(parkedIdle, true) {
		time.AfterFunc(parkedIdle, p.sweepParked)
	}
}

func (p *project) takeReader() (*conn, error) {
	p.rmu.Lock()
	if n := len(p.readers); n > 0 {
		c := p.readers[n-1]
		p.readers = p.readers[:n-1]
		p.rmu.Unlock()
		return c, nil
	}
	p.rmu.Unlock()
	return p.openReader("reader")
}

// openReader opens a read-only connection to the project's database (a
// reader, or the point-read connection: what). A database gone (its
// folder removed, which acquire notices only once a second; see replaced)
// is ErrProjectNotFound, and the Store drops the project.
func (p *project) openReader(what string) (*conn, error) {
	c, err := openConn(p.dbPath(), true, p.store.opts.BusyTimeout)
	if err != nil {
		if _, serr := os.Stat(p.dbPath()); os.IsNotExist(serr) {
			p.store.drop(p)
			return nil, errorf(ErrProjectNotFound, "project %q does not exist", p.slug)
		}
		return nil, errors.Wrapf(err, "open %s of project %q", what, p.slug)
	}
	p.store.heap.track(c)
	return c, nil
}

// returnReader puts a reader back in the pool, or closes it when it is in
// an unknown state (a transaction left open, a panic), its heap grew past
// the usual size (see sqliteHeap) or the project closed.
func (p *project) returnReader(c *conn, healthy bool) {
	p.rmu.Lock()
	if healthy && !c.discard && !p.closed {
		p.readers = append(p.readers, c)
		c.idleSince = time.Now()
		if c.parked && !p.sweeping {
			p.sweeping = true
			time.AfterFunc(parkedIdle, p.sweepParked)
		}
		if len(p.readers) > 1 && !p.trimming {
			p.trimming = true
			time.AfterFunc(p.store.opts.readerIdle, p.trimReaders)
		}
		p.rmu.Unlock()
		return
	}
	p.rmu.Unlock()
	c.close()
}

// defaultReaderIdle is how long a reader may stay idle in the pool before
// it is closed, unless it is the pool's most recently used: each reader is
// a SQLite instance whose memory (its page cache, up to some 2 MB) only
// closing gives back, and a project's reads come in bursts. Reopening one
// costs under a millisecond.
const defaultReaderIdle = 30 * time.Second

// trimReaders closes the readers idle in the pool for the reader idle time
// (see defaultReaderIdle), all but the most recently used, and comes back
// for the others while more than one is left.
func (p *project) trimReaders() {
	idle := p.store.opts.readerIdle
	p.rmu.Lock()
	if p.closed {
		p.trimming = false
		p.rmu.Unlock()
		return
	}
	// The pool is a stack: readers go back on top, so the idlest are
	// first, and the last is the most recently used.
	now := time.Now()
	n := 0
	for n < len(p.readers)-1 && now.Sub(p.readers[n].idleSince) >= idle {
		n++
	}
	closing := slices.Clone(p.readers[:n])
	p.readers = slices.Delete(p.readers, 0, n)
	p.trimming = len(p.readers) > 1
	if p.trimming {
		time.AfterFunc(idle-now.Sub(p.readers[0].idleSince), p.trimReaders)
	}
	p.rmu.Unlock()
	for _, c := range closing {
		c.close()
	}
}

// conn is one SQLite connection with a cache of prepared statements. A conn
// is used by one goroutine at a time.
type conn struct {
	db    *sqlite3.Conn
	stmts map[string]*sqlite3.Stmt
	// sandbox, while set, decides what statements prepared on a read-only
	// connection may do (see Query); nil means our own, trusted statements.
	// Its authorizer is installed once: setting an authorizer expires every
	// prepared statement, which would empty the statement cache.
	sandbox *sandbox
	// queries caches the statements of user queries (see queryStatement).
	queries *lru[*userStatement]
	// changingRegistry is set on the writer while writeSchema changes the
	// registry: what it reads then is not cached (see schemaFor).
	changingRegistry bool
	// edit is the registry of the schema change under way on the writer
	// (see writeSchema, reloadTable).
	edit *registryEdit

	heap     *sqliteHeap // the Store's accounting, nil for a connection it does not count
	reserved int64       // bytes reserved from heap for a query that grew
	discard  bool        // closed, not pooled, when given back
	// trapped is set when SQLite's code trapped (its stack overflowed): the
	// instance is unusable, so it is dropped without another call into it,
	// and what it holds is given back (see releaseInstance).
	trapped bool
	// changes is the change-log state of the writer's unit of work.
	changes changeCounts
	// unfolded counts the log records the writer appended since it last
	// folded their row-count deltas (see foldRowCounts).
	unfolded int

	// A reader's read transaction (see project.read): parked, it is kept
	// between reads; its snapshot is the database as of the WAL index
	// stamp snapshot, when stamped. idleSince is when it went back to the
	// pool.
	parked    bool
	stamped   bool
	snapshot  walStamp
	idleSince time.Time
	// version is the registry version of the transaction's snapshot, once
	// schemaFor has read it (versionRead) in a transaction that keeps it
	// (keepsVersion, see keepVersion).
	version      int64
	versionRead  bool
	keepsVersion bool
}

// walStamp is a WAL index header and the log's nBackfill (see walWatch):
// equal stamps, no commit and no checkpoint in between.
type walStamp [13]uint32

// backfilled reports whether checkpoints had copied the whole log into the
// database file (mxFrame, the header's fifth word, equals nBackfill). A
// read transaction begun then reads the file alone (its read mark is 0),
// which holds back no writer from starting the log over; one on a log
// not yet copied would keep a writer from starting it over, and the log
// would grow for as long as readers keep such transactions.
func (s walStamp) backfilled() bool { return s[4] == s[12] }

// openConn opens a connection to the database at path; readOnly connections
// cannot write even if asked to.
func openConn(path string, readOnly bool, busyTimeout time.Duration) (*conn, error) {
	flags := sqlite3.OPEN_READWRITE
	if readOnly {
		flags = sqlite3.OPEN_READONLY
	}
	db, err := sqlite3.OpenFlags(walBufferURI(path), flags|sqlite3.OPEN_URI|sqlite3.OPEN_NOFOLLOW|sqlite3.OPEN_EXRESCODE)
	if err != nil {
		return nil, err
	}
	c := &conn{db: db, stmts: make(map[string]*sqlite3.Stmt)}
	if err := c.configure(readOnly, busyTimeout); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *conn) configure(readOnly bool, busyTimeout time.Duration) error {
	if err := c.db.BusyTimeout(busyTimeout); err != nil {
		return err
	}
	if _, err := c.db.Config(sqlite3.DBCONFIG_DEFENSIVE, true); err != nil {
		return err
	}
	c.db.Limit(sqlite3.LIMIT_ATTACHED, 0)
	c.db.Limit(sqlite3.LIMIT_LIKE_PATTERN_LENGTH, MaxLikePattern)
	pragmas := `PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;`
	if readOnly {
		// Sorts, DISTINCT and temporary tables in SQLite's heap, which a
		// query or a list caps (withinQueryHeap), not in temporary files
		// on the disk every project shares, which nothing caps: a read
		// token could otherwise write hundreds of MB a second of them.
		pragmas += ` PRAGMA query_only=ON; PRAGMA trusted_schema=OFF; PRAGMA temp_store=MEMORY;`
		err := c.db.SetAuthorizer(func(action sqlite3.AuthorizerActionCode, name3rd, name4th, schema, inner string) sqlite3.AuthorizerReturnCode {
			if c.sandbox == nil {
				return sqlite3.AUTH_OK
			}
			return c.sandbox.authorize(action, name3rd, name4th, schema, inner)
		})
		if err != nil {
			return err
		}
	} else {
		pragmas = `PRAGMA journal_mode=WAL; PRAGMA journal_size_limit=` + strconv.Itoa(walKeepBytes) + `; ` + pragmas
		if verifyChangeLog {
			c.watchChanges()
		}
	}
	// On the writer too: a bulk change's like, one call for minutes over a
	// big value, then stops at its write budget or when its request ends.
	if err := c.registerBoundedFunctions(); err != nil {
		return err
	}
	return c.db.Exec(pragmas)
}

// close finalizes the connection's statements and closes it.
func (c *conn) close() error {
	if c.heap != nil {
		c.heap.closed(c)
		c.heap = nil
	}
	if c.trapped {
		releaseInstance(c.db)
		return nil
	}
	// Every statement of the connection: the cached ones, and any left
	// open (a panic of the driver unwound past it), which would keep the
	// connection, and its memory, which only closing gives back, open.
	// Collected first: closing one reorders the driver's list.
	for _, st := range slices.Collect(c.db.Stmts()) {
		st.Close()
	}
	return c.db.Close()
}

// prepare returns the cached statement for sql, preparing it on first use.
// sql is always text of ours, never input: identifiers in it were checked
// against the schema and quoted, and values are bound.
func (c *conn) prepare(sql string) (*sqlite3.Stmt, error) {
	if st, ok := c.stmts[sql]; ok {
		return st, nil
	}
	st, tail, err := c.db.PrepareFlags(sql, sqlite3.PREPARE_PERSISTENT)
	if err != nil {
		return nil, err
	}
	if st == nil || tail != "" {
		if st != nil {
			st.Close()
		}
		return nil, errors.Errorf("prepare: not exactly one statement: %.40q", sql)
	}
	if len(c.stmts) >= maxCachedStmts {
		c.forgetIdleStmts()
	}
	c.stmts[sql] = st
	return st, nil
}

// forgetIdleStmts finalizes the cached statements that are not running: a
// statement stepped by a caller up the stack (whose row callback prepares
// more) stays valid.
func (c *conn) forgetIdleStmts() {
	for sql, st := range c.stmts {
		if !st.Busy() {
			st.Close()
			delete(c.stmts, sql)
		}
	}
}

// queryOnce is query for SQL that is not worth caching (the explanation
// of a failure, say): it is prepared, run and finalized, and leaves the
// cache as it was.
func (c *conn) queryOnce(sql string, args []any, each func(st *sqlite3.Stmt) error) error {
	st, _, err := c.db.Prepare(sql)
	if err != nil {
		return err
	}
	if st == nil {
		return errors.Errorf("prepare: no statement: %.40q", sql)
	}
	defer st.Close()
	return stepStmt(st, args, each)
}

// exec runs a statement with args and discards any rows.
func (c *conn) exec(sql string, args ...any) error {
	return c.query(sql, args, nil)
}

// errStopRows, returned by a row callback of query, ends the statement
// before its last row; the caller takes it for success.
var errStopRows = errors.New("stop reading rows")

// query runs a statement with args and calls each for every row; each may
// be nil. The statement is reset afterwards, whatever happens.
func (c *conn) query(sql string, args []any, each func(st *sqlite3.Stmt) error) (err error) {
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := st.Reset(); err == nil {
			err = rerr
		}
		st.ClearBindings()
	}()
	return stepStmt(st, args, each)
}

// stepStmt binds args to st and steps it to the end, calling each (when not
// nil) for every row.
func stepStmt(st *sqlite3.Stmt, args []any, each func(st *sqlite3.Stmt) error) error {
	if err := bindAll(st, args); err != nil {
		return err
	}
	for st.Step() {
		if each != nil {
			if err := each(st); err != nil {
				return err
			}
		}
	}
	return st.Err()
}

// queryRow runs a statement and calls scan for its first row, if any.
func (c *conn) queryRow(sql string, args []any, scan func(st *sqlite3.Stmt) error) (found bool, err error) {
	err = c.query(sql, args, func(st *sqlite3.Stmt) error {
		if found {
			return nil
		}
		found = true
		return scan(st)
	})
	return found, err
}

// bindAll binds args to the statement's parameters 1..n.
func bindAll(st *sqlite3.Stmt, args []any) error {
	for i, a := range args {
		if err := bind(st, i+1, a); err != nil {
			return err
		}
	}
	return nil
}

// bind binds one Go value. Values reach SQLite only this way, never as SQL
// text.
func bind(st *sqlite3.Stmt, i int, v any) error {
	switch v := v.(type) {
	case nil:
		return st.BindNull(i)
	case int:
		return st.BindInt64(i, int64(v))
	case int64:
		return st.BindInt64(i, v)
	case float64:
		return st.BindFloat(i, v)
	case bool:
		return st.BindBool(i, v)
	case string:
		return st.BindText(i, v)
	case []byte:
		return st.BindBlob(i, v)
	case time.Time:
		return st.BindText(i, formatTime(v))
	case *time.Time:
		if v == nil {
			return st.BindNull(i)
		}
		return st.BindText(i, formatTime(*v))
	default:
		return errors.Errorf("bind: unsupported type %T", v)
	}
}

// columnTime reads a nullable timestamp column.
func columnTime(st *sqlite3.Stmt, col int) *Timestamp {
	if st.ColumnType(col) == sqlite3.NULL {
		return nil
	}
	t, err := parseTime(st.ColumnText(col))
	if err != nil {
		return nil
	}
	return &Timestamp{t}
}

// dbError turns a SQLite failure into the Store's error vocabulary:
// constraint failures get their codes, an interrupt caused by ctx becomes
// ctx's error, a lock that another connection (another Store on the
// folder, another program) held past Options.BusyTimeout is ErrServerBusy,
// anything else stays internal.
func dbError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sqlite3.CONSTRAINT_UNIQUE), errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY):
		return errorf(ErrUniqueViolation, "a row with the same unique value already exists")
	case errors.Is(err, sqlite3.CONSTRAINT_NOTNULL):
		return errorf(ErrNotNullViolation, "a NOT NULL column got no value")
	case errors.Is(err, sqlite3.INTERRUPT) && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, sqlite3.BUSY):
		return errLockedByAnother()
	}
	var code Code
	if errors.As(err, &code) {
		return err
	}
	return errors.WithStack(err)
}
