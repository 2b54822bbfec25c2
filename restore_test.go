package projectdata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// dataFolder lists the names in a data folder.
func dataFolder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestRestoreProject(t *testing.T) {
	t.Run("RestoresEverythingUnderANewSlug", func(t *testing.T) {
		is := is.New(t)
		src, token := pdtest.NewProject(t, nil)
		_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
		is.NoErr(err)
		_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}, {"body": "two"}})
		is.NoErr(err)
		dst, dstDir := pdtest.Open(t, nil)
		path := pdtest.Snapshot(t, src)
		proj, err := dst.RestoreProject(ctx, "copy", path)
		is.NoErr(err)
		is.Equal(proj.Slug, "copy")
		is.Equal(proj.Name, "Acme")
		is.Equal(dataFolder(t, dstDir), []string{"copy"}) // nothing else left behind
		is.Equal(dataFolder(t, filepath.Join(dstDir, "copy")), []string{"exports", "project.db"})
		got, _, err := dst.GetProject(ctx, "copy")
		is.NoErr(err)
		is.Equal(got, proj)
		row, err := dst.GetRecord(ctx, "copy", "notes", 2)
		is.NoErr(err)
		is.Equal(row["body"], "two")
		l, err := dst.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(*l.Total, int64(2)) // the count of the insert survives the restarted change log
		pdtest.CheckRowCounts(t, dstDir, "copy")
		caller, err := dst.Authenticate(ctx, "copy", token) // the source's token works
		is.NoErr(err)
		is.Equal(caller.Role, projectdata.RoleAdmin)
	})
	t.Run("KeepsTheCommitsOfALiveDatabasesLog", func(t *testing.T) {
		is := is.New(t)
		// No checkpoints: the background one, due 250 ms after the last
		// write, would copy the log into project.db under a slow run.
		src, srcDir := pdtest.Open(t, &projectdata.Options{ReplicatorCheckpoints: true})
		_, _, err := src.CreateProject(ctx, "acme", "Acme")
		is.NoErr(err)
		_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
		is.NoErr(err)
		_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}, {"body": "two"}})
		is.NoErr(err)
		// src is open: its last commits are in project.db-wal only.
		live := filepath.Join(srcDir, "acme", "project.db")
		wal, err := os.Stat(live + "-wal")
		is.NoErr(err)
		is.True(wal.Size() > 0)
		before := pdtest.FileSum(t, srcDir, "acme")
		dst, dstDir := pdtest.Open(t, nil)
		_, err = dst.RestoreProject(ctx, "copy", live)
		is.NoErr(err)
		l, err := dst.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(*l.Total, int64(2))
		is.Equal(len(l.Rows), 2)
		pdtest.CheckRowCounts(t, dstDir, "copy")
		is.Equal(pdtest.FileSum(t, srcDir, "acme"), before) // only read
	})
	t.Run("KeepsLitestreamsTables", func(t *testing.T) {
		is := is.New(t)
		src, _ := pdtest.NewProject(t, nil)
		// As Litestream leaves them in every database it replicates.
		path := edited(`CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);
			CREATE TABLE _litestream_lock (id INTEGER)`)(t, pdtest.Snapshot(t, src))
		dst, _ := pdtest.Open(t, nil)
		_, err := dst.RestoreProject(ctx, "copy", path)
		is.NoErr(err)
	})
	t.Run("CountsRowsAfresh", func(t *testing.T) {
		is := is.New(t)
		src, _ := pdtest.NewProject(t, nil)
		_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
		is.NoErr(err)
		_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}, {"body": "two"}})
		is.NoErr(err)
		path := edited(`UPDATE _pd_row_counts SET row_count = 999`)(t, pdtest.Snapshot(t, src))
		dst, dstDir := pdtest.Open(t, nil)
		_, err = dst.RestoreProject(ctx, "copy", path)
		is.NoErr(err)
		l, err := dst.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(*l.Total, int64(2)) // not the 999 the copy said
		pdtest.CheckRowCounts(t, dstDir, "copy")
	})
	t.Run("RefusesAnExistingSlug", func(t *testing.T) {
		is := is.New(t)
		src, _ := pdtest.NewProject(t, nil)
		path := pdtest.Snapshot(t, src)
		dst, dstDir := pdtest.Open(t, nil)
		_, _, err := dst.CreateProject(ctx, "acme", "Other")
		is.NoErr(err)
		before := pdtest.FileSum(t, dstDir, "acme")
		_, err = dst.RestoreProject(ctx, "acme", path)
		pdtest.Code(t, err, projectdata.ErrProjectExists)
		is.Equal(pdtest.FileSum(t, dstDir, "acme"), before)
		is.Equal(dataFolder(t, dstDir), []string{"acme"})
	})
	t.Run("RefusesAnInvalidSlug", func(t *testing.T) {
		src, _ := pdtest.NewProject(t, nil)
		dst, _ := pdtest.Open(t, nil)
		_, err := dst.RestoreProject(ctx, "../x", pdtest.Snapshot(t, src))
		pdtest.Code(t, err, projectdata.ErrInvalidProjectSlug)
	})
	t.Run("RefusesAProjectToken", func(t *testing.T) {
		src, _ := pdtest.NewProject(t, nil)
		_, err := src.RestoreProject(pdtest.As(t, src, projectdata.RoleAdmin), "copy", pdtest.Snapshot(t, src))
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	})

	// Each bad source is refused with invalid_request and leaves the data
	// folder as it was.
	bad := []struct {
		name string
		make func(t *testing.T, good string) string
	}{
		{"Missing", func(t *testing.T, good string) string { return filepath.Join(t.TempDir(), "nothing.sqlite") }},
		{"Folder", func(t *testing.T, good string) string { return t.TempDir() }},
		{"NotSQLite", func(t *testing.T, good string) string {
			return writeFile(t, []byte("id,body\n1,hello\n"))
		}},
		{"Empty", func(t *testing.T, good string) string { return writeFile(t, nil) }},
		{"Truncated", func(t *testing.T, good string) string {
			b := readFile(t, good)
			return writeFile(t, b[:len(b)/2])
		}},
		{"CorruptPages", func(t *testing.T, good string) string {
			b := readFile(t, good)
			for i := len(b) - 3*4096; i < len(b)-4096; i++ {
				b[i] = 0xA5
			}
			return writeFile(t, b)
		}},
		{"NotAProject", func(t *testing.T, good string) string {
			path := filepath.Join(t.TempDir(), "plain.db")
			c := openRawFile(t, path)
			pdtest.Exec(t, c, `CREATE TABLE t (x); INSERT INTO t VALUES (1)`)
			c.Close()
			return path
		}},
		{"NewerControlSchema", edited(`PRAGMA user_version = 999`)},
		// Copies edited by hand, which the Store would fail on request
		// after request, or whose guarantees they would break.
		{"Trigger", edited(`CREATE TRIGGER evil AFTER INSERT ON notes BEGIN DELETE FROM notes; END`)},
		{"View", edited(`CREATE VIEW v AS SELECT 1`)},
		{"DroppedControlTable", edited(`DROP TABLE _pd_columns`)},
		{"ReshapedControlTable", edited(`ALTER TABLE _pd_tokens ADD COLUMN x`)},
		{"UnknownControlTable", edited(`CREATE TABLE _pd_extra (x)`)},
		{"DroppedTable", edited(`DROP TABLE notes`)},
		{"UnregisteredTable", edited(`CREATE TABLE stray (x)`)},
		{"UnregisteredColumn", edited(`ALTER TABLE notes ADD COLUMN secret TEXT`)},
		{"RenamedColumn", edited(`ALTER TABLE notes RENAME COLUMN body TO other`)},
		{"UniquenessDropped", edited(`CREATE TABLE notes2 (id INTEGER PRIMARY KEY, body TEXT, code TEXT);
			INSERT INTO notes2 SELECT * FROM notes; DROP TABLE notes; ALTER TABLE notes2 RENAME TO notes`)},
		{"GeneratedColumn", edited(`ALTER TABLE notes ADD COLUMN big TEXT AS (zeroblob(1000000))`)},
		// Clauses of a table's SQL that the shape of its columns does not
		// show: a foreign key's action writes past the change log and the
		// row counts (here, deleting a note would clear a token's
		// revocation), and the others change what writes and filters do.
		{"ForeignKeyOnAControlTable", edited(`CREATE TABLE tok2 (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
			role TEXT NOT NULL, secret_sha256 BLOB NOT NULL UNIQUE, expires_at TEXT,
			revoked_at TEXT REFERENCES notes(code) ON DELETE SET NULL, last_used_at TEXT, created_at TEXT NOT NULL);
			INSERT INTO tok2 SELECT * FROM _pd_tokens; DROP TABLE _pd_tokens; ALTER TABLE tok2 RENAME TO _pd_tokens`)},
		{"ForeignKey", rebuiltNotes(`id INTEGER PRIMARY KEY, body TEXT, code TEXT UNIQUE REFERENCES notes(code) ON DELETE CASCADE`)},
		{"WithoutRowid", edited(`CREATE TABLE keyed2 ("k" TEXT PRIMARY KEY NOT NULL, "v" TEXT) WITHOUT ROWID;
			DROP TABLE keyed; ALTER TABLE keyed2 RENAME TO keyed`)},
		{"Check", rebuiltNotes(`id INTEGER PRIMARY KEY, body TEXT CHECK (body <> 'x'), code TEXT UNIQUE`)},
		{"Collation", rebuiltNotes(`id INTEGER PRIMARY KEY, body TEXT COLLATE NOCASE, code TEXT UNIQUE`)},
		{"ConflictClause", rebuiltNotes(`id INTEGER PRIMARY KEY, body TEXT, code TEXT UNIQUE ON CONFLICT REPLACE`)},
		{"DefaultNotInTheRegistry", rebuiltNotes(`id INTEGER PRIMARY KEY, body TEXT DEFAULT 'planted', code TEXT UNIQUE`)},
		{"UnknownColumnType", func(t *testing.T, good string) string {
			path := rebuiltNotes(`id INTEGER PRIMARY KEY, body FOO, code TEXT UNIQUE`)(t, good)
			return edited(`UPDATE _pd_columns SET type = 'FOO' WHERE name = 'body'`)(t, path)
		}},
		{"UnknownRole", edited(`UPDATE _pd_tokens SET role = 'root'`)},
		{"BlankProjectName", edited(`UPDATE _pd_project SET name = ' '`)},
	}
	for _, tc := range bad {
		t.Run("Refuses"+tc.name+"Source", func(t *testing.T) {
			is := is.New(t)
			src, _ := pdtest.NewProject(t, nil)
			_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}, {Name: "code", Unique: true}}})
			is.NoErr(err)
			_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "keyed", Columns: []projectdata.ColumnDef{{Name: "k", Primary: true}, {Name: "v"}}})
			is.NoErr(err)
			rows := make([]projectdata.Row, 2000)
			for i := range rows {
				rows[i] = projectdata.Row{"body": "a body long enough to fill a few pages of the database file"}
			}
			_, err = src.Insert(ctx, "acme", "notes", rows)
			is.NoErr(err)
			path := tc.make(t, pdtest.Snapshot(t, src))
			dst, dstDir := pdtest.Open(t, nil)
			_, err = dst.RestoreProject(ctx, "copy", path)
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
			t.Log(err)
			is.Equal(dataFolder(t, dstDir), []string{}) // nothing left behind
			_, _, err = dst.GetProject(ctx, "copy")
			pdtest.Code(t, err, projectdata.ErrProjectNotFound)
		})
	}
}

