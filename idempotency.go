package projectdata

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Idempotency asks the Store to apply a write at most once: the first call
// with a key runs and its answer (result or error) is stored in the same
// SQLite transaction as its effect; a later call with the same key and the
// same fingerprint gets the stored answer and applies nothing. Keys are scoped
// to the project and the caller's token (see WithCaller; the application's
// own calls, without a caller, share one scope). See WithIdempotency.
type Idempotency struct {
	// Key is 1 to 255 printable ASCII characters (space to ~); anything
	// else is ErrInvalidIdempotencyKey. Keys that grow with time (UUIDv7,
	// ULID) cost less to store than random ones: answers are indexed by
	// key, and a random key lands on a page of that index of its own.
	Key string
	// Fingerprint, when set, returns what identifies the request, so that
	// the same key sent with another request is ErrIdempotencyKeyReused.
	// The Store calls it once, after the operation's arguments are known
	// and before it runs. An HTTP adapter passes the method, path and body
	// bytes. Nil: the Store fingerprints the operation and its arguments.
	Fingerprint func() []byte
	// OnReplay, when set, is called when the answer is a stored one (the
	// operation applied nothing), before the Store method returns.
	OnReplay func()
}

type idempotencyKey struct{}

// WithIdempotency returns a context under which every Store write (Insert,
// UpdateRecord, UpdateRecords, DeleteRecords, DeleteRecord, CreateTable, UpdateTable,
// DeleteTable, AddColumn, UpdateColumn, CreateIndex, DropIndex,
// CreateExport, CreateProjectExport, DeleteNotFoundExports, RenameProject, RevokeToken) is
// idempotent under idem.Key:
//
//   - the first call runs; its result, or its error, is stored with its
//     effect, in the same transaction, so after a crash both or neither
//     exist (ErrServerBusy, ErrInternal, ErrExportQuotaExceeded and a
//     cancelled context are never stored: a retry runs);
//   - a later call with the same key and fingerprint returns the stored
//     result (decoded from JSON: numbers in `any` fields come back as int64
//     when integral, else float64) or the stored error, and applies
//     nothing (a record write may run and roll back: it finds the stored
//     answer when it stores its own);
//   - the same key with another fingerprint is ErrIdempotencyKeyReused;
//   - the same key while its first call still runs in this Store is
//     ErrIdempotencyKeyInFlight;
//   - a stored answer expires after Options.IdempotencyTTL; the key is then
//     new again;
//   - a request refused before its operation runs (its body, say) is
//     answered under the key too, through RefuseIdempotent (InsertJSON
//     does it for its body).
//
// Reads ignore the key and run afresh. CreateToken refuses it
// (ErrInvalidRequest): a replay would have to store the secret.
//
// Two Stores on one data folder do not see each other's calls in flight: a
// concurrent duplicate there runs, but its write finds the key taken in its
// own transaction, applies nothing, and it returns the stored answer
// instead.
func WithIdempotency(ctx context.Context, idem Idempotency) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, idem)
}

// WithIdempotencyKey is WithIdempotency with only a key: the fingerprint is
// the operation and its arguments.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return WithIdempotency(ctx, Idempotency{Key: key})
}

// IdempotencyFrom returns the Idempotency that ctx carries (see
// WithIdempotency), if any: what a client of another transport (package
// client) sends in its place. Inside an idempotent operation's run it
// reports none: the operation's own Store calls are not idempotent again.
func IdempotencyFrom(ctx context.Context) (Idempotency, bool) {
	// Inside a run the key holds its *pendingAnswer (see pendingFrom).
	idem, ok := ctx.Value(idempotencyKey{}).(Idempotency)
	return idem, ok
}

// maxIdempotencyKeyLen is the longest key, in bytes.
const maxIdempotencyKeyLen = 255

