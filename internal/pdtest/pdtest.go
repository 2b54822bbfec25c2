// Package pdtest holds test helpers shared by the packages of projectdata:
// a real Store in a temporary folder, a settable clock.
package pdtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// Clock is a settable clock for Options.Now. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Open opens a Store in a new temporary folder, closed when the test ends.
func Open(t testing.TB, opts *projectdata.Options) (*projectdata.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := projectdata.Open(dir, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// NewProject opens a Store (see Open) with one project, slug "acme", and
// returns the Store and the project's admin token.
func NewProject(t testing.TB, opts *projectdata.Options) (*projectdata.Store, string) {
	t.Helper()
	s, _ := Open(t, opts)
	_, tok, err := s.CreateProject(context.Background(), "acme", "Acme")
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	return s, tok.Token
}

// Code fails the test unless err carries the code want.
func Code(t testing.TB, err error, want projectdata.Code) {
	t.Helper()
	if got := projectdata.ErrorCode(err); got != want {
		t.Fatalf("error code = %q, want %q (err: %v)", got, want, err)
	}
}

// Raw opens a direct connection to a project's database, closed when the
// test ends, for seeding rows and inspecting state behind the Store's back.
func Raw(t testing.TB, dir, slug string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.Open(filepath.Join(dir, slug, "project.db"))
	if err != nil {
		t.Fatalf("open raw connection: %v", err)
	}
	if err := c.BusyTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Exec runs SQL of the test's own on a raw connection.
func Exec(t testing.TB, c *sqlite3.Conn, sql string) {
	t.Helper()
	if err := c.Exec(sql); err != nil {
		t.Fatalf("exec %.60q: %v", sql, err)
	}
}

// FileSum returns the SHA-256 of a project's database files (the database
// and its write-ahead log), to show that something left them unchanged.
func FileSum(t testing.TB, dir, slug string) string {
	t.Helper()
	h := sha256.New()
	for _, name := range []string{"project.db", "project.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, slug, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// As returns a context carrying a caller of project "acme" with a new
// token of the role, so Store operations run with that role.
func As(t testing.TB, s *projectdata.Store, role projectdata.Role) context.Context {
	t.Helper()
	tok, err := s.CreateToken(context.Background(), "acme", projectdata.NewToken{Role: role})
	if err != nil {
		t.Fatalf("create %s token: %v", role, err)
	}
	c, err := s.Authenticate(context.Background(), "acme", tok.Token)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return projectdata.WithCaller(context.Background(), c)
}

// Snapshot takes a project export of project "acme" and returns the path
// of its file, a copy of the project's database that RestoreProject takes.
func Snapshot(t testing.TB, s *projectdata.Store) string {
	t.Helper()
	e, err := s.CreateProjectExport(context.Background(), "acme")
	if err != nil {
		t.Fatalf("create project export: %v", err)
	}
	_, f, err := s.OpenExport(context.Background(), "acme", e.ID)
	if err != nil {
		t.Fatalf("open project export: %v", err)
	}
	f.Close()
	return f.Name()
}

// CheckRowCounts fails the test unless every application table of the
// project has a kept row count equal to its COUNT(*): its stored count
// (_pd_row_counts) plus the deltas of the change log's records after the
// counts' change id.
func CheckRowCounts(t testing.TB, dir, slug string) {
	t.Helper()
	c := Raw(t, dir, slug)
	type table struct {
		name string
		kept int64
		has  bool
	}
	var tables []table
	st, _, err := c.Prepare(`SELECT t.name, r.row_count + coalesce((SELECT sum(CASE op WHEN 'insert' THEN count WHEN 'delete' THEN -count ELSE 0 END)
		FROM _pd_changes WHERE last_id > (SELECT change_id FROM _pd_row_counts_as_of) AND table_name = t.name), 0),
		r.table_id IS NOT NULL FROM _pd_tables t LEFT JOIN _pd_row_counts r ON r.table_id = t.id`)
	if err != nil {
		t.Fatal(err)
	}
	for st.Step() {
		tables = append(tables, table{st.ColumnText(0), st.ColumnInt64(1), st.ColumnBool(2)})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		st, _, err := c.Prepare(`SELECT count(*) FROM ` + sqlite3.QuoteIdentifier(tb.name))
		if err != nil {
			t.Fatal(err)
		}
		st.Step()
		n := st.ColumnInt64(0)
		st.Close()
		if !tb.has || n != tb.kept {
			t.Fatalf("table %s: kept row count %d (present: %v), COUNT(*) %d", tb.name, tb.kept, tb.has, n)
		}
	}
}

// LockedBuffer is a bytes.Buffer that several goroutines may write, such
// as a log sink of a server under test.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