// rebuiltNotes is edited with the table notes made again with the columns
// cols (SQL), its rows copied.
func rebuiltNotes(cols string) func(t *testing.T, good string) string {
	return edited(`CREATE TABLE notes2 (` + cols + `); INSERT INTO notes2 SELECT * FROM notes;
		DROP TABLE notes; ALTER TABLE notes2 RENAME TO notes`)
}

// edited makes a bad restore source: a copy of the good one changed by the
// SQL statements sql.
func edited(sql string) func(t *testing.T, good string) string {
	return func(t *testing.T, good string) string {
		path := writeFile(t, readFile(t, good))
		c := openRawFile(t, path)
		pdtest.Exec(t, c, sql)
		c.Close()
		return path
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes b to a new file and returns its path.
func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source.sqlite")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openRawFile opens (creating) a SQLite database of the test's own.
func openRawFile(t *testing.T, path string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRestoreAfterEverySchemaChange: the restore checks (see
// checkRestoredSchema) take a project that went through every kind of
// schema change the Store makes, rebuilds included.
func TestRestoreAfterEverySchemaChange(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	up := func(table, col string, u projectdata.ColumnUpdate) {
		t.Helper()
		_, err := s.UpdateColumn(ctx, "acme", table, col, u)
		is.NoErr(err)
	}
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name", NotNull: true, Default: "x"}, {Name: "qty", Type: "INTEGER", Unique: true}, {Name: "price", Type: "REAL"},
		{Name: "n", Type: "NUMERIC"}, {Name: "ok", Type: "BOOLEAN", Default: true}, {Name: "at", Type: "DATETIME"}, {Name: "later"},
	}})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "codes", Columns: []projectdata.ColumnDef{{Name: "code", Primary: true}, {Name: "label"}}})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "empty", Columns: []projectdata.ColumnDef{{Name: "k", Type: "INTEGER", Primary: true}, {Name: "v"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "a", "qty": 1, "price": 2.5, "n": 3}, {"qty": 2, "n": 4}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "codes", []projectdata.Row{{"code": "A", "label": "a"}})
	is.NoErr(err)
	_, err = s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "extra", NotNull: true, Default: 0, Type: "INTEGER"})
	is.NoErr(err)
	_, err = s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "u", Unique: true})
	is.NoErr(err)
	up("items", "price", projectdata.ColumnUpdate{Name: projectdata.Update[string]{Set: true, To: "cost"}})
	up("items", "later", projectdata.ColumnUpdate{Type: projectdata.Update[string]{Set: true, To: "integer"}})
	up("codes", "label", projectdata.ColumnUpdate{Unique: projectdata.Update[bool]{Set: true, To: true}})
	up("items", "qty", projectdata.ColumnUpdate{Unique: projectdata.Update[bool]{Set: true, To: false}})
	up("items", "n", projectdata.ColumnUpdate{Nullable: projectdata.Update[bool]{Set: true, To: false}, Default: projectdata.Update[any]{Set: true, To: 3}})
	up("items", "ok", projectdata.ColumnUpdate{Default: projectdata.Update[any]{Set: true, To: nil}})
	up("empty", "k", projectdata.ColumnUpdate{Type: projectdata.Update[string]{Set: true, To: "TEXT"}})
	_, err = s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"cost"}, Unique: true})
	is.NoErr(err)
	_, err = s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"name", "qty"}})
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "gone", Columns: []projectdata.ColumnDef{{Name: "x"}}})
	is.NoErr(err)
	_, err = s.DeleteTable(ctx, "acme", "gone")
	is.NoErr(err)
	dst, _ := pdtest.Open(t, nil)
	_, err = dst.RestoreProject(ctx, "copy", pdtest.Snapshot(t, s))
	is.NoErr(err)
}

