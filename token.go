package projectdata

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
)

// TokenType is the one type of token the service issues.
const TokenType = "project_api_token"

// tokenPrefix starts every token secret.
const tokenPrefix = "pat_"

// Role is what a token may do. Each role may do everything the roles below
// it may.
type Role string

// The roles, from least to most powerful.
const (
	// RoleRead may read: GET operations and queries.
	RoleRead Role = "read"
	// RoleWrite may read, write records and create exports.
	RoleWrite Role = "write"
	// RoleAdmin may do everything: schema, indexes, tokens, renaming the
	// project, deleting exports and bulk changes with allow_all.
	RoleAdmin Role = "admin"
)

func (r Role) rank() int {
	switch r {
	case RoleRead:
		return 1
	case RoleWrite:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Operation names one operation of the service, for role checks.
type Operation string

// The operations. Every Store method that acts on a project checks the
// caller in its context (see WithCaller) against one of them.
const (
	OpGetProject            Operation = "get_project"
	OpRenameProject         Operation = "rename_project"
	OpCreateToken           Operation = "create_token"
	OpListTokens            Operation = "list_tokens"
	OpRevokeToken           Operation = "revoke_token"
	OpListTables            Operation = "list_tables"
	OpCreateTable           Operation = "create_table"
	OpUpdateTable           Operation = "update_table"
	OpDeleteTable           Operation = "delete_table"
	OpListColumns           Operation = "list_columns"
	OpGetColumn             Operation = "get_column"
	OpAddColumn             Operation = "add_column"
	OpUpdateColumn          Operation = "update_column"
	OpInsertRecords         Operation = "insert_records"
	OpGetRecord             Operation = "get_record"
	OpListRecords           Operation = "list_records"
	OpDeleteRecord          Operation = "delete_record"
	OpUpdateRecord          Operation = "update_record"
	OpUpdateRecords         Operation = "update_records"
	OpDeleteRecords         Operation = "delete_records"
	OpAllowAll              Operation = "allow_all" // bulk update or delete of every row
	OpQuery                 Operation = "query"
	OpListIndexes           Operation = "list_indexes"
	OpCreateIndex           Operation = "create_index"
	OpDropIndex             Operation = "drop_index"
	OpListExports           Operation = "list_exports"
	OpCreateExport          Operation = "create_export"
	OpDownloadExport        Operation = "download_export"
	OpDeleteNotFoundExports Operation = "delete_not_found_exports"
	OpCreateProjectExport   Operation = "create_project_export"   // a snapshot of the whole database
	OpDownloadProjectExport Operation = "download_project_export" // it holds every token's digest
	OpListChanges           Operation = "list_changes"            // page or follow the change log
)

// operationRoles is the one table of which role each operation needs. Every
// adapter uses it through Caller.Authorize; the Store applies it too.
var operationRoles = map[Operation]Role{
	OpGetProject:            RoleRead,
	OpRenameProject:         RoleAdmin,
	OpCreateToken:           RoleAdmin,
	OpListTokens:            RoleAdmin,
	OpRevokeToken:           RoleAdmin,
	OpListTables:            RoleRead,
	OpCreateTable:           RoleAdmin,
	OpUpdateTable:           RoleAdmin,
	OpDeleteTable:           RoleAdmin,
	OpListColumns:           RoleRead,
	OpGetColumn:             RoleRead,
	OpAddColumn:             RoleAdmin,
	OpUpdateColumn:          RoleAdmin,
	OpInsertRecords:         RoleWrite,
	OpGetRecord:             RoleRead,
	OpListRecords:           RoleRead,
	OpDeleteRecord:          RoleWrite,
	OpUpdateRecord:          RoleWrite,
	OpUpdateRecords:         RoleWrite,
	OpDeleteRecords:         RoleWrite,
	OpAllowAll:              RoleAdmin,
	OpQuery:                 RoleRead,
	OpListIndexes:           RoleRead,
	OpCreateIndex:           RoleAdmin,
	OpDropIndex:             RoleAdmin,
	OpListExports:           RoleRead,
	OpCreateExport:          RoleWrite,
	OpDownloadExport:        RoleRead,
	OpDeleteNotFoundExports: RoleAdmin,
	OpCreateProjectExport:   RoleAdmin,
	OpDownloadProjectExport: RoleAdmin,
	OpListChanges:           RoleRead,
}

// RequiredRole returns the least role that may do op.
func RequiredRole(op Operation) Role { return operationRoles[op] }

// Caller is an authenticated token: the project it belongs to and its role.
type Caller struct {
	Project string
	TokenID int64
	Role    Role
}

// Authorize returns nil when the caller's role may do op, else an error
// with ErrPermissionDenied. Unknown operations are denied.
func (c Caller) Authorize(op Operation) error {
	need, ok := operationRoles[op]
	if !ok || c.Role.rank() < need.rank() {
		return errorf(ErrPermissionDenied, "this token's role %q may not %s (needs %q)", c.Role, strings.ReplaceAll(string(op), "_", " "), need)
	}
	return nil
}

type callerKey struct{}

// callerContext is a context carrying a caller: one allocation where
// context.WithValue takes two (the context and the boxed Caller), and
// CallerFrom, asked by every operation, copies it without boxing.
type callerContext struct {
	context.Context
	caller Caller
}

func (cc *callerContext) Value(key any) any {
	if key == (callerKey{}) {
		return &cc.caller
	}
	return cc.Context.Value(key)
}

// WithCaller returns a context carrying the caller. Every Store operation
// run with that context checks the caller may do it on that project; an
// operation run without a caller is trusted (the embedding application's
// own call).
func WithCaller(ctx context.Context, c Caller) context.Context {
	return &callerContext{Context: ctx, caller: c}
}

// CallerFrom returns the caller that ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	if !ok {
		return Caller{}, false
	}
	return *c, true
}

