package projectdata

import (
	"sync"
	"time"
)

// tokenRecheck is how long a verified token is trusted without reading the
// database again. Revocations by this Store take effect at once (they empty
// the cache); revocations by another Store on the same folder (another
// process, the server's CLI) within tokenRecheck.
const tokenRecheck = time.Second

// maxCachedTokens bounds the verified tokens a project remembers; when it
// is full the cache starts afresh.
const maxCachedTokens = 1024

// tokenCache remembers the tokens of one project verified against its
// database, keyed by the SHA-256 of their secret, so that authentication
// reads the database at most once per token and tokenRecheck. Only valid
// tokens are kept; their expiry is checked on every use.
type tokenCache struct {
	mu     sync.Mutex
	gen    uint64 // counts forgets, so a slow check cannot install a revoked token
	byHash map[[32]byte]cachedToken
	byID   map[int64]cachedToken // the same tokens by id, for rechecks of a caller
}

// cachedToken is a token as read from the database, and when.
type cachedToken struct {
	tok        Token
	readAt     time.Time // the Store's clock
	readAtMono time.Time // the wall clock with its monotonic reading
}

// lookup returns the cached token for the hash unless it is missing or no
// longer fresh. It also returns the generation to pass to remember after a
// database read.
func (tc *tokenCache) lookup(hash [32]byte, now time.Time) (Token, bool, uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e, ok := tc.byHash[hash]
	if !ok || !e.fresh(now) {
		return Token{}, false, tc.gen
	}
	return e.tok, true, tc.gen
}

// lookupID is lookup by the token's id.
func (tc *tokenCache) lookupID(id int64, now time.Time) (Token, bool, uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e, ok := tc.byID[id]
	if !ok || !e.fresh(now) {
		return Token{}, false, tc.gen
	}
	return e.tok, true, tc.gen
}

// fresh reports whether the token was read less than tokenRecheck before
// now (and not after it) by the Store's clock, and by the real one: a
// Store whose clock stands still or runs slow does not trust it longer.
func (e cachedToken) fresh(now time.Time) bool {
	return !now.Before(e.readAt) && now.Sub(e.readAt) < tokenRecheck && time.Since(e.readAtMono) < tokenRecheck
}

// remember caches a valid token read from the database at now, unless the
// cache was emptied since gen was taken (a revocation may have committed
// after the read).
func (tc *tokenCache) remember(hash [32]byte, tok Token, now time.Time, gen uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if gen != tc.gen {
		return
	}
	if tc.byHash == nil || len(tc.byHash) >= maxCachedTokens {
		tc.byHash = make(map[[32]byte]cachedToken)
	}
	tc.byHash[hash] = cachedToken{tok: tok, readAt: now, readAtMono: time.Now()}
	tc.rememberIDLocked(tok, now)
}

// rememberID caches a valid token read by id from the database at now,
// unless the cache was emptied since gen was taken.
func (tc *tokenCache) rememberID(tok Token, now time.Time, gen uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if gen == tc.gen {
		tc.rememberIDLocked(tok, now)
	}
}

func (tc *tokenCache) rememberIDLocked(tok Token, now time.Time) {
	if tc.byID == nil || len(tc.byID) >= maxCachedTokens {
		tc.byID = make(map[int64]cachedToken)
	}
	tc.byID[tok.ID] = cachedToken{tok: tok, readAt: now, readAtMono: time.Now()}
}

// forget empties the cache: every token is read from the database again.
func (tc *tokenCache) forget() {
	tc.mu.Lock()
	tc.byHash, tc.byID = nil, nil
	tc.gen++
	tc.mu.Unlock()
}