// TestReplacedProjectIsReopened: when another process removes a project's
// folder and restores the project anew while this Store has it open, the
// Store serves the new database within a second or so, and writes go to it,
// not to the removed file; a project whose folder is gone is not found.
func TestReplacedProjectIsReopened(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "restored"}})
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, src)

	served, dir := pdtest.Open(t, nil)
	_, _, err = served.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = served.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = served.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "old"}})
	is.NoErr(err)

	other, err := projectdata.Open(dir, nil) // the command line, say
	is.NoErr(err)
	defer other.Close()
	is.NoErr(os.RemoveAll(filepath.Join(dir, "acme")))
	_, err = other.RestoreProject(ctx, "acme", snapshot)
	is.NoErr(err)
	time.Sleep(1100 * time.Millisecond) // the Store looks once a second
	row, err := served.GetRecord(ctx, "acme", "notes", 1)
	is.NoErr(err)
	is.Equal(row["body"], "restored")
	_, err = served.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "after"}})
	is.NoErr(err)
	l, err := other.ListRecords(ctx, "acme", "notes", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*l.Total, int64(2)) // the write went to the restored database

	is.NoErr(os.RemoveAll(filepath.Join(dir, "acme")))
	time.Sleep(1100 * time.Millisecond)
	_, err = served.GetRecord(ctx, "acme", "notes", 1)
	pdtest.Code(t, err, projectdata.ErrProjectNotFound)
}