// checkIdempotencyKey accepts 1 to 255 printable ASCII characters.
func checkIdempotencyKey(key string) error {
	if len(key) == 0 || len(key) > maxIdempotencyKeyLen {
		return errorf(ErrInvalidIdempotencyKey, "an idempotency key must be 1 to %d printable ASCII characters; this one has %d bytes", maxIdempotencyKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return errorf(ErrInvalidIdempotencyKey, "an idempotency key must be printable ASCII; byte %d is not", i)
		}
	}
	return nil
}

// ParseIdempotencyKey reads the value of an Idempotency-Key header
// (draft-ietf-httpapi-idempotency-key-header): the key bare, or as a quoted
// structured-field string ("key", with \" and \\ escapes). Surrounding
// spaces are ignored. The key must be 1 to 255 printable ASCII characters.
//
// Errors: ErrInvalidIdempotencyKey.
func ParseIdempotencyKey(header string) (string, error) {
	v := strings.Trim(header, " \t")
	if !strings.HasPrefix(v, `"`) {
		return v, checkIdempotencyKey(v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch ch := v[i]; {
		case ch == '\\':
			i++
			if i >= len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", errorf(ErrInvalidIdempotencyKey, "a quoted idempotency key may escape only \" and \\")
			}
			b.WriteByte(v[i])
		case ch == '"':
			if i != len(v)-1 {
				return "", errorf(ErrInvalidIdempotencyKey, "a quoted idempotency key must end at its closing quote")
			}
			return b.String(), checkIdempotencyKey(b.String())
		case ch < 0x20 || ch > 0x7e:
			return "", errorf(ErrInvalidIdempotencyKey, "an idempotency key must be printable ASCII")
		default:
			b.WriteByte(ch)
		}
	}
	return "", errorf(ErrInvalidIdempotencyKey, "a quoted idempotency key lacks its closing quote")
}

// writeCall describes a write operation for idempotency: args are what a Go
// caller's fingerprint covers, results point at the operation's results,
// stored as JSON on success and filled from the stored JSON on replay.
type writeCall struct {
	op      Operation
	args    []any
	results []any
}

// withWrite is withProject for operations that write: it is the one place
// where a Store write becomes idempotent. Without an Idempotency in ctx it
// is withProject. With one, fn runs with a context whose project.write
// calls look the answer up in fn's first write (a live one is replayed and
// the write applies nothing) and else store it with that write's effect;
// an operation whose results are set inside that write's fn needs nothing
// more. Operations for which lookedUpFirst holds also look the answer
// up on a reader before they run. A write that is not the operation's
// effect (bookkeeping before it) uses withoutIdempotencyRecord.
func (s *Store) withWrite(ctx context.Context, slug string, call writeCall, fn func(ctx context.Context, p *project) error) error {
	idem, ok := IdempotencyFrom(ctx)
	if !ok {
		return s.withProject(ctx, slug, call.op, func(p *project) error { return fn(ctx, p) })
	}
	return s.withProject(ctx, slug, call.op, func(p *project) error {
		return s.runIdempotent(ctx, p, idem, call, fn)
	})
}

// RefuseIdempotent answers an idempotent request (ctx carries an
// Idempotency) for op on project slug that was refused before the
// operation ran (a body that is malformed, too large or of another media
// type, say) as the operation would have been: refusal is stored under the
// key, unless it is not an answer to store (see WithIdempotency), and
// returned; if a call with the key ran before, its answer is returned
// instead (replayed, or ErrIdempotencyKeyReused for another fingerprint).
// Without an Idempotency in ctx, or for an op that stores no answers (a
// read, token creation), it returns refusal. A call that succeeded with
// the same fingerprint (the request was refused for what the fingerprint
// leaves out, such as an HTTP request's Content-Type, or found its first
// call in flight, which has finished since) has results that a refusal
// cannot carry: then too it returns refusal, and stores nothing.
//
// Without an Idempotency.Fingerprint, the fingerprint is the operation and
// the refusal (its code and message), which stand for the arguments it
// was not given: another refusal under the key is ErrIdempotencyKeyReused.
func (s *Store) RefuseIdempotent(ctx context.Context, slug string, op Operation, refusal error) error {
	return s.refuseIdempotent(ctx, slug, op, nil, refusal)
}

