package projectdata

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"

	"github.com/projectdata/projectdata/sqlguard"
)

// RestoreProject creates project slug from a copy of the SQLite database
// file at src: a project export (see CreateProjectExport), or a project
// database restored from a replica. The project keeps everything the file
// holds, tokens included: a token of the source project works on the
// restored one, whatever its slug. Its slug is set to slug.
//
// The copy is checked before it becomes a project: PRAGMA integrity_check
// must answer ok, the file must hold a project (its control tables and
// project row) and nothing a project never holds (a trigger, a view), and
// its control schema is migrated to this release's version; then its
// control tables must be this release's, its application tables exactly
// those of its registry (see checkRestoredSchema), its tokens of known
// roles, and its row counts are counted afresh. The project is built in a temporary folder and renamed into
// place, so it appears whole or not at all; a bad source leaves nothing
// behind. src itself is only read; it may be the database of a project in
// use (its write-ahead log is read with it, as of one commit).
//
// The restored project's change log starts afresh (see restartChangeLog):
// a follower of the source's log gets ErrChangesExpired, never changes of
// the copy under ids it already saw. If the slug's folder was removed while
// this Store had the project open, the Store drops that open project, so
// no cache of the old database serves the new one. Another Store (another
// process) that has the slug open notices within a second that its file
// was removed or replaced and opens the new one; until then its writes go
// to the removed file and are lost, so a node restores only projects it
// does not serve.
//
// Like CreateProject it is the embedding application's operation (or the
// server's command line): a context carrying a caller is refused. It stops
// when ctx ends, during the copy and the checks too, with ctx's error and
// nothing left behind.
//
// Errors: ErrInvalidProjectSlug, ErrProjectExists, ErrInvalidRequest (src
// is missing, unreadable or not a sound project database),
// ErrPermissionDenied (a caller in ctx), ErrServerBusy (no file descriptor
// free, or src locked by another process past Options.BusyTimeout),
// ErrStoreClosed.
func (s *Store) RestoreProject(ctx context.Context, slug, src string) (Project, error) {
	return s.RestoreProjectWith(ctx, slug, func(ctx context.Context, path string) error {
		return copyRestoreSource(ctx, src, path)
	})
}

// RestoreProjectWith is RestoreProject from the database that fill writes
// at path: a file that does not exist yet, in the restore's temporary
// folder inside the data folder. A database downloaded there (from a
// replica, say) needs no copy and no space outside the data folder. The
// file is checked and adopted as RestoreProject's copy is; fill's error is
// returned as it is, with nothing left behind. If the process dies during
// fill, Open removes the temporary folder once it has gone unmodified for
// an hour.
//
// Errors: those of RestoreProject, ErrInvalidRequest when fill wrote no
// regular file at path, and fill's.
func (s *Store) RestoreProjectWith(ctx context.Context, slug string, fill func(ctx context.Context, path string) error) (Project, error) {
	if err := validateSlug(slug); err != nil {
		return Project{}, err
	}
	if _, ok := CallerFrom(ctx); ok {
		return Project{}, errorf(ErrPermissionDenied, "restoring a project is not an operation of a project token")
	}
	if err := ctx.Err(); err != nil {
		return Project{}, err
	}
	if err := s.begin(); err != nil {
		return Project{}, err
	}
	defer s.end()
	tmp, err := s.stageProject(slug, stagingRestore)
	if err != nil {
		return Project{}, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place

	dbPath := filepath.Join(tmp, dbFileName)
	if err := fill(ctx, dbPath); err != nil {
		return Project{}, err
	}
	// Opening a missing file would create an empty database.
	if info, err := os.Lstat(dbPath); err != nil || !info.Mode().IsRegular() {
		return Project{}, errorf(ErrInvalidRequest, "the restore wrote no database file")
	}
	proj, err := s.adoptRestored(ctx, dbPath, slug)
	if err != nil {
		return Project{}, err
	}
	if err := syncFile(dbPath); err != nil {
		return Project{}, err
	}
	if err := os.Mkdir(filepath.Join(tmp, exportsDirName), 0o755); err != nil {
		return Project{}, errors.Wrap(err, "create exports folder")
	}
	if err := s.placeProject(tmp, slug); err != nil {
		return Project{}, err
	}
	s.forget(slug)
	return proj, nil
}

// copyRestoreSource copies the regular file src to dst. A source with a
// write-ahead log beside it (src-wal, not empty: a project database in use,
// or left so by a crash) is copied by SQLite's backup API on a read-only
// connection instead, so that the copy holds the commits still in the log,
// as of one commit even while another process writes to it. So is a source
// that changed while it was copied (another process opened it, wrote and
// checkpointed into the file): that copy mixes pages of two versions.
func copyRestoreSource(ctx context.Context, src, dst string) error {
	// Looked at before it is opened: opening a FIFO waits for a writer.
	if info, err := os.Stat(src); err == nil && !info.Mode().IsRegular() {
		return errorf(ErrInvalidRequest, "restore source %q is not a regular file", src)
	}
	in, err := os.Open(src)
	if err != nil {
		if busy := unavailable(err); busy != nil {
			return busy
		}
		return errorf(ErrInvalidRequest, "restore source %q cannot be opened: %v", src, pathErrorReason(err))
	}
	defer in.Close()
	before, err := in.Stat()
	if err != nil || !before.Mode().IsRegular() {
		return errorf(ErrInvalidRequest, "restore source %q is not a regular file", src)
	}
	// The log is beside the database, not beside a link to it.
	db := src
	if real, err := filepath.EvalSymlinks(src); err == nil {
		db = real
	}
	if walInUse(db) {
		return backupRestoreSource(ctx, db, dst)
	}
	if err := copyFile(ctx, in, dst); err != nil {
		return err
	}
	after, err := os.Stat(db)
	if err == nil && os.SameFile(before, after) && after.Size() == before.Size() && after.ModTime().Equal(before.ModTime()) && !walInUse(db) {
		return nil
	}
	if err := os.Remove(dst); err != nil {
		return errors.Wrap(err, "remove torn copy of restore source")
	}
	return backupRestoreSource(ctx, db, dst)
}

// walInUse reports whether the database path has a write-ahead log beside
// it that is not empty.
func walInUse(path string) bool {
	info, err := os.Stat(path + "-wal")
	return err == nil && info.Size() > 0
}

// copyFile copies in to the new file dst.
func copyFile(ctx context.Context, in io.Reader, dst string) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return errors.Wrap(err, "create restored database")
	}
	defer out.Close()
	if _, err := io.Copy(out, ctxReader{ctx, in}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.Wrap(err, "copy restore source")
	}
	return errors.Wrap(out.Close(), "close restored database")
}