// TestOldProjectClosedAfterRestoreKeepsTheNewOnesLog: a project restored
// into the slug of one still in use (its folder moved away, an operation
// running on it) takes writes before the old project is closed; closing
// the old database must not touch the new one's files.
func TestOldProjectClosedAfterRestoreKeepsTheNewOnesLog(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, src)

	s, dir := pdtest.Open(t, &projectdata.Options{ReplicatorCheckpoints: true}) // the log keeps its commits
	_, _, err = s.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "old", Columns: []projectdata.ColumnDef{{Name: "x"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "old", []projectdata.Row{{"x": 1}})
	is.NoErr(err)
	_, release, err := s.Pin(ctx, "acme") // an operation still running on the old project
	is.NoErr(err)

	is.NoErr(os.Rename(filepath.Join(dir, "acme"), filepath.Join(t.TempDir(), "acme-old")))
	_, err = s.RestoreProject(ctx, "acme", snapshot)
	is.NoErr(err)
	for i := range 3 {
		_, err = s.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": i}})
		is.NoErr(err)
	}
	release() // the old project closes now

	c := pdtest.Raw(t, dir, "acme")
	is.Equal(rawCount(t, c, `SELECT count(*) FROM notes`), 3)
	is.NoErr(c.Close())
	is.NoErr(s.Close())
	s2, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer s2.Close()
	l, err := s2.ListRecords(ctx, "acme", "notes", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*l.Total, int64(3))
}