// refuseIdempotent is RefuseIdempotent with the arguments of op that are
// known (an insert's table), fingerprinted with the refusal.
func (s *Store) refuseIdempotent(ctx context.Context, slug string, op Operation, args []any, refusal error) error {
	if _, ok := IdempotencyFrom(ctx); !ok || !answeredOps[op] || refusal == nil {
		return refusal
	}
	call := writeCall{op: op, args: append(args, string(ErrorCode(refusal)), refusal.Error())}
	err := s.withWrite(ctx, slug, call, func(context.Context, *project) error { return refusal })
	if errors.Is(err, errSucceededBefore) {
		return refusal
	}
	return err
}

// errSucceededBefore is the replay, to a call without results (see
// RefuseIdempotent), of a stored answer that is a result.
var errSucceededBefore = errors.New("idempotent call succeeded before")

// answeredOps are the operations whose answers are stored under an
// idempotency key (see WithIdempotency).
var answeredOps = map[Operation]bool{
	OpInsertRecords: true, OpUpdateRecord: true, OpUpdateRecords: true, OpDeleteRecords: true, OpDeleteRecord: true,
	OpCreateTable: true, OpUpdateTable: true, OpDeleteTable: true, OpAddColumn: true, OpUpdateColumn: true,
	OpCreateIndex: true, OpDropIndex: true, OpCreateExport: true, OpCreateProjectExport: true,
	OpDeleteNotFoundExports: true, OpRenameProject: true, OpRevokeToken: true,
}

// idempotencyScope is (token, key); the project is the database.
type idempotencyScope struct {
	tokenID int64 // 0: the application's own calls
	key     string
}

func (s *Store) runIdempotent(ctx context.Context, p *project, idem Idempotency, call writeCall, fn func(ctx context.Context, p *project) error) error {
	if err := checkIdempotencyKey(idem.Key); err != nil {
		return err
	}
	scope := idempotencyScope{key: idem.Key}
	if c, ok := CallerFrom(ctx); ok {
		scope.tokenID = c.TokenID
	}
	if !p.idempotency.begin(scope) {
		return errorf(ErrIdempotencyKeyInFlight, "a request with this idempotency key is still running; retry once it has finished")
	}
	defer p.idempotency.end(scope)
	fp, err := fingerprint(idem, call)
	if err != nil {
		return err
	}

	now := s.now()
	if lookedUpFirst(call.op) {
		rec, found, err := p.lookupAnswer(ctx, scope, now)
		if err != nil {
			return err
		}
		if found {
			return rec.replay(idem, fp, call)
		}
	}
	pend := &pendingAnswer{
		answer:    storedAnswer{scope: scope, fingerprint: fp, expiresAt: now.Add(s.opts.IdempotencyTTL)},
		results:   call.results,
		now:       now,
		lookFirst: !storedAfterEffect(call.op),
	}
	runCtx := context.WithValue(ctx, idempotencyKey{}, pend)
	err = fn(runCtx, p)
	switch {
	case errors.Is(err, errAnswerFound):
		// The operation's write found the answer and applied nothing.
	case err == nil && !pend.written:
		// The operation succeeded without writing (nothing to pair the
		// answer with): store it on its own.
		s.storeAnswerAlone(ctx, p, pend)
	case err != nil && !pend.written && storableError(ctx, err):
		pend.answer.code = ErrorCode(err)
		pend.answer.message = err.Error()
		pend.results = nil
		s.storeAnswerAlone(ctx, p, pend)
	}
	if pend.found != nil {
		// A stored answer wins over this run's: its operation ran first
		// (an operation not looked up first, failing before it wrote, or
		// another Store on the folder).
		return pend.found.replay(idem, fp, call)
	}
	s.pruneAnswersSoon(p)
	return err
}