// authorize checks the caller in ctx, if any, against the project and op.
func authorize(ctx context.Context, project string, op Operation) error {
	c, ok := CallerFrom(ctx)
	if !ok {
		return nil
	}
	if c.Project != project {
		return errorf(ErrInvalidToken, "the token does not belong to project %q", project)
	}
	return c.Authorize(op)
}

// Token is a Project API Token as listed: never its secret.
type Token struct {
	ID         int64      `json:"id"`
	TokenType  string     `json:"token_type"`
	TokenName  string     `json:"token_name"`
	Role       Role       `json:"role"`
	ExpiresAt  *Timestamp `json:"expires_at"`
	RevokedAt  *Timestamp `json:"revoked_at"`
	LastUsedAt *Timestamp `json:"last_used_at"`
	CreatedAt  Timestamp  `json:"created_at"`
}

// CreatedToken is a new token with its secret, shown this once.
type CreatedToken struct {
	Token     string     `json:"token"`
	TokenID   int64      `json:"token_id"`
	TokenType string     `json:"token_type"`
	TokenName string     `json:"token_name"`
	Role      Role       `json:"role"`
	ExpiresAt *Timestamp `json:"expires_at"`
}

// NewToken describes a token to create. Every field is optional.
type NewToken struct {
	// Name of the token, without surrounding white space. Empty:
	// "api-token"; blank, or with control characters: ErrInvalidRequest.
	Name string
	// Type must be empty or TokenType.
	Type string
	// Role of the token. Empty: RoleWrite.
	Role Role
	// ExpiresAt, when set, must be in the future. Nil: never expires.
	ExpiresAt *time.Time
}

const maxTokenNameLen = 200

// CreateToken creates a Project API Token and returns its secret, which is
// never readable again: only its SHA-256 is stored. Creating a token revokes
// none.
//
// Errors: ErrProjectNotFound, ErrInvalidTokenType, ErrInvalidExpiresAt,
// ErrInvalidRequest (role or name, or an idempotency key in ctx),
// ErrPermissionDenied.
func (s *Store) CreateToken(ctx context.Context, slug string, req NewToken) (CreatedToken, error) {
	var out CreatedToken
	err := s.withProject(ctx, slug, OpCreateToken, func(p *project) error {
		if _, ok := IdempotencyFrom(ctx); ok {
			return errorf(ErrInvalidRequest, "creating a token takes no idempotency key: a replay would have to store the secret")
		}
		return p.write(ctx, func(c *conn) (err error) {
			out, err = s.insertToken(c, req)
			return err
		})
	})
	return out, err
}