// TestRestoreThroughALinkKeepsTheLog: a restore source given as a
// symbolic link to a project database in use is read with the log beside
// the database, not beside the link: the commits only in the log are kept.
func TestRestoreThroughALinkKeepsTheLog(t *testing.T) {
	is := is.New(t)
	src, srcDir := pdtest.Open(t, nil)
	_, _, err := src.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}, {"body": "two"}})
	is.NoErr(err)
	live := filepath.Join(srcDir, "acme", "project.db")
	wal, err := os.Stat(live + "-wal")
	is.NoErr(err)
	is.True(wal.Size() > 0) // src is open: its last commits are in its log only
	link := filepath.Join(t.TempDir(), "latest.db")
	is.NoErr(os.Symlink(live, link))

	dst, _ := pdtest.Open(t, nil)
	_, err = dst.RestoreProject(ctx, "copy", link)
	is.NoErr(err)
	l, err := dst.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(*l.Total, int64(2))
}

// TestConcurrentRestoresOfOneSlug: restores of one slug at once, while
// requests to the slug run: one restore wins, the others are
// ErrProjectExists, requests see no project or the whole restored one,
// and the data folder holds the project and nothing else.
func TestConcurrentRestoresOfOneSlug(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 500)
	for i := range rows {
		rows[i] = projectdata.Row{"body": i}
	}
	_, err = src.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, src)

	for round := range 3 {
		s, dir := pdtest.Open(t, nil)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			restored int
			stop     = make(chan struct{})
			reqErr   error
		)
		wg.Go(func() { // requests to the slug all along
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := s.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{Limit: 1})
				switch {
				case projectdata.ErrorCode(err) == projectdata.ErrProjectNotFound:
				case err != nil:
					reqErr = err
					return
				case *l.Total != 500:
					reqErr = errors.New("a partial project was served")
					return
				}
			}
		})
		var restores sync.WaitGroup
		for range 4 {
			restores.Go(func() {
				_, err := s.RestoreProject(ctx, "copy", snapshot)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					restored++
					return
				}
				if projectdata.ErrorCode(err) != projectdata.ErrProjectExists {
					t.Errorf("round %d: restore: %v", round, err)
				}
			})
		}
		restores.Wait()
		close(stop)
		wg.Wait()
		is.NoErr(reqErr)
		is.Equal(restored, 1)
		is.Equal(dataFolder(t, dir), []string{"copy"})
		pdtest.CheckRowCounts(t, dir, "copy")
		l, err := s.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		is.Equal(*l.Total, int64(500))
	}
}

