package projectdata

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"
)

// A verified token is checked again without a database read: with every
// reader of the project taken, authentication still succeeds.
func TestCachedTokenNeedsNoRead(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, err := Open(t.TempDir(), &Options{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	is.NoErr(err)
	defer s.Close()
	_, tok, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, err = s.Authenticate(ctx, "acme", tok.Token)
	is.NoErr(err)

	pctx, release, err := s.Pin(ctx, "acme")
	is.NoErr(err)
	defer release()
	p, _ := s.pinned(pctx, "acme")
	defer takeAllSlots(p.rsem)()
	wait, cancel := context.WithTimeout(pctx, time.Second)
	defer cancel()
	c, err := s.Authenticate(wait, "acme", tok.Token)
	is.NoErr(err) // a database read would wait for a reader until the timeout
	is.Equal(c.Role, RoleAdmin)
}

// A token is checked on the writer of a project until the writer is busy
// at a check: a made-up token on a project just opened opens no connection
// but the writer; with the writer held, a check opens the point-read
// connection rather than wait.
func TestTokenCheckOpensNoPointReadConnectionWhileTheWriterIsFree(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, &Options{ReplicatorCheckpoints: true, changeLogOff: true})
	is.NoErr(err)
	_, tok, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	is.NoErr(s.Close())

	s, err = Open(dir, &Options{ReplicatorCheckpoints: true, changeLogOff: true})
	is.NoErr(err)
	defer s.Close()
	pctx, release, err := s.Pin(ctx, "acme")
	is.NoErr(err)
	defer release()
	p, _ := s.pinned(pctx, "acme")
	_, err = s.Authenticate(ctx, "acme", tokenPrefix+"made_up_secret_0123456789")
	is.Equal(ErrorCode(err), ErrInvalidToken)
	c, err := s.Authenticate(ctx, "acme", tok.Token)
	is.NoErr(err)
	is.Equal(c.Role, RoleAdmin)
	is.True(p.point == nil)
	is.True(!p.pointOpened.Load())

	p.wsem <- struct{}{} // the writer busy
	defer func() { <-p.wsem }()
	wait, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = s.Authenticate(wait, "acme", tokenPrefix+"another_made_up_secret_0123")
	is.Equal(ErrorCode(err), ErrInvalidToken) // not the context's end
	is.True(p.point != nil)
	is.True(p.pointOpened.Load())
}