// insertToken validates req and inserts the token on c, inside the caller's
// transaction.
func (s *Store) insertToken(c *conn, req NewToken) (CreatedToken, error) {
	if req.Type != "" && req.Type != TokenType {
		return CreatedToken{}, errorf(ErrInvalidTokenType, "token_type must be %q", TokenType)
	}
	if req.Role == "" {
		req.Role = RoleWrite
	}
	if req.Role.rank() == 0 {
		return CreatedToken{}, errorf(ErrInvalidRequest, "role %.40q must be one of read, write, admin", req.Role)
	}
	if req.Name == "" {
		req.Name = "api-token"
	}
	if req.Name = strings.TrimSpace(req.Name); req.Name == "" {
		return CreatedToken{}, errorf(ErrInvalidRequest, "token_name must not be blank")
	}
	if !utf8.ValidString(req.Name) || len(req.Name) > maxTokenNameLen || hasControl(req.Name) {
		return CreatedToken{}, errorf(ErrInvalidRequest, "token_name must be valid UTF-8 of at most %d bytes, without control characters", maxTokenNameLen)
	}
	now := s.now()
	var expires *Timestamp
	if req.ExpiresAt != nil {
		// Compared as it is kept, to the millisecond: a token is never
		// created expired.
		expires = &Timestamp{req.ExpiresAt.UTC().Truncate(time.Millisecond)}
		if !expires.After(now) {
			return CreatedToken{}, errorf(ErrInvalidExpiresAt, "expires_at must be in the future")
		}
		if expires.Year() > 9999 { // no RFC 3339 timestamp: it could not be read back
			return CreatedToken{}, errorf(ErrInvalidExpiresAt, "expires_at must be before the year 10000")
		}
	}
	secret, err := newSecret()
	if err != nil {
		return CreatedToken{}, err
	}
	hash := secretHash(secret)
	var expiresArg any
	if expires != nil {
		expiresArg = expires.Time
	}
	if err := c.exec(`INSERT INTO _pd_tokens (name, role, secret_sha256, expires_at, created_at) VALUES (?, ?, ?, ?, ?)`,
		req.Name, string(req.Role), hash[:], expiresArg, now); err != nil {
		return CreatedToken{}, err
	}
	return CreatedToken{
		Token:     secret,
		TokenID:   c.db.LastInsertRowID(),
		TokenType: TokenType,
		TokenName: req.Name,
		Role:      req.Role,
		ExpiresAt: expires,
	}, nil
}

// newSecret returns pat_ and 32 random bytes in lower-case base32.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
	return tokenPrefix + strings.ToLower(enc), nil
}

const tokenColumns = `id, name, role, expires_at, revoked_at, last_used_at, created_at`

func scanToken(st *sqlite3.Stmt) Token {
	t := Token{
		ID:         st.ColumnInt64(0),
		TokenType:  TokenType,
		TokenName:  st.ColumnText(1),
		Role:       Role(st.ColumnText(2)),
		ExpiresAt:  columnTime(st, 3),
		RevokedAt:  columnTime(st, 4),
		LastUsedAt: columnTime(st, 5),
	}
	if c := columnTime(st, 6); c != nil {
		t.CreatedAt = *c
	}
	return t
}

// tokenPage is how many tokens one read of Tokens takes: a page's tokens
// are all the memory an iteration holds, and the read connection is given
// back between pages.
const tokenPage = 256