// hookCtx is a context that runs hook once, the nth time its Err is asked:
// in RestoreProject, while the source is being copied.
type hookCtx struct {
	context.Context
	mu   sync.Mutex
	n    int
	hook func()
}

func (c *hookCtx) Err() error {
	c.mu.Lock()
	c.n--
	run := c.n == 0
	c.mu.Unlock()
	if run {
		c.hook()
	}
	return c.Context.Err()
}

// TestRestoreOfADatabaseOpenedDuringTheCopy restores from the database of
// a project that was closed (no write-ahead log beside it) when the
// restore looked, and that another Store opens, writes and checkpoints
// while the restore copies it: the copy is the database as of one commit,
// before that write or after it, never a mix of pages of both.
func TestRestoreOfADatabaseOpenedDuringTheCopy(t *testing.T) {
	for _, closes := range []bool{false, true} {
		t.Run(fmt.Sprintf("ClosedAfter=%v", closes), func(t *testing.T) {
			is := is.New(t)
			src, srcDir := pdtest.Open(t, nil)
			_, _, err := src.CreateProject(ctx, "acme", "Acme")
			is.NoErr(err)
			_, _, err = src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "seq", Columns: []projectdata.ColumnDef{{Name: "v"}}})
			is.NoErr(err)
			rows := make([]projectdata.Row, 5000)
			for i := range rows {
				rows[i] = projectdata.Row{"v": strings.Repeat("a", 200)}
			}
			for range 4 {
				_, err = src.Insert(ctx, "acme", "seq", rows)
				is.NoErr(err)
			}
			is.NoErr(src.Close()) // the project is closed: no log beside its file

			hook := func() { // another process opens the project, writes and checkpoints
				other, err := projectdata.Open(srcDir, nil)
				is.NoErr(err)
				_, err = other.UpdateRecords(ctx, "acme", "seq", projectdata.BulkUpdate{Data: projectdata.Row{"v": strings.Repeat("b", 200)}, AllowAll: true})
				is.NoErr(err)
				raw := pdtest.Raw(t, srcDir, "acme")
				pdtest.Exec(t, raw, `PRAGMA wal_checkpoint(PASSIVE)`)
				is.NoErr(raw.Close())
				if closes {
					is.NoErr(other.Close()) // its log checkpointed and removed
				} else {
					t.Cleanup(func() { other.Close() }) // as a server would: its log stays beside the file
				}
			}
			dst, dstDir := pdtest.Open(t, &projectdata.Options{QueryTimeout: time.Minute}) // what is tested is not time: a slow machine (-race) too
			hc := &hookCtx{Context: ctx, n: 20, hook: hook}
			_, err = dst.RestoreProject(hc, "copy", filepath.Join(srcDir, "acme", "project.db"))
			is.True(hc.n < 0) // the hook ran
			is.NoErr(err)
			pdtest.CheckRowCounts(t, dstDir, "copy")
			res, err := dst.Query(ctx, "copy", projectdata.QueryRequest{SQL: `SELECT count(DISTINCT v) AS n, min(v) AS v FROM seq`})
			is.NoErr(err)
			is.Equal(fmt.Sprint(res.Rows[0]["n"]), "1")               // not a mix of before and after
			is.Equal(res.Rows[0]["v"], any(strings.Repeat("b", 200))) // as of the last commit
		})
	}
}

