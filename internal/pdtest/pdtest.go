// Package pdtest holds test helpers shared by the packages of projectdata:
// a real Store in a temporary folder, a settable clock.
package pdtest

import (
	"context"
	"sync"
	"testing"
	"time"

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