// backupRestoreSource copies the database src, its write-ahead log
// included, to dst with SQLite's backup API.
func backupRestoreSource(ctx context.Context, src, dst string) error {
	db, err := sqlite3.OpenFlags(src, sqlite3.OPEN_READONLY|sqlite3.OPEN_EXRESCODE)
	if err == nil {
		err = backupTo(ctx, db, dst)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return restoreFailure(err, func(err error) error {
			return errorf(ErrInvalidRequest, "the restore source is not a sound project database: with its write-ahead log, %s", sqliteMessage(err))
		})
	}
	return nil
}

// restoreFailure is SQLite's error err on a restore's copy or its source:
// the server's want of what the process shares (see unavailable) or of
// disk space (see writeFailure), or else what unsound makes of it, a fault
// of the source.
func restoreFailure(err error, unsound func(error) error) error {
	if busy := unavailable(err); busy != nil {
		return busy
	}
	if writeFailure(err) {
		return errors.Wrap(err, "write restored database")
	}
	return unsound(err)
}

// writeFailure reports whether err is SQLite's failure to write a file
// (the disk full, the file size limit): a fault of the restore's copy, not
// of its source.
func writeFailure(err error) bool {
	return errors.Is(err, sqlite3.FULL) || errors.Is(err, sqlite3.IOERR_WRITE) || errors.Is(err, sqlite3.IOERR_FSYNC) ||
		errors.Is(err, sqlite3.IOERR_TRUNCATE)
}

// unavailable is err as ErrServerBusy when it is a want of what the process
// shares (see busyIfUnavailable: file descriptors, a lock another process
// holds), not a fault of the restore source; else nil.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	if busy := busyIfUnavailable(err); ErrorCode(busy) == ErrServerBusy {
		return busy
	}
	return nil
}

