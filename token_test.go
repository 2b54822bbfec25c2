package projectdata_test

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestCreateToken(t *testing.T) {
	t.Run("DefaultsToWriteRole", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		is.Equal(tok.Role, projectdata.RoleWrite)
		is.Equal(tok.TokenType, projectdata.TokenType)
		is.Equal(tok.TokenName, "api-token")
		c, err := s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		is.Equal(c.Role, projectdata.RoleWrite)
		is.Equal(c.TokenID, tok.TokenID)
	})
	t.Run("NamesAreTrimmedAndPrintable", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: "  ci "})
		is.NoErr(err)
		is.Equal(tok.TokenName, "ci")
		for _, name := range []string{"   ", "ci\nforged", "\x1b[2J", "a\u009bb"} {
			_, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: name})
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		}
	})
	t.Run("SecretsHold32RandomBytes", func(t *testing.T) {
		// pat_ and 32 bytes in lower-case base32. Across 40 secrets, no
		// byte is the same in all: a secret with fewer random bytes than
		// it shows (the rest fixed) fails; 32 random bytes, about 32 times
		// in 256^39.
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		var secrets [][]byte
		for range 40 {
			tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{})
			is.NoErr(err)
			is.True(strings.HasPrefix(tok.Token, "pat_"))
			b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(tok.Token[4:]))
			is.NoErr(err)
			is.Equal(len(b), 32)
			secrets = append(secrets, b)
		}
		for i := range 32 {
			same := true
			for _, b := range secrets[1:] {
				same = same && b[i] == secrets[0][i]
			}
			if same {
				t.Errorf("byte %d of every secret is %#x", i, secrets[0][i])
			}
		}
	})
	t.Run("KeepsOtherTokensValid", func(t *testing.T) {
		is := is.New(t)
		s, admin := pdtest.NewProject(t, nil)
		for range 3 {
			_, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleAdmin})
			is.NoErr(err)
		}
		_, err := s.Authenticate(ctx, "acme", admin)
		is.NoErr(err)
	})
	refusals := []struct {
		name string
		req  projectdata.NewToken
		code projectdata.Code
	}{
		{"WrongType", projectdata.NewToken{Type: "session"}, projectdata.ErrInvalidTokenType},
		{"UnknownRole", projectdata.NewToken{Role: "root"}, projectdata.ErrInvalidRequest},
		{"ExpiryInThePast", projectdata.NewToken{ExpiresAt: ptr(time.Now().Add(-time.Minute))}, projectdata.ErrInvalidExpiresAt},
		{"ExpiryNow", projectdata.NewToken{ExpiresAt: ptr(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}, projectdata.ErrInvalidExpiresAt},
		// Kept to the millisecond, it would be now: expired at birth.
		{"ExpiryWithinTheMillisecond", projectdata.NewToken{ExpiresAt: ptr(time.Date(2030, 1, 1, 0, 0, 0, 5e5, time.UTC))}, projectdata.ErrInvalidExpiresAt},
		// RFC 3339 has four-digit years: it could be neither answered
		// nor read back (the list said it never expires).
		{"ExpiryPastTheYear9999", projectdata.NewToken{ExpiresAt: ptr(time.Date(10000, 1, 1, 4, 0, 0, 0, time.UTC))}, projectdata.ErrInvalidExpiresAt},
		{"NameTooLong", projectdata.NewToken{Name: strings.Repeat("n", 201)}, projectdata.ErrInvalidRequest},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			clock := pdtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
			_, err := s.CreateToken(ctx, "acme", c.req)
			pdtest.Code(t, err, c.code)
			toks, err := s.ListTokens(ctx, "acme")
			is.NoErr(err)
			is.Equal(len(toks), 1) // only the first admin token
		})
	}
}

func TestTokenSecretIsNeverStoredOrListed(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, admin, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Name: "ci"})
	is.NoErr(err)
	toks, err := s.ListTokens(ctx, "acme")
	is.NoErr(err)
	listed, err := json.Marshal(toks)
	is.NoErr(err)
	for _, secret := range []string{admin.Token, tok.Token} {
		is.True(!bytes.Contains(listed, []byte(secret)))
		is.True(!bytes.Contains(listed, []byte(strings.TrimPrefix(secret, "pat_"))))
	}
	is.True(!bytes.Contains(listed, []byte(`"token"`)))
	is.NoErr(s.Close())
	// Not in the database files either (WAL included).
	files, err := filepath.Glob(filepath.Join(dir, "acme", "project.db*"))
	is.NoErr(err)
	is.True(len(files) >= 1)
	for _, f := range files {
		b, err := os.ReadFile(f)
		is.NoErr(err)
		for _, secret := range []string{admin.Token, tok.Token} {
			is.True(!bytes.Contains(b, []byte(strings.TrimPrefix(secret, "pat_"))))
		}
	}
}

