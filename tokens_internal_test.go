package projectdata

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// tokensStore is a Store with one project, acme, holding its admin token
// and n more, made in one transaction by the Store's own token creation,
// with every token's listing as one read of the table gives it.
func tokensStore(t *testing.T, opts *Options, n int) (*Store, []Token) {
	t.Helper()
	is := is.New(t)
	s, _, p := boundedStore(t, opts)
	ctx := context.Background()
	is.NoErr(p.write(ctx, func(c *conn) error {
		for i := range n {
			if _, err := s.insertToken(c, NewToken{Name: fmt.Sprintf("session-%d", i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	var all []Token
	is.NoErr(p.read(ctx, func(c *conn) error {
		return c.query(`SELECT `+tokenColumns+` FROM _pd_tokens ORDER BY id`, nil, func(st *sqlite3.Stmt) error {
			all = append(all, scanToken(st))
			return nil
		})
	}))
	is.Equal(len(all), n+1)
	return s, all
}

// TestTokensReadsPageByPage: Tokens yields every token once, in id order,
// as one read of the table lists them, whatever the page size: one token
// a page, a size the count is a multiple of (the last page full: one more
// read finds none), and the usual size; ListTokens lists the same.
func TestTokensReadsPageByPage(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, all := tokensStore(t, nil, 2000) // 2,001 tokens = 23 × 87
	for _, page := range []int{23, tokenPage, 1} {
		s.tokenPage = page
		var got []Token
		for tok, err := range s.Tokens(ctx, "acme") {
			is.NoErr(err)
			got = append(got, tok)
		}
		is.Equal(got, all)
	}
	list, err := s.ListTokens(ctx, "acme")
	is.NoErr(err)
	is.Equal(list, all)
}

// TestTokensBetweenPages: a token created while Tokens is under way is
// yielded at its end; one revoked is yielded revoked when its page is read
// after the revocation, as it was when read before; none is yielded twice
// or skipped.
func TestTokensBetweenPages(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, all := tokensStore(t, nil, 99) // 100 tokens, 10 pages
	s.tokenPage = 10
	var got []Token
	var created CreatedToken
	for tok, err := range s.Tokens(ctx, "acme") {
		is.NoErr(err)
		got = append(got, tok)
		if len(got) == 15 { // in the second page
			var err error
			created, err = s.CreateToken(ctx, "acme", NewToken{Name: "late"})
			is.NoErr(err)
			_, err = s.RevokeToken(ctx, "acme", all[3].ID) // yielded
			is.NoErr(err)
			_, err = s.RevokeToken(ctx, "acme", all[50].ID) // not read yet
			is.NoErr(err)
		}
	}
	is.Equal(len(got), len(all)+1)
	for i, tok := range got[:len(all)] {
		is.Equal(tok.ID, all[i].ID)
	}
	is.True(got[3].RevokedAt == nil)
	is.True(got[50].RevokedAt != nil)
	is.Equal(got[len(all)].ID, created.TokenID)
	is.Equal(got[len(all)].TokenName, "late")
}

// TestTokensHoldNoReaderBetweenPages: with one reader per project, a read
// made while Tokens is paused in its iteration (the consumer busy with a
// token) gets the reader at once, and so does one after an iteration
// stopped early. Were the reader held, the read would wait QueueTimeout
// and fail with ErrServerBusy.
func TestTokensHoldNoReaderBetweenPages(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, all := tokensStore(t, &Options{MaxReadersPerProject: 1, QueueTimeout: 50 * time.Millisecond}, 29)
	s.tokenPage = 7
	n := 0
	for _, err := range s.Tokens(ctx, "acme") {
		is.NoErr(err)
		if n++; n%4 == 0 { // at each place in a page, first to last, as n goes to 28
			toks, err := s.ListTokens(ctx, "acme")
			is.NoErr(err)
			is.Equal(len(toks), len(all))
		}
	}
	is.Equal(n, len(all))
	for _, err := range s.Tokens(ctx, "acme") {
		is.NoErr(err)
		break
	}
	_, err := s.ListTokens(ctx, "acme")
	is.NoErr(err)
}

// TestTokensChecksTheCaller: Tokens refuses what ListTokens refuses, as
// its only pair.
func TestTokensChecksTheCaller(t *testing.T) {
	is := is.New(t)
	s, _ := tokensStore(t, nil, 0)
	for _, c := range []struct {
		ctx  context.Context
		slug string
		code Code
	}{
		{WithCaller(context.Background(), Caller{Project: "acme", Role: RoleWrite}), "acme", ErrPermissionDenied},
		{WithCaller(context.Background(), Caller{Project: "other", Role: RoleAdmin}), "acme", ErrInvalidToken},
		{context.Background(), "nope", ErrProjectNotFound},
	} {
		pairs := 0
		for tok, err := range s.Tokens(c.ctx, c.slug) {
			pairs++
			is.Equal(ErrorCode(err), c.code)
			is.Equal(tok, Token{})
		}
		is.Equal(pairs, 1)
	}
}
