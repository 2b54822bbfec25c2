package projectdata

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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

// TestEvictionUnderLoadLosesNothing: with one project open at a time,
// writes (some through pinned projects), lists and queries on three
// projects through two Stores on the folder, and a follower of each,
// close and reopen projects all the time under operations that run: none
// fails, and every follower gets every change.
func TestEvictionUnderLoadLosesNothing(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, &Options{MaxOpenProjects: 1})
	is.NoErr(err)
	defer s.Close()
	b, err := Open(dir, &Options{MaxOpenProjects: 1})
	is.NoErr(err)
	defer b.Close()
	slugs := []string{"p0", "p1", "p2"}
	for _, slug := range slugs {
		_, _, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, slug, TableDef{Name: "items", Columns: []ColumnDef{{Name: "qty", Type: "INTEGER"}}})
		is.NoErr(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	got := make([]atomic.Int64, len(slugs))
	var fwg sync.WaitGroup
	for i, slug := range slugs {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			for _, err := range s.FollowChanges(fctx, slug, ChangeQuery{After: 1}) { // after the table's creation
				if err != nil {
					t.Error(err)
					return
				}
				got[i].Add(1)
			}
		}()
	}
	var wg sync.WaitGroup
	for w := range 6 {
		st := s
		if w%3 == 2 {
			st = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				slug := slugs[(w+i)%3]
				pctx, release, err := st.Pin(ctx, slug)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = st.Insert(pctx, slug, "items", []Row{{"qty": i}})
				if err == nil {
					_, err = st.ListRecords(pctx, slug, "items", ListOptions{Limit: 1})
				}
				release()
				if err == nil {
					_, err = st.Query(ctx, slugs[(w+i+1)%3], QueryRequest{SQL: "SELECT count(*) FROM items"})
				}
				if err != nil {
					t.Error(slug, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		done := true
		for i := range slugs {
			if got[i].Load() < 120 {
				done = false
			}
		}
		if done {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	fwg.Wait()
	for i := range slugs {
		is.Equal(got[i].Load(), int64(120))
	}
}

// TestRefusedTokensDoNotPushOutProjectsInUse: a client with made-up tokens
// on more projects than MaxOpenProjects opens each of them (the project is
// checked before the token), but a project opened only to refuse a token
// is the first closed, so the projects in use stay open; a project in use
// is not sent to the cold end by a refused token.
func TestRefusedTokensDoNotPushOutProjectsInUse(t *testing.T) {
	is := is.New(t)
	s, err := Open(t.TempDir(), &Options{MaxOpenProjects: 4})
	is.NoErr(err)
	defer s.Close()
	ctx := context.Background()
	admin := map[string]string{}
	for i := range 12 {
		slug := fmt.Sprint("p", i)
		_, tok, err := s.CreateProject(ctx, slug, "")
		is.NoErr(err)
		admin[slug] = tok.Token
	}
	inUse := []string{"p0", "p1", "p2"}
	for _, slug := range inUse {
		_, err := s.Authenticate(ctx, slug, admin[slug])
		is.NoErr(err)
	}
	fake := tokenPrefix + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	for round := range 3 {
		for i := 3; i < 12; i++ {
			_, err := s.Authenticate(ctx, fmt.Sprint("p", i), fake)
			is.Equal(ErrorCode(err), ErrInvalidToken)
		}
		_, err := s.Authenticate(ctx, inUse[round], fake) // refused on a project in use
		is.Equal(ErrorCode(err), ErrInvalidToken)
	}
	s.mu.Lock()
	open := s.projects.keys()
	s.mu.Unlock()
	is.Equal(len(open), 4)
	for _, slug := range inUse {
		is.True(slices.Contains(open, slug)) // still open
	}
	// A project that was refused a token works as any once a token is
	// accepted on it.
	c, err := s.Authenticate(ctx, "p7", admin["p7"])
	is.NoErr(err)
	_, _, err = s.GetProject(WithCaller(ctx, c), "p7")
	is.NoErr(err)
}
