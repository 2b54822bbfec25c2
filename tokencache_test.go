package projectdata_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestTokenCache(t *testing.T) {
	t.Run("ExpiryTakesEffectAtOnceForACachedToken", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		exp := clock.Now().Add(time.Hour)
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{ExpiresAt: &exp})
		is.NoErr(err)
		clock.Advance(time.Hour - time.Millisecond)
		_, err = s.Authenticate(ctx, "acme", tok.Token) // verified and cached
		is.NoErr(err)
		clock.Advance(time.Millisecond)
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
	})
	t.Run("RevocationBySameStoreTakesEffectAtOnce", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		_, err = s.RevokeToken(ctx, "acme", tok.TokenID)
		is.NoErr(err)
		_, err = s.Authenticate(ctx, "acme", tok.Token) // same clock reading
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
	})
	t.Run("RevocationByAnotherStoreTakesEffectWithinASecond", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		a, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
		_, admin, err := a.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		tok, err := a.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		_, err = a.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)

		b, err := projectdata.Open(dir, &projectdata.Options{Now: clock.Now})
		is.NoErr(err)
		defer b.Close()
		_, err = b.RevokeToken(ctx, "acme", tok.TokenID)
		is.NoErr(err)

		clock.Advance(time.Second)
		_, err = a.Authenticate(ctx, "acme", tok.Token)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
		_, err = a.Authenticate(ctx, "acme", admin.Token)
		is.NoErr(err)
	})
	t.Run("RevocationByAnotherStoreTakesEffectWhateverTheStoresClock", func(t *testing.T) {
		is := is.New(t)
		frozen := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
		a, dir := pdtest.Open(t, &projectdata.Options{Now: frozen})
		_, _, err := a.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		tok, err := a.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		_, err = a.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)

		b, err := projectdata.Open(dir, &projectdata.Options{Now: frozen})
		is.NoErr(err)
		defer b.Close()
		_, err = b.RevokeToken(ctx, "acme", tok.TokenID)
		is.NoErr(err)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, err = a.Authenticate(ctx, "acme", tok.Token)
			if err != nil || time.Now().After(deadline) {
				break
			}
		}
		pdtest.Code(t, err, projectdata.ErrInvalidToken) // within about a second of the wall clock
	})
}

// BenchmarkMadeUpToken: a made-up token on a project that is not open
// (eight projects in turn, four open at most: each check opens one and
// closes another), against the same on an open project.
func BenchmarkMadeUpToken(b *testing.B) {
	s, _ := pdtest.Open(b, &projectdata.Options{MaxOpenProjects: 4})
	const projects = 8
	for i := range projects {
		if _, _, err := s.CreateProject(ctx, fmt.Sprintf("p%d", i), "P"); err != nil {
			b.Fatal(err)
		}
	}
	check := func(b *testing.B, slug string) {
		_, err := s.Authenticate(ctx, slug, "pat_made_up_secret_0123456789")
		if projectdata.ErrorCode(err) != projectdata.ErrInvalidToken {
			b.Fatal(err)
		}
	}
	b.Run("not_open", func(b *testing.B) {
		i := 0
		for b.Loop() {
			check(b, fmt.Sprintf("p%d", i%projects))
			i++
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			check(b, "p0")
		}
	})
}