// ctxReader is a reader that stops once its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// pathErrorReason is the reason of a file system error without the path,
// which the caller names itself.
func pathErrorReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// adoptRestored checks the copied database at path and makes it project
// slug's: integrity, control tables and project row, then the control
// schema migrated and the slug recorded.
func (s *Store) adoptRestored(ctx context.Context, path, slug string) (proj Project, err error) {
	unsound := func(reason string, args ...any) error {
		if ctx.Err() != nil { // interrupted, not unsound
			return ctx.Err()
		}
		return errorf(ErrInvalidRequest, "the restore source is not a sound project database: "+reason, args...)
	}
	// failed is SQLite's error err on the copy (see restoreFailure).
	failed := func(err error) error {
		return restoreFailure(err, func(err error) error { return unsound("%s", sqliteMessage(err)) })
	}
	c, err := openConn(path, false, s.opts.BusyTimeout)
	if err != nil {
		return proj, failed(err)
	}
	c.db.SetInterrupt(ctx) // integrity_check reads the whole file
	defer func() {
		// Closing the last connection checkpoints the WAL into the file.
		if cerr := c.close(); err == nil && cerr != nil {
			err = errors.Wrap(cerr, "close restored database")
		}
	}()
	var problems []string
	err = c.query(`PRAGMA integrity_check`, nil, func(st *sqlite3.Stmt) error {
		if msg := st.ColumnText(0); msg != "ok" && len(problems) < 3 {
			problems = append(problems, msg)
		}
		return nil
	})
	if err != nil {
		return proj, failed(err)
	}
	if len(problems) > 0 {
		return proj, unsound("integrity_check: %q", problems)
	}
	check := func(reason string, err error) error {
		if err != nil {
			return failed(err)
		}
		if reason != "" {
			return unsound("%s", reason)
		}
		return nil
	}
	if err := check(checkRestoredObjects(c)); err != nil {
		return proj, err
	}
	src, err := readProject(c)
	if err != nil {
		return proj, unsound("it holds no project")
	}
	if strings.TrimSpace(src.Name) == "" || !utf8.ValidString(src.Name) { // a name of an older release may hold control characters
		return proj, unsound("its project name %.60q is not valid", src.Name)
	}
	if err := migrate(c); err != nil {
		if writeFailure(err) {
			return proj, failed(err)
		}
		return proj, unsound("%s", err)
	}
	sc, reason, err := checkRestoredSchema(c)
	if err := check(reason, err); err != nil {
		return proj, err
	}
	tx, err := c.db.BeginImmediate()
	if err != nil {
		return proj, err
	}
	defer tx.End(&err)
	if err := c.exec(`UPDATE _pd_project SET slug = ? WHERE id = 1`, slug); err != nil {
		return proj, err
	}
	if err := restartChangeLog(c, s.now()); err != nil {
		return proj, err
	}
	// A copy edited by hand may hold any counts: count afresh.
	for _, t := range sc.tables {
		if err := countRows(c, t.ID, t.quoted); err != nil {
			return proj, errors.WithMessage(err, "count rows")
		}
	}
	return readProject(c)
}

// restoredChangeGap is how far past the source's last change id the change
// log of a restored project starts: farther than any change a client of
// the source can have seen that the copy lacks (those of the last seconds
// before a crash).
const restoredChangeGap = 1 << 30

// restartChangeLog replaces the change log of a restored database with one
// schema change on table "" (the whole database was replaced), whose id is
// restoredChangeGap past the source's last change. A client resuming the
// log of the source (ListChanges, FollowChanges, the SSE stream) with any
// id it can hold then gets ErrChangesExpired and reads the data afresh,
// instead of silently skipping changes whose ids the restored database
// reuses.
func restartChangeLog(c *conn, at time.Time) error {
	if err := foldRowCounts(c); err != nil { // the row counts sum the records deleted
		return err
	}
	if err := c.exec(`INSERT INTO _pd_changes (last_id, count, table_name, op, at, data)
		SELECT coalesce(max(last_id), 0) + ?, 1, '', ?, ?, NULL FROM _pd_changes`,
		restoredChangeGap, ChangeSchema, at); err != nil {
		return errors.WithMessage(err, "restart the change log")
	}
	return errors.WithMessage(c.exec(`DELETE FROM _pd_changes WHERE last_id < (SELECT max(last_id) FROM _pd_changes)`), "restart the change log")
}

// forget drops the open project slug, if any, from the Store after its
// folder was replaced (RestoreProject into a slug whose folder was removed
// while the project was open): the next operation opens the new database,
// with its own registry, schema and token caches. The old one is closed
// now when idle, else by the release of its last operation.
func (s *Store) forget(slug string) {
	s.forgetIf(slug, func(*project) bool { return true })
}

// drop is forget for the open project p only (not another opened since
// under its slug).
func (s *Store) drop(p *project) {
	s.forgetIf(p.slug, func(q *project) bool { return q == p })
}

// forgetIf is forget when match reports true of the open project slug.
func (s *Store) forgetIf(slug string, match func(p *project) bool) {
	var old *project
	s.mu.Lock()
	s.projects.removeIf(slug, func(p *project) bool {
		if match(p) {
			old = p
			return true
		}
		return false
	})
	idle := old != nil && old.refs == 0
	if old != nil {
		old.forgotten = true
	}
	if idle {
		s.closing.Add(1)
	}
	s.mu.Unlock()
	if idle {
		s.closeForgotten(old)
	}
}