// lookedUpFirst reports whether op's stored answer is looked up before op
// runs, on a reader. The record writes, whose only effect is their one
// write, skip that read transaction: their write finds the answer on the
// writer and then changes nothing (see recordingAnswer), and an answer
// found there, or when they fail or succeed before writing (see
// storeAnswerAlone), is replayed instead. Other operations may have effects
// outside the database (an export's file) or bookkeeping writes before
// their effect, which a replay must not repeat.
func lookedUpFirst(op Operation) bool {
	switch op {
	case OpInsertRecords, OpUpdateRecord, OpUpdateRecords, OpDeleteRecord, OpDeleteRecords:
		return false
	}
	return true
}

// storedAfterEffect reports whether op's write stores its answer without
// looking the key up before its effect (see recordingAnswer): a replay of
// it then runs its write and rolls it back, which costs about what the
// request did. The bulk writes, which may run long, look the key up first.
func storedAfterEffect(op Operation) bool {
	switch op {
	case OpInsertRecords, OpUpdateRecord, OpDeleteRecord:
		return true
	}
	return false
}

// storableError reports whether an error is an answer to store: not a
// failure of the service (busy, internal, cancelled), which a retry should
// run again, nor a refusal for the state of the disk (an export past
// Options.MaxExportBytes), which a retry may pass once exports expire.
func storableError(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch ErrorCode(err) {
	case ErrInternal, ErrServerBusy, ErrStoreClosed, ErrIdempotencyKeyInFlight, ErrIdempotencyKeyReused,
		ErrExportQuotaExceeded:
		return false
	}
	return true
}

// storeAnswerAlone stores an answer in a transaction of its own, unless a
// live answer is stored under its key already (pend.found is then set).
// Failing leaves no record, so a retry runs again: the answer had no effect
// to pair with.
func (s *Store) storeAnswerAlone(ctx context.Context, p *project, pend *pendingAnswer) {
	err := p.write(context.WithoutCancel(ctx), pend.store)
	if err != nil && !errors.Is(err, errAnswerFound) {
		s.opts.Logger.Warn("store idempotent answer", "project", p.slug, "err", err)
	}
}

