package projectdata

import (
	"context"
	"fmt"
	"testing"

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
		open := s.lru.Len()
		s.mu.Unlock()
		is.True(open <= 3)
	}
	// The most recent stays open; the oldest was closed first.
	s.mu.Lock()
	_, newest := s.projects["p9"]
	_, oldest := s.projects["p0"]
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
	is.True(s.lru.Len() <= 1)
	s.mu.Unlock()
}