// closeForgotten closes a forgotten project once its open has finished,
// for Close to wait on (s.closing).
func (s *Store) closeForgotten(p *project) {
	defer s.closing.Done()
	<-p.ready
	if p.openErr == nil {
		s.closeQuietly(p)
	}
}

// checkRestoredObjects refuses a copy holding a trigger or a view, which
// the Store never makes. It runs before anything writes to the copy: a
// trigger would run on the Store's own writes, and write past the change
// log and the row counts.
func checkRestoredObjects(c *conn) (reason string, err error) {
	err = c.query(`SELECT type, name FROM sqlite_schema WHERE type IN ('trigger', 'view') LIMIT 1`, nil, func(st *sqlite3.Stmt) error {
		reason = fmt.Sprintf("it holds a %s (%.60q), which no project has", st.ColumnText(0), st.ColumnText(1))
		return nil
	})
	return reason, err
}

// checkRestoredSchema compares the migrated copy with what this release
// makes, so that a copy edited by hand (a control table dropped or
// reshaped, an application table dropped, a column added behind the
// registry's back, a uniqueness dropped, a token given an unknown role)
// is refused instead of failing request after request: the control
// tables, with their columns and indexes, are those of a new project's
// database; the application tables are exactly the registry's, with its
// columns in its order, of its types, and none of the clauses the Store
// never writes (a foreign key, whose actions would change rows past the
// change log and the row counts, a check, a collation, a conflict clause,
// WITHOUT ROWID, a default the registry does not have); tokens have known
// roles. It returns the registry and the first difference found, "" when
// there is none.
func checkRestoredSchema(c *conn) (sc *schema, reason string, err error) {
	want, err := newControlShape()
	if err != nil {
		return nil, "", err
	}
	got, err := tableShapes(c, true)
	if err != nil {
		return nil, "", err
	}
	for name, shape := range want {
		switch g, ok := got[name]; {
		case !ok:
			return nil, fmt.Sprintf("control table %s is missing", name), nil
		case g != shape:
			return nil, fmt.Sprintf("control table %s differs from this release's", name), nil
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			return nil, fmt.Sprintf("it holds a control table %.60q that this release does not know", name), nil
		}
	}

	sc, err = loadSchema(c)
	if err != nil {
		return nil, fmt.Sprintf("its registry of tables cannot be read: %v", err), nil
	}
	apps, err := tableShapes(c, false)
	if err != nil {
		return nil, "", err
	}
	for _, t := range sc.tables {
		for _, col := range t.columns {
			if _, err := parseColumnType(string(col.Type)); err != nil || col.Type == "" {
				return nil, fmt.Sprintf("column %q of table %q has the unknown type %.40q", col.Name, t.Name, col.Type), nil
			}
		}
		shape, ok := apps[strings.ToLower(t.Name)]
		if !ok {
			return nil, fmt.Sprintf("table %q of its registry is missing", t.Name), nil
		}
		delete(apps, strings.ToLower(t.Name))
		if shape != registryShape(t) {
			return nil, fmt.Sprintf("table %q differs from its registry's columns", t.Name), nil
		}
	}
	for name := range apps {
		return nil, fmt.Sprintf("it holds a table %.60q that its registry does not know", name), nil
	}

	var role string
	if _, err := c.queryRow(`SELECT role FROM _pd_tokens WHERE role NOT IN (?, ?, ?) LIMIT 1`, []any{string(RoleRead), string(RoleWrite), string(RoleAdmin)}, func(st *sqlite3.Stmt) error {
		role = st.ColumnText(0)
		return nil
	}); err != nil || role != "" {
		return nil, fmt.Sprintf("a token has the unknown role %.40q", role), err
	}
	return sc, "", nil
}

