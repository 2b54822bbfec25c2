package projectdata

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestPin(t *testing.T) {
	ctx := context.Background()
	newStore := func(t *testing.T) *Store {
		s, err := Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		for _, slug := range []string{"acme", "other"} {
			if _, _, err := s.CreateProject(ctx, slug, ""); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	t.Run("PinAndCallerKeepTheParentContext", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		type key struct{}
		parent, cancel := context.WithCancel(context.WithValue(ctx, key{}, "parent's"))
		pctx, release, err := s.Pin(parent, "acme")
		is.NoErr(err)
		defer release()
		cctx := WithCaller(pctx, Caller{Project: "acme", TokenID: 7, Role: RoleRead})
		is.Equal(cctx.Value(key{}), "parent's") // through both
		_, ok := s.pinned(cctx, "acme")
		is.True(ok) // the pin, under the caller
		c, ok := CallerFrom(cctx)
		is.True(ok)
		is.Equal(c, Caller{Project: "acme", TokenID: 7, Role: RoleRead})
		_, ok = CallerFrom(pctx)
		is.True(!ok) // no caller above it
		cancel()
		<-cctx.Done()
		is.Equal(cctx.Err(), context.Canceled)
	})
	t.Run("OperationsUseThePinnedProjectWithoutALookup", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		pctx, release, err := s.Pin(ctx, "acme")
		is.NoErr(err)
		defer release()
		pinned, _ := s.pinned(pctx, "acme")
		err = s.withProject(pctx, "acme", "", func(p *project) error {
			is.True(p == pinned)
			is.Equal(s.Stats().Operations, 1) // the pin, no second acquire
			return nil
		})
		is.NoErr(err)
		err = s.withProject(pctx, "other", "", func(p *project) error {
			is.Equal(p.slug, "other")
			is.Equal(s.Stats().Operations, 2) // another project is looked up
			return nil
		})
		is.NoErr(err)
	})
	t.Run("ReleaseUnpinsOnce", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		pctx, release, err := s.Pin(ctx, "acme")
		is.NoErr(err)
		is.Equal(s.Stats().Operations, 1)
		release()
		release()
		is.Equal(s.Stats().Operations, 0)
		_, _, err = s.GetProject(pctx, "acme") // after release: looked up again
		is.NoErr(err)
		is.Equal(s.Stats().Operations, 0)
	})
	t.Run("UnknownProject", func(t *testing.T) {
		s := newStore(t)
		_, release, err := s.Pin(ctx, "nope")
		release()
		if ErrorCode(err) != ErrProjectNotFound {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("CloseWaitsForRelease", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		_, release, err := s.Pin(ctx, "acme")
		is.NoErr(err)
		closed := make(chan error)
		go func() { closed <- s.Close() }()
		select {
		case <-closed:
			t.Fatal("Close returned while a project was pinned")
		case <-time.After(50 * time.Millisecond):
		}
		release()
		is.NoErr(<-closed)
	})
}