// TestCloseWaitsForARestore: Close waits for a restore under way to finish
// (it would otherwise go on writing to the data folder after Close
// returned), and a restore or a creation after Close is ErrStoreClosed.
func TestCloseWaitsForARestore(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 5000)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat("a", 200)}
	}
	_, err = src.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, src)

	s, dir := pdtest.Open(t, nil)
	closed := make(chan bool, 1)                      // whether the restored project was in place when Close returned
	hc := &hookCtx{Context: ctx, n: 5, hook: func() { // mid-copy
		go func() {
			s.Close()
			_, err := os.Stat(filepath.Join(dir, "copy", "project.db"))
			closed <- err == nil
		}()
	}}
	_, err = s.RestoreProject(hc, "copy", snapshot)
	is.NoErr(err)
	is.True(<-closed) // Close returned after the restore
	_, err = s.RestoreProject(ctx, "again", snapshot)
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
	_, _, err = s.CreateProject(ctx, "new", "")
	pdtest.Code(t, err, projectdata.ErrStoreClosed)
}

// TestRestoreProjectWith: the database that fill writes, in the restore's
// own folder inside the data folder, becomes the project with no copy;
// fill's error, or no file written, leaves nothing behind.
func TestRestoreProjectWith(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	_, err = src.Insert(ctx, "acme", "notes", []projectdata.Row{{"body": "one"}})
	is.NoErr(err)
	snapshot := pdtest.Snapshot(t, src)
	dst, dstDir := pdtest.Open(t, nil)

	var written string
	proj, err := dst.RestoreProjectWith(ctx, "copy", func(ctx context.Context, path string) error {
		is.Equal(filepath.Dir(filepath.Dir(path)), dstDir) // in the data folder
		_, err := os.Lstat(path)
		is.True(errors.Is(err, os.ErrNotExist)) // a new file
		written = path
		data, err := os.ReadFile(snapshot)
		if err != nil {
			return err
		}
		return os.WriteFile(path, data, 0o644)
	})
	is.NoErr(err)
	is.Equal(proj.Slug, "copy")
	is.Equal(filepath.Base(written), "project.db")
	is.Equal(dataFolder(t, dstDir), []string{"copy"})
	row, err := dst.GetRecord(ctx, "copy", "notes", 1)
	is.NoErr(err)
	is.Equal(row["body"], "one")

	failure := errors.New("the download failed")
	_, err = dst.RestoreProjectWith(ctx, "other", func(ctx context.Context, path string) error {
		return os.WriteFile(path, []byte("partial"), 0o644)
	})
	is.Equal(projectdata.ErrorCode(err), projectdata.ErrInvalidRequest) // not a database
	_, err = dst.RestoreProjectWith(ctx, "other", func(context.Context, string) error { return failure })
	is.True(errors.Is(err, failure))
	_, err = dst.RestoreProjectWith(ctx, "other", func(context.Context, string) error { return nil })
	is.Equal(projectdata.ErrorCode(err), projectdata.ErrInvalidRequest)
	is.True(strings.Contains(err.Error(), "wrote no database")) // not an empty database made by opening it
	is.Equal(dataFolder(t, dstDir), []string{"copy"})
	_, _, err = dst.GetProject(ctx, "other")
	is.True(errors.Is(err, projectdata.ErrProjectNotFound))
}
