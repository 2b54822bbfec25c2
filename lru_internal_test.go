package projectdata

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestOpenProjectsStayBounded(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), &Options{MaxOpenProjects: 3})
	is.NoErr(err)
	defer s.Close()
	ctx := context.Background()
	for i := range 10 {
		_, _, err := s.CreateProject(ctx, fmt.Sprintf("p%d", i), "")
		is.NoErr(err)
		_, _, err = s.GetProject(ctx, fmt.Sprintf("p%d", i))
		is.NoErr(err)
		s.mu.Lock()
		open := s.projects.len()
		s.mu.Unlock()
		is.True(open <= 3)
	}
	// The most recent stays open; the oldest was closed first.
	s.mu.Lock()
	_, newest := s.projects.byKey["p9"]
	_, oldest := s.projects.byKey["p0"]
	s.mu.Unlock()
	is.True(newest)
	is.True(!oldest)
}

func TestPinnedProjectIsNotClosedUnderItsUser(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), &Options{MaxOpenProjects: 1})
	is.NoErr(err)
	defer s.Close()
	ctx := context.Background()
	for _, slug := range []string{"a", "b"} {
		_, _, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
	}
	pa, err := s.acquire(ctx, "a")
	is.NoErr(err)
	pb, err := s.acquire(ctx, "b") // over the bound while a is pinned
	is.NoErr(err)
	_, err = readProject(pa.writer) // a still usable
	is.NoErr(err)
	s.release(pb)
	s.release(pa)
	s.mu.Lock()
	is.True(s.projects.len() <= 1)
	s.mu.Unlock()
}

// TestCloseWaitsForEvictedCloses: a project evicted by the release of the
// last operation may still be closing when Close runs; Close returns only
// once it is closed.
func TestCloseWaitsForEvictedCloses(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), &Options{MaxOpenProjects: 1})
	is.NoErr(err)
	ctx := context.Background()
	for _, slug := range []string{"a", "b"} {
		_, _, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
	}
	pa, err := s.acquire(ctx, "a")
	is.NoErr(err)
	pb, err := s.acquire(ctx, "b")
	is.NoErr(err)

	// Hold a's close half-way (close takes rmu first), then release a:
	// its release evicts it and blocks in close.
	pa.rmu.Lock()
	released := make(chan struct{})
	go func() {
		s.release(pa)
		close(released)
	}()
	for evicted := false; !evicted; runtime.Gosched() {
		s.mu.Lock()
		_, open := s.projects.byKey["a"]
		s.mu.Unlock()
		evicted = !open
	}
	s.release(pb)

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close closes b, then must wait for a. Give it every chance to
	// return early (a correct Close never does, whatever the delay).
	for bClosed := false; !bClosed; runtime.Gosched() {
		pb.rmu.Lock()
		bClosed = pb.closed
		pb.rmu.Unlock()
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case <-closed:
		t.Fatal("Close returned while an evicted project was still closing")
	default:
	}
	pa.rmu.Unlock()
	is.NoErr(<-closed)
	<-released
	is.True(pa.closed)
}
