package projectdata_test

import (
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
	t.Run("RevocationByAnotherStoreTakesEffectWhateverTheClock", func(t *testing.T) {
		// A Store whose clock stands still (or runs slow) trusts a
		// verified token for a second of real time, not of its clock.
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		a, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
		_, _, err := a.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		tok, err := a.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		_, err = a.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		b, err := projectdata.Open(dir, nil)
		is.NoErr(err)
		defer b.Close()
		_, err = b.RevokeToken(ctx, "acme", tok.TokenID)
		is.NoErr(err)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err = a.Authenticate(ctx, "acme", tok.Token)
			if err != nil || time.Now().After(deadline) {
				break
			}
		}
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
	})
}