// fingerprint is the caller's, or else the operation's and its arguments'.
func fingerprint(idem Idempotency, call writeCall) ([]byte, error) {
	if idem.Fingerprint != nil {
		var buf [64]byte
		sum := sha256.Sum256(append(append(buf[:0], "request\x00"...), idem.Fingerprint()...))
		return sum[:], nil
	}
	var buf [512]byte
	b := append(append(append(buf[:0], "call\x00"...), call.op...), 0)
	b, ok := appendArgsJSON(b, call.args)
	if !ok {
		args, err := json.Marshal(call.args)
		if err != nil {
			return nil, errorf(ErrInvalidRequest, "the arguments of %s cannot be fingerprinted for idempotency: %v", call.op, err)
		}
		b = append(append(append(b[:0], "call\x00"...), call.op...), 0)
		b = append(b, args...)
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// inFlightKeys is a project's set of idempotency scopes whose first call
// is running. Its zero value is empty and ready.
type inFlightKeys struct {
	mu   sync.Mutex
	keys map[idempotencyScope]struct{}
	// prunedAt is when expired answers were last pruned.
	prunedAt time.Time
	// pruneBehind: the last prune stopped at its bound (pruneBatches
	// transactions that each deleted answers), so expired answers may be
	// left, and the next keyed write prunes again without waiting for the
	// minute. Storage then stays bounded whatever the rate of keyed
	// writes: each prune deletes up to pruneBatch * pruneBatches answers,
	// a write stores one.
	pruneBehind bool
	// pruning counts the prunes under way (see Store.pruneAnswersSoon),
	// for tests to wait for; beforePrune, when set, runs at the start of
	// each, for tests to hold it.
	pruning     sync.WaitGroup
	beforePrune func()
}

// begin adds scope; false when it is already in flight.
func (f *inFlightKeys) begin(scope idempotencyScope) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.keys[scope]; busy {
		return false
	}
	if f.keys == nil {
		f.keys = make(map[idempotencyScope]struct{})
	}
	f.keys[scope] = struct{}{}
	return true
}

func (f *inFlightKeys) end(scope idempotencyScope) {
	f.mu.Lock()
	delete(f.keys, scope)
	f.mu.Unlock()
}

// pruneDue reports whether a minute has passed since the last prune, or
// that prune fell behind, and if so starts a new prune: until it ends
// (prunedBehind), no other is due.
func (f *inFlightKeys) pruneDue(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.pruneBehind && now.Sub(f.prunedAt) < time.Minute && !now.Before(f.prunedAt) {
		return false
	}
	f.prunedAt = now
	f.pruneBehind = false
	return true
}

// prunedBehind records that the prune just ended stopped at its bound.
func (f *inFlightKeys) prunedBehind() {
	f.mu.Lock()
	f.pruneBehind = true
	f.mu.Unlock()
}

// pruneBatch bounds the answers one transaction deletes, so that pruning
// never holds the write lock for long; pruneBatches bounds the
// transactions of one prune (the next keyed write prunes the rest).
const (
	pruneBatch   = 256
	pruneBatches = 16
)

// pruneOldest deletes the expired answers among the pruneBatch oldest.
// Ids grow with time, so the oldest answers expire first and pruning needs
// no index of expiry: it reads the table from its start. An answer stored
// under a longer TTL than the ones after it (Options.IdempotencyTTL
// lowered, the clock set back) may hold pruning back until it expires
// itself, if pruneBatch of them do: storage stays bounded by the longest
// TTL in use.
var pruneOldest = `DELETE FROM _pd_idempotency WHERE id IN
	(SELECT id FROM _pd_idempotency ORDER BY id LIMIT ` + strconv.Itoa(pruneBatch) + `) AND expires_at <= ?`

// pruneAnswersSoon starts pruning expired answers in a goroutine of its
// own, once a minute per project or sooner while pruning is behind (see
// inFlightKeys.pruneBehind): the keyed write that finds it due does not
// wait for it.
func (s *Store) pruneAnswersSoon(p *project) {
	now := s.now()
	if !p.idempotency.pruneDue(now) {
		return
	}
	p.idempotency.pruning.Add(1)
	go func() {
		defer p.idempotency.pruning.Done()
		if hold := p.idempotency.beforePrune; hold != nil {
			hold()
		}
		s.runChore(p.slug, "prune idempotent answers", func(p *project) error { return pruneAnswers(p, now) })
	}()
}

// pruneAnswers deletes the answers expired at now, in small transactions
// that let other writers in between, and records whether it stopped at its
// bound.
func pruneAnswers(p *project, now time.Time) error {
	ctx := context.Background()
	// A point read first tells whether any of the oldest answers has
	// expired, so that pruning waits for the writer only when there is
	// something to delete.
	var expired bool
	err := p.readPoint(ctx, func(c *conn) (err error) {
		expired, err = c.queryRow(`SELECT 1 FROM (SELECT expires_at FROM _pd_idempotency ORDER BY id LIMIT `+strconv.Itoa(pruneBatch)+`)
			WHERE expires_at <= ? LIMIT 1`, []any{now.UnixMilli()}, func(*sqlite3.Stmt) error { return nil })
		return err
	})
	if err != nil || !expired {
		return err
	}
	for range pruneBatches {
		var n int64
		err := p.write(ctx, func(c *conn) error {
			err := c.exec(pruneOldest, now.UnixMilli())
			n = c.db.Changes()
			return err
		})
		if err != nil || n == 0 {
			return err
		}
	}
	p.idempotency.prunedBehind()
	return nil
}

// errAnswerFound is how the write of an idempotent operation stops when it
// finds a live answer stored under its key: it applied nothing, and the
// operation replays that answer (pendingAnswer.found).
var errAnswerFound = errors.New("idempotent answer found")

// pendingAnswer is the answer an idempotent operation stores with its
// first write; written tells whether that happened, found holds the live
// answer a write found under the key instead (then nothing was written).
type pendingAnswer struct {
	answer  storedAnswer
	results []any
	now     time.Time // when the operation started: answers expired then are not live
	// lookFirst: the write looks the key up before fn runs (see
	// recordingAnswer).
	lookFirst bool
	written   bool
	found     *storedAnswer
	// buf holds the encoded results of a small answer (an insert's of a
	// few rows) without an allocation of their own.
	buf [128]byte
}

// pendingFrom returns the answer of the idempotent operation that ctx runs,
// if any (nil after withoutIdempotencyRecord).
func pendingFrom(ctx context.Context) *pendingAnswer {
	pend, _ := ctx.Value(idempotencyKey{}).(*pendingAnswer)
	return pend
}

// withoutIdempotencyRecord returns ctx for a write that is bookkeeping, not
// the operation's effect: it does not carry the operation's answer.
func withoutIdempotencyRecord(ctx context.Context) context.Context {
	if pendingFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, idempotencyKey{}, (*pendingAnswer)(nil))
}