// tableShapes describes the tables of the database on c, by lower-case
// name: the control tables (control) or the application tables (the
// others, SQLite's own and Litestream's, which it adds to every database
// it replicates, left out). A table's shape tells whether it is WITHOUT
// ROWID or STRICT, lists its columns (name, declared type, NOT NULL,
// primary key, hidden or generated, whether it has a default), its
// foreign keys, the CHECK, COLLATE and ON CONFLICT clauses of its SQL,
// and, for a control table, its indexes; for an application table, its
// UNIQUE columns (its indexes, managed or not, do not matter). A virtual
// table's shape is "virtual".
func tableShapes(c *conn, control bool) (map[string]string, error) {
	type table struct{ name, sql string }
	var tables []table
	err := c.query(`SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND name NOT LIKE '\_litestream\_%' ESCAPE '\' AND (name LIKE '\_pd\_%' ESCAPE '\') = ?`, []any{control}, func(st *sqlite3.Stmt) error {
		tables = append(tables, table{st.ColumnText(0), st.ColumnText(1)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	shapes := make(map[string]string, len(tables))
	for _, t := range tables {
		if !strings.HasPrefix(strings.ToUpper(t.sql), "CREATE TABLE") {
			shapes[strings.ToLower(t.name)] = "virtual"
			continue
		}
		var b strings.Builder
		_, err := c.queryRow(`SELECT wr, strict FROM pragma_table_list WHERE schema = 'main' AND name = ?`, []any{t.name}, func(st *sqlite3.Stmt) error {
			fmt.Fprintf(&b, "without rowid %d, strict %d\n", st.ColumnInt(0), st.ColumnInt(1))
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = c.query(`SELECT name, type, "notnull", pk, hidden, dflt_value IS NOT NULL FROM pragma_table_xinfo(?)`, []any{t.name}, func(st *sqlite3.Stmt) error {
			fmt.Fprintf(&b, "%q %q %d %d %d default %d\n", st.ColumnText(0), st.ColumnText(1), st.ColumnInt(2), st.ColumnInt(3), st.ColumnInt(4), st.ColumnInt(5))
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Foreign keys, and the clauses of the table's SQL that no
		// pragma tells: their actions and conflict clauses change rows
		// past the change log and the row counts, and checks and
		// collations change what the Store's writes and filters do.
		var more []string
		err = c.query(`SELECT "table", "from", "to", on_update, on_delete, "match" FROM pragma_foreign_key_list(?)`, []any{t.name}, func(st *sqlite3.Stmt) error {
			more = append(more, fmt.Sprintf("foreign key %q %q %q %s %s %s", st.ColumnText(0), st.ColumnText(1), st.ColumnText(2), st.ColumnText(3), st.ColumnText(4), st.ColumnText(5)))
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, kw := range []string{"CHECK", "COLLATE", "CONFLICT"} {
			if sqlguard.HasKeyword(t.sql, kw) {
				more = append(more, "clause "+kw)
			}
		}
		slices.Sort(more)
		for _, m := range more {
			b.WriteString(m + "\n")
		}
		var indexes []string
		err = c.query(`SELECT l."unique", l.origin, (SELECT json_group_array(name) FROM pragma_index_info(l.name))
			FROM pragma_index_list(?) AS l`, []any{t.name}, func(st *sqlite3.Stmt) error {
			unique, origin, cols := st.ColumnBool(0), st.ColumnText(1), st.ColumnText(2)
			switch {
			case control:
				indexes = append(indexes, fmt.Sprintf("index %t %s %s", unique, origin, cols))
			case unique && origin == "u" && !strings.Contains(cols, ","): // a UNIQUE column
				indexes = append(indexes, "unique "+cols)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(indexes)
		indexes = slices.Compact(indexes)
		for _, ix := range indexes {
			b.WriteString(ix + "\n")
		}
		shapes[strings.ToLower(t.name)] = b.String()
	}
	return shapes, nil
}

// registryShape is the shape (see tableShapes) that the table the registry
// describes as t has.
func registryShape(t *tableInfo) string {
	var b strings.Builder
	b.WriteString("without rowid 0, strict 0\n")
	var unique []string
	for _, col := range t.columns {
		notNull, pk := !col.IsNullable, 0
		if col.IsPrimary {
			notNull, pk = col.Type != TypeInteger, 1 // INTEGER PRIMARY KEY: the rowid, NULL meaning a new one
		}
		n := 0
		if notNull {
			n = 1
		}
		def := 0
		if col.DefaultValue != nil {
			def = 1
		}
		fmt.Fprintf(&b, "%q %q %d %d 0 default %d\n", col.Name, string(col.Type), n, pk, def)
		if col.IsUnique && !col.IsPrimary {
			cols, _ := json.Marshal([]string{col.Name})
			unique = append(unique, "unique "+string(cols))
		}
	}
	slices.Sort(unique)
	for _, u := range unique {
		b.WriteString(u + "\n")
	}
	return b.String()
}

// newControlShape returns the shapes of the control tables (see
// tableShapes) of a new project's database, made once.
var newControlShape = sync.OnceValues(func() (map[string]string, error) {
	c, err := openConn(":memory:", false, 0)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := migrate(c); err != nil {
		return nil, err
	}
	return tableShapes(c, true)
})