func TestAuthenticate(t *testing.T) {
	t.Run("RefusesUnknownAndMalformed", func(t *testing.T) {
		s, admin := pdtest.NewProject(t, nil)
		for _, secret := range []string{"", "pat_", "pat_nope", admin[4:], "Bearer " + admin, admin + "x", strings.ToUpper(admin)} {
			_, err := s.Authenticate(ctx, "acme", secret)
			pdtest.Code(t, err, projectdata.ErrInvalidToken)
		}
	})
	t.Run("RefusesExpiredToken", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		exp := clock.Now().Add(time.Hour)
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{ExpiresAt: &exp})
		is.NoErr(err)
		is.Equal(tok.ExpiresAt.String(), "2026-01-01T01:00:00.000Z")
		clock.Advance(59 * time.Minute)
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		clock.Advance(time.Minute)
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
	})
	t.Run("RefusesRevokedToken", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{})
		is.NoErr(err)
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		clock.Advance(time.Second)
		revoked, err := s.RevokeToken(ctx, "acme", tok.TokenID)
		is.NoErr(err)
		is.Equal(revoked.RevokedAt.String(), "2026-01-01T00:00:01.000Z")
		_, err = s.Authenticate(ctx, "acme", tok.Token)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
		clock.Advance(time.Second)
		again, err := s.RevokeToken(ctx, "acme", tok.TokenID) // idempotent
		is.NoErr(err)
		is.Equal(again.RevokedAt.String(), "2026-01-01T00:00:01.000Z")
		_, err = s.RevokeToken(ctx, "acme", 999)
		pdtest.Code(t, err, projectdata.ErrTokenNotFound)
	})
	t.Run("RefusesTokenOfAnotherProject", func(t *testing.T) {
		is := is.New(t)
		s, acmeToken := pdtest.NewProject(t, nil)
		_, other, err := s.CreateProject(ctx, "other", "")
		is.NoErr(err)
		_, err = s.Authenticate(ctx, "other", acmeToken)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
		_, err = s.Authenticate(ctx, "acme", other.Token)
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
		// A caller of acme carried into an operation on other.
		c, err := s.Authenticate(ctx, "acme", acmeToken)
		is.NoErr(err)
		_, _, err = s.GetProject(projectdata.WithCaller(ctx, c), "other")
		pdtest.Code(t, err, projectdata.ErrInvalidToken)
	})
}

func TestLastUsedAtIsKeptToTheMinuteWithoutAWritePerRequest(t *testing.T) {
	is := is.New(t)
	clock := pdtest.NewClock(time.Date(2026, 1, 1, 10, 0, 10, 0, time.UTC))
	s, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
	_, admin, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	lastUsed := func() string {
		toks, err := s.ListTokens(ctx, "acme")
		is.NoErr(err)
		if toks[0].LastUsedAt == nil {
			return ""
		}
		return toks[0].LastUsedAt.String()
	}
	is.Equal(lastUsed(), "")
	_, err = s.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	is.Equal(lastUsed(), "2026-01-01T10:00:00.000Z")

	// Within the same minute nothing is written: the database's data
	// version, as another connection sees it, does not move.
	raw, err := sqlite3.OpenFlags(filepath.Join(dir, "acme", "project.db"), sqlite3.OPEN_READONLY)
	is.NoErr(err)
	defer raw.Close()
	dataVersion := func() int64 {
		st, _, err := raw.Prepare(`PRAGMA data_version`)
		is.NoErr(err)
		defer st.Close()
		is.True(st.Step())
		return st.ColumnInt64(0)
	}
	before := dataVersion()
	for range 45 { // up to 10:00:55
		clock.Advance(time.Second)
		_, err = s.Authenticate(ctx, "acme", admin.Token)
		is.NoErr(err)
	}
	is.Equal(dataVersion(), before)
	is.Equal(lastUsed(), "2026-01-01T10:00:00.000Z")

	clock.Advance(time.Minute)
	_, err = s.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	is.Equal(lastUsed(), "2026-01-01T10:01:00.000Z")
	is.True(dataVersion() != before)
}