// recordingAnswer wraps the fn of a project.write: when ctx carries an
// idempotent operation's answer not yet stored, the answer is stored after
// fn's own changes, in the same unit of work, so both commit together or
// neither does. The key is not looked up before fn runs (one statement
// less per keyed write): the answer's insert finds a live answer stored
// under the key, and then the write fails with errAnswerFound, so that
// fn's changes roll back with it. Operations that may have effects outside
// the database (see lookedUpFirst) look the key up on the writer before fn
// runs instead, as they did on a reader.
func recordingAnswer(ctx context.Context, fn func(c *conn) error) func(c *conn) error {
	pend := pendingFrom(ctx)
	if pend == nil || pend.written {
		return fn
	}
	return func(c *conn) error {
		if pend.lookFirst {
			if err := pend.lookup(c); err != nil {
				return err
			}
		}
		if err := fn(c); err != nil {
			return err
		}
		if err := pend.store(c); err != nil {
			return err
		}
		pend.written = true
		return nil
	}
}

// lookup reads the live answer under pend's key on c, inside the write that
// would store pend: found, it is pend.found and the error errAnswerFound.
func (pend *pendingAnswer) lookup(c *conn) error {
	a, found, err := lookupAnswerOn(c, pend.answer.scope, pend.now)
	if err != nil {
		return errors.Wrap(err, "look up idempotent answer")
	}
	if found {
		pend.found = a
		return errAnswerFound
	}
	return nil
}

// store encodes the results (unless the answer is an error) and inserts the
// answer on c. A live answer stored under its key already is pend.found,
// the error errAnswerFound, and nothing is stored; an expired one is
// replaced, and the new row's id is the newest, as pruning needs.
func (pend *pendingAnswer) store(c *conn) error {
	a := &pend.answer
	if a.code == "" {
		body, err := encodeAnswer(pend.buf[:0], pend.results)
		if err != nil {
			return errors.Wrap(err, "encode idempotent answer")
		}
		a.result, a.compressed = compressAnswer(body)
	}
	// A new key (the common case) takes one statement: the insert, which
	// does nothing when the key is taken.
	err := a.insert(c, insertAnswerSQL)
	if err != nil || c.db.Changes() == 1 {
		return errors.Wrap(err, "store idempotent answer")
	}
	if err := pend.lookup(c); err != nil {
		return err
	}
	return errors.Wrap(a.insert(c, replaceAnswerSQL), "store idempotent answer")
}

