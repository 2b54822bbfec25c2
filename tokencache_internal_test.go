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