func TestRoles(t *testing.T) {
	cases := []struct {
		role projectdata.Role
		op   projectdata.Operation
		ok   bool
	}{
		{projectdata.RoleRead, projectdata.OpGetProject, true},
		{projectdata.RoleRead, projectdata.OpQuery, true},
		{projectdata.RoleRead, projectdata.OpDownloadExport, true},
		{projectdata.RoleRead, projectdata.OpInsertRecords, false},
		{projectdata.RoleRead, projectdata.OpCreateExport, false},
		{projectdata.RoleWrite, projectdata.OpInsertRecords, true},
		{projectdata.RoleWrite, projectdata.OpDeleteRecords, true},
		{projectdata.RoleWrite, projectdata.OpCreateExport, true},
		{projectdata.RoleWrite, projectdata.OpAllowAll, false},
		{projectdata.RoleWrite, projectdata.OpCreateToken, false},
		{projectdata.RoleWrite, projectdata.OpCreateTable, false},
		{projectdata.RoleWrite, projectdata.OpCreateIndex, false},
		{projectdata.RoleWrite, projectdata.OpRenameProject, false},
		{projectdata.RoleWrite, projectdata.OpDeleteNotFoundExports, false},
		{projectdata.RoleAdmin, projectdata.OpCreateToken, true},
		{projectdata.RoleAdmin, projectdata.OpAllowAll, true},
		{projectdata.RoleAdmin, projectdata.Operation("unknown"), false},
		{projectdata.Role("root"), projectdata.OpGetProject, false},
	}
	for _, c := range cases {
		t.Run(string(c.role)+"/"+string(c.op), func(t *testing.T) {
			err := projectdata.Caller{Project: "acme", Role: c.role}.Authorize(c.op)
			if c.ok {
				is.New(t).NoErr(err)
			} else {
				pdtest.Code(t, err, projectdata.ErrPermissionDenied)
			}
		})
	}
}

func TestStoreEnforcesCallerRole(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	for _, role := range []projectdata.Role{projectdata.RoleRead, projectdata.RoleWrite} {
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: role})
		is.NoErr(err)
		c, err := s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		cctx := projectdata.WithCaller(ctx, c)
		_, _, err = s.GetProject(cctx, "acme")
		is.NoErr(err)
		_, err = s.RenameProject(cctx, "acme", "x")
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		_, err = s.CreateToken(cctx, "acme", projectdata.NewToken{Role: projectdata.RoleAdmin})
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		_, err = s.ListTokens(cctx, "acme")
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		_, _, err = s.CreateTable(cctx, "acme", projectdata.TableDef{Name: "t"})
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	}
	admin, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleAdmin})
	is.NoErr(err)
	c, err := s.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	minted, err := s.CreateToken(projectdata.WithCaller(ctx, c), "acme", projectdata.NewToken{Role: projectdata.RoleRead})
	is.NoErr(err)
	is.Equal(minted.Role, projectdata.RoleRead)
}

func ptr[T any](v T) *T { return &v }

// TestAuthenticateNeverWaitsForAWriteLockHeldElsewhere: recording
// last_used_at is skipped, not waited for, when another connection (a
// Store of another process on the folder, the CLI) holds the database's
// write lock: authentication answers at once, not after BusyTimeout.
func TestAuthenticateNeverWaitsForAWriteLockHeldElsewhere(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, &projectdata.Options{BusyTimeout: time.Hour})
	_, admin, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, err = s.ListTokens(ctx, "acme") // the project open
	is.NoErr(err)
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `BEGIN IMMEDIATE`)
	done := make(chan error, 1)
	go func() {
		_, err := s.Authenticate(ctx, "acme", admin.Token) // its first use: last_used_at is due
		done <- err
	}()
	select {
	case err := <-done:
		is.NoErr(err)
		pdtest.Exec(t, raw, `ROLLBACK`)
	case <-time.After(30 * time.Second):
		t.Error("authentication waited for the write lock")
		pdtest.Exec(t, raw, `ROLLBACK`)
		<-done
	}
	toks, err := s.ListTokens(ctx, "acme")
	is.NoErr(err)
	is.True(toks[0].LastUsedAt == nil) // skipped: recorded by a later use
	_, err = s.Authenticate(ctx, "acme", admin.Token)
	is.NoErr(err)
	toks, err = s.ListTokens(ctx, "acme")
	is.NoErr(err)
	is.True(toks[0].LastUsedAt != nil)
}