// The statements that store an answer (see storedAnswer.insert): a new
// key's, which does nothing when the key is taken, and an expired answer's
// replacement.
const (
	insertAnswerSQL = `INSERT INTO _pd_idempotency
		(token_id, key, fingerprint, code, message, result, compressed, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id, key) DO NOTHING`
	replaceAnswerSQL = `INSERT OR REPLACE INTO _pd_idempotency
		(token_id, key, fingerprint, code, message, result, compressed, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)

// insert runs sql, one of the statements that store an answer, with a's
// columns. Every parameter is bound each time, without boxing them in an
// []any (the cached statement is reused without clearing its bindings); the
// result is unbound after, not to hold its copy in SQLite.
func (a *storedAnswer) insert(c *conn, sql string) error {
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	err = st.BindInt64(1, a.scope.tokenID)
	if err == nil {
		err = st.BindText(2, a.scope.key)
	}
	if err == nil {
		err = st.BindBlob(3, a.fingerprint)
	}
	if err == nil && a.code == "" { // a result: code and message NULL
		err = st.BindNull(4)
		if err == nil {
			err = st.BindNull(5)
		}
		if err == nil {
			err = st.BindBlob(6, a.result)
		}
	} else if err == nil { // an error: result NULL
		err = st.BindText(4, string(a.code))
		if err == nil {
			err = st.BindText(5, a.message)
		}
		if err == nil {
			err = st.BindNull(6)
		}
	}
	if err == nil {
		err = st.BindBool(7, a.compressed)
	}
	if err == nil {
		err = st.BindInt64(8, a.expiresAt.UnixMilli())
	}
	if err == nil {
		err = st.Exec()
	}
	st.BindNull(6)
	return err
}

// storedAnswer is one row of _pd_idempotency.
type storedAnswer struct {
	scope       idempotencyScope
	fingerprint []byte
	code        Code // "" for a result
	message     string
	result      []byte // JSON array of the results, maybe compressed
	compressed  bool
	expiresAt   time.Time
}

// lookupAnswer reads the live answer stored under scope, if any, on a
// reader.
func (p *project) lookupAnswer(ctx context.Context, scope idempotencyScope, now time.Time) (a *storedAnswer, found bool, err error) {
	err = p.read(ctx, func(c *conn) (err error) {
		a, found, err = lookupAnswerOn(c, scope, now)
		return err
	})
	if err != nil {
		return nil, false, dbError(ctx, err)
	}
	return a, found, nil
}

// lookupAnswerOn reads the live answer stored under scope, if any, on c.
func lookupAnswerOn(c *conn, scope idempotencyScope, now time.Time) (*storedAnswer, bool, error) {
	a := &storedAnswer{scope: scope}
	found, err := c.queryRow(`SELECT fingerprint, code, message, result, compressed FROM _pd_idempotency
		WHERE token_id = ? AND key = ? AND expires_at > ?`, []any{scope.tokenID, scope.key, now.UnixMilli()}, func(st *sqlite3.Stmt) error {
		a.fingerprint = st.ColumnBlob(0, nil)
		a.code = Code(st.ColumnText(1))
		a.message = st.ColumnText(2)
		a.result = st.ColumnBlob(3, nil)
		a.compressed = st.ColumnBool(4)
		return nil
	})
	return a, found, err
}

// replay answers a retry from the stored answer: the stored error, or the
// stored results decoded into call.results.
func (a *storedAnswer) replay(idem Idempotency, fp []byte, call writeCall) error {
	if string(a.fingerprint) != string(fp) {
		return errorf(ErrIdempotencyKeyReused, "this idempotency key was used for another request; use a new key for a new request")
	}
	if a.code != "" {
		if idem.OnReplay != nil {
			idem.OnReplay()
		}
		return &Error{Code: a.code, Message: a.message}
	}
	if call.results == nil {
		return errSucceededBefore
	}
	if err := decodeAnswer(a.result, a.compressed, call.results); err != nil {
		return err
	}
	if idem.OnReplay != nil {
		idem.OnReplay()
	}
	return nil
}