// Tokens iterates over the project's tokens, oldest first, without
// secrets, reading them a page at a time by id, so memory stays bounded by
// one page whatever the number of tokens (they are never deleted: revoked
// and expired ones are listed too). No read connection is held between
// pages, so a slow consumer holds none. Each page is read in its own
// transaction: a token created during the iteration is yielded at its end,
// one revoked during it as it was when its page was read. An error ends
// the iteration, as the last pair.
//
// Errors: ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) Tokens(ctx context.Context, slug string) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		page := make([]Token, 0, s.tokenPage)
		var after int64
		for {
			page = page[:0]
			err := s.withProject(ctx, slug, OpListTokens, func(p *project) error {
				return p.read(ctx, func(c *conn) error {
					return c.query(`SELECT `+tokenColumns+` FROM _pd_tokens WHERE id > ? ORDER BY id LIMIT ?`, []any{after, s.tokenPage}, func(st *sqlite3.Stmt) error {
						page = append(page, scanToken(st))
						return nil
					})
				})
			})
			if err != nil {
				yield(Token{}, err)
				return
			}
			for _, t := range page {
				if !yield(t, nil) {
					return
				}
			}
			if len(page) < s.tokenPage {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

// ListTokens lists the project's tokens, oldest first, without secrets: all
// of them in memory at once (see Tokens).
//
// Errors: ErrProjectNotFound, ErrPermissionDenied.
func (s *Store) ListTokens(ctx context.Context, slug string) ([]Token, error) {
	tokens := []Token{}
	for t, err := range s.Tokens(ctx, slug) {
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// RevokeToken revokes a token; it is refused from then on. Revoking a
// revoked token changes nothing.
//
// Errors: ErrProjectNotFound, ErrTokenNotFound, ErrPermissionDenied.
func (s *Store) RevokeToken(ctx context.Context, slug string, id int64) (Token, error) {
	var tok Token
	err := s.withWrite(ctx, slug, writeCall{op: OpRevokeToken, args: []any{id}, results: []any{&tok}}, func(ctx context.Context, p *project) error {
		// Once the revocation may have committed, no cached verification
		// of any token stands.
		defer p.tokens.forget()
		return p.write(ctx, func(c *conn) error {
			if err := c.exec(`UPDATE _pd_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, s.now(), id); err != nil {
				return err
			}
			found, err := c.queryRow(`SELECT `+tokenColumns+` FROM _pd_tokens WHERE id = ?`, []any{id}, func(st *sqlite3.Stmt) error {
				tok = scanToken(st)
				return nil
			})
			if err == nil && !found {
				err = errorf(ErrTokenNotFound, "token %d does not exist in project %q", id, slug)
			}
			return err
		})
	})
	return tok, err
}

// Authenticate checks a token secret (pat_…) against the project and
// returns its caller; put it in the context with WithCaller. It records
// last_used_at to the minute, writing at most once a minute per token.
// A verified token is remembered for up to a second: a revocation by this
// Store takes effect at once, one by another Store on the same folder
// within a second; expiry is checked on every call.
//
// Errors: ErrInvalidProjectSlug, ErrProjectNotFound, then ErrInvalidToken
// for an unknown, revoked or expired token or one of another project.
func (s *Store) Authenticate(ctx context.Context, slug, secret string) (Caller, error) {
	var caller Caller
	err := s.withProject(ctx, slug, "", func(p *project) (err error) {
		defer func() {
			if ErrorCode(err) == ErrInvalidToken {
				s.demote(p)
			}
		}()
		if !strings.HasPrefix(secret, tokenPrefix) {
			return errorf(ErrInvalidToken, "the token is not a Project API Token")
		}
		hash := secretHash(secret)
		now := s.now()
		tok, cached, gen := p.tokens.lookup(hash, now)
		if !cached {
			key := hash // only a token read from the database moves its hash to the heap
			var err error
			if tok, err = p.readToken(ctx, tokenBySecret, key[:]); err != nil {
				return err
			}
		}
		if err := tok.checkExpiry(now); err != nil {
			return err
		}
		if !cached {
			p.tokens.remember(hash, tok, now, gen)
		}
		caller = Caller{Project: slug, TokenID: tok.ID, Role: tok.Role}
		p.markUsed()
		p.touchToken(ctx, tok.ID, tok.LastUsedAt, now)
		return nil
	})
	return caller, err
}

// secretHash is the SHA-256 of a token's secret, stored and looked up in
// its place. A secret of the usual length is hashed from the stack: every
// authenticated request hashes one.
func secretHash(secret string) [sha256.Size]byte {
	var buf [128]byte
	if len(secret) > len(buf) {
		return sha256.Sum256([]byte(secret))
	}
	return sha256.Sum256(append(buf[:0], secret...))
}

// recheckCaller checks again that the token of the caller in ctx, if any,
// is still valid: neither revoked nor expired since it was authenticated.
// Long operations (following the change log) call it as they go, so a
// revocation or expiry ends them as it refuses new requests: at once for
// a revocation by this Store, within tokenRecheck for one by another. A
// caller with no token id (made by the application, not by Authenticate)
// is not checked.
//
// Errors: ErrInvalidToken.
func (p *project) recheckCaller(ctx context.Context) error {
	c, ok := CallerFrom(ctx)
	if !ok || c.TokenID == 0 {
		return nil
	}
	now := p.store.now()
	tok, cached, gen := p.tokens.lookupID(c.TokenID, now)
	if !cached {
		var err error
		if tok, err = p.readToken(ctx, tokenByID, c.TokenID); err != nil {
			return err
		}
		p.tokens.rememberID(tok, now, gen)
	}
	return tok.checkExpiry(now)
}

// checkExpiry is ErrInvalidToken once the token has expired at now.
func (tok Token) checkExpiry(now time.Time) error {
	if tok.ExpiresAt != nil && !tok.ExpiresAt.After(now) {
		return errorf(ErrInvalidToken, "the token has expired")
	}
	return nil
}

// The columns by which readToken finds a token.
const (
	tokenBySecret = "secret_sha256" // the SHA-256 of its secret
	tokenByID     = "id"
)

// readToken reads the token whose column (tokenBySecret or tokenByID)
// holds key, on the point-read connection (see readPoint); unknown and
// revoked tokens are ErrInvalidToken.
func (p *project) readToken(ctx context.Context, column string, key any) (Token, error) {
	var tok Token
	var found bool
	err := p.readPoint(ctx, func(c *conn) (err error) {
		found, err = c.queryRow(`SELECT `+tokenColumns+` FROM _pd_tokens WHERE `+column+` = ?`, []any{key}, func(st *sqlite3.Stmt) error {
			tok = scanToken(st)
			return nil
		})
		return err
	})
	switch {
	case err != nil:
		return Token{}, err
	case !found:
		return Token{}, errorf(ErrInvalidToken, "the token is not valid for project %q", p.slug)
	case tok.RevokedAt != nil:
		return Token{}, errorf(ErrInvalidToken, "the token has been revoked")
	}
	return tok, nil
}

// touchToken records that a token was used in this minute, unless that is
// already recorded. A failure to record is logged, not returned: the token
// was valid.
func (p *project) touchToken(ctx context.Context, id int64, stored *Timestamp, now time.Time) {
	minute := now.Truncate(time.Minute)
	p.lastUsedMu.Lock()
	seen, ok := p.lastUsed[id]
	if !ok && stored != nil {
		seen, ok = stored.Time, true
	}
	if ok && !seen.Before(minute) {
		p.lastUsed[id] = seen
		p.lastUsedMu.Unlock()
		return
	}
	p.lastUsed[id] = minute
	p.lastUsedMu.Unlock()

	// Authentication never waits for the writer: when it is busy, the
	// minute is recorded by a later request.
	ran, err := p.tryWrite(context.WithoutCancel(ctx), func(c *conn) error {
		return c.exec(`UPDATE _pd_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`, minute, id, minute)
	})
	if !ran || err != nil {
		p.lastUsedMu.Lock()
		if p.lastUsed[id].Equal(minute) {
			delete(p.lastUsed, id)
		}
		p.lastUsedMu.Unlock()
	}
	if err != nil && ErrorCode(err) != ErrServerBusy { // busy: skipped, as when the writer is
		p.store.opts.Logger.Warn("record token use", "project", p.slug, "token_id", id, "err", err)
	}
}
