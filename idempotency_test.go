package projectdata_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// idemStore is a Store in a temporary folder, with project "acme", a table
// "items" (id INTEGER PRIMARY KEY, sku TEXT UNIQUE, qty INTEGER) and a
// settable clock.
func idemStore(t *testing.T) (*projectdata.Store, string, *pdtest.Clock) {
	t.Helper()
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC))
	s, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "sku", Unique: true}, {Name: "qty", Type: "INTEGER"},
	}}); err != nil {
		t.Fatal(err)
	}
	return s, dir, clock
}

// countRows counts a table's rows behind the Store's back.
func countRows(t *testing.T, dir, table string) int {
	t.Helper()
	raw := pdtest.Raw(t, dir, "acme")
	st, _, err := raw.Prepare(`SELECT count(*) FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Step()
	return st.ColumnInt(0)
}

// replays returns a context with the key whose OnReplay counts replays.
func replays(key string) (context.Context, *int) {
	n := new(int)
	return projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: key, OnReplay: func() { *n++ }}), n
}

func TestIdempotencyReplaysInsert(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	rows := []projectdata.Row{{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}}
	kctx, replayed := replays("order-1")
	first, err := s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	is.Equal(*replayed, 0)
	second, err := s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	is.Equal(*replayed, 1)                  // the answer is the stored one
	is.Equal(second, first)                 // same result, same Go types (int64 ids)
	is.Equal(countRows(t, dir, "items"), 2) // applied once
}

// TestIdempotencyRetryThatCouldRunAgainChangesNothing: an insert into a
// table without a unique column, or a record's update, could apply again
// on a retry. Their write stores the answer after its effect, without
// looking the key up first: finding the stored answer there rolls the
// retry's effect back (rows, change log), and the stored answer is
// replayed; with other arguments, the key is refused, likewise with nothing
// applied.
func TestIdempotencyRetryThatCouldRunAgainChangesNothing(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	changes := func() int {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{})
		is.NoErr(err)
		return len(page.Changes)
	}
	rows := []projectdata.Row{{"body": "x"}}
	kctx, replayed := replays("note-1")
	first, err := s.Insert(kctx, "acme", "notes", rows)
	is.NoErr(err)
	logged := changes()
	for range 2 {
		again, err := s.Insert(kctx, "acme", "notes", rows)
		is.NoErr(err)
		is.Equal(again, first)
	}
	is.Equal(*replayed, 2)
	is.Equal(countRows(t, dir, "notes"), 1) // applied once
	is.Equal(changes(), logged)             // the retries' log records rolled back too

	_, err = s.Insert(kctx, "acme", "notes", []projectdata.Row{{"body": "other"}})
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	is.Equal(countRows(t, dir, "notes"), 1)

	id := first.InsertedIDs[0]
	uctx, updated := replays("note-1-update")
	up, err := s.UpdateRecord(uctx, "acme", "notes", id, projectdata.Row{"body": "y"})
	is.NoErr(err)
	_, err = s.UpdateRecord(ctx, "acme", "notes", id, projectdata.Row{"body": "z"}) // unkeyed, in between
	is.NoErr(err)
	logged = changes()
	again, err := s.UpdateRecord(uctx, "acme", "notes", id, projectdata.Row{"body": "y"})
	is.NoErr(err)
	is.Equal(*updated, 1)
	is.Equal(again, up)
	is.Equal(changes(), logged)
	rec, err := s.GetRecord(ctx, "acme", "notes", id)
	is.NoErr(err)
	is.Equal(rec["body"], "z") // the retry did not apply

	// Retries whose own run fails because the first one applied (a
	// unique value now taken, a record now gone) replay the first answer.
	_, err = s.AddColumn(ctx, "acme", "notes", projectdata.ColumnDef{Name: "code", Unique: true})
	is.NoErr(err)
	cctx, _ := replays("note-2")
	firstCoded, err := s.Insert(cctx, "acme", "notes", []projectdata.Row{{"code": "c1"}})
	is.NoErr(err)
	againCoded, err := s.Insert(cctx, "acme", "notes", []projectdata.Row{{"code": "c1"}})
	is.NoErr(err)
	is.Equal(againCoded, firstCoded)
	dctx, _ := replays("note-2-delete")
	gone, err := s.DeleteRecord(dctx, "acme", "notes", firstCoded.InsertedIDs[0])
	is.NoErr(err)
	goneAgain, err := s.DeleteRecord(dctx, "acme", "notes", firstCoded.InsertedIDs[0])
	is.NoErr(err)
	is.Equal(goneAgain, gone)
}

func TestIdempotencyKeyReusedForOtherArguments(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	kctx := projectdata.WithIdempotencyKey(ctx, "k")
	_, err := s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err)
	_, err = s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "b"}})
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	_, err = s.DeleteRecord(kctx, "acme", "items", 1) // another operation
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	is.Equal(countRows(t, dir, "items"), 1)
}

func TestIdempotencyInFlight(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	started, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // a failing check must not leave the first call held, or the Store's Close waits for it
	slow := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: "k", Fingerprint: func() []byte {
		close(started)
		<-held // the first call is running while it fingerprints
		return []byte("same")
	}})
	var wg sync.WaitGroup
	var firstErr error
	wg.Go(func() { _, firstErr = s.Insert(slow, "acme", "items", []projectdata.Row{{"sku": "a"}}) })
	<-started
	dup := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: "k", Fingerprint: func() []byte { return []byte("same") }})
	_, err := s.Insert(dup, "acme", "items", []projectdata.Row{{"sku": "a"}})
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyInFlight)
	other := projectdata.WithIdempotencyKey(ctx, "other") // other keys are not held up
	_, err = s.Insert(other, "acme", "items", []projectdata.Row{{"sku": "b"}})
	is.NoErr(err)
	release()
	wg.Wait()
	is.NoErr(firstErr)
	_, err = s.Insert(dup, "acme", "items", []projectdata.Row{{"sku": "a"}}) // finished: a replay
	is.NoErr(err)
	is.Equal(countRows(t, dir, "items"), 2)
}

func TestIdempotencyExpires(t *testing.T) {
	is := is.New(t)
	s, dir, clock := idemStore(t)
	for i := range 300 { // more than one prune batch
		kctx := projectdata.WithIdempotencyKey(ctx, "k"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String())
		_, err := s.Insert(kctx, "acme", "items", []projectdata.Row{{"qty": i}})
		is.NoErr(err)
	}
	is.Equal(countRows(t, dir, "_pd_idempotency"), 300)
	kctx := projectdata.WithIdempotencyKey(ctx, "k")
	_, err := s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err)

	clock.Advance(24*time.Hour - time.Second) // still kept
	_, err = s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "b"}})
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)

	clock.Advance(2 * time.Second) // expired: the key is new again
	res, err := s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "b"}})
	is.NoErr(err)
	is.Equal(res.InsertedCount, 1)
	is.Equal(countRows(t, dir, "items"), 302)
	// The expired ones are pruned, in batches, after the write that found
	// a prune due: it did not wait for it.
	for deadline := time.Now().Add(10 * time.Second); countRows(t, dir, "_pd_idempotency") != 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	is.Equal(countRows(t, dir, "_pd_idempotency"), 1)
}

func TestIdempotencyTTLOption(t *testing.T) {
	is := is.New(t)
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC))
	s, _ := pdtest.Open(t, &projectdata.Options{Now: clock.Now, IdempotencyTTL: time.Minute})
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	kctx := projectdata.WithIdempotencyKey(ctx, "k")
	_, err = s.RenameProject(kctx, "acme", "One")
	is.NoErr(err)
	clock.Advance(time.Minute + time.Millisecond)
	p, err := s.RenameProject(kctx, "acme", "Two") // would be idempotency_key_reused within the TTL
	is.NoErr(err)
	is.Equal(p.Name, "Two")
}

func TestIdempotencyScopedPerToken(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	rows := []projectdata.Row{{"qty": 1}}
	for _, id := range []int64{7, 8} {
		kctx, replayed := replays("same")
		cctx := projectdata.WithCaller(kctx, projectdata.Caller{Project: "acme", TokenID: id, Role: projectdata.RoleWrite})
		_, err := s.Insert(cctx, "acme", "items", rows)
		is.NoErr(err)
		is.Equal(*replayed, 0) // another token's key is another key
	}
	_, err := s.Insert(projectdata.WithIdempotencyKey(ctx, "same"), "acme", "items", rows) // the application's own scope
	is.NoErr(err)
	is.Equal(countRows(t, dir, "items"), 3)
}

func TestIdempotencyReplaysErrors(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err)
	kctx, replayed := replays("dup")
	dup := []projectdata.Row{{"sku": "a"}}
	_, err = s.Insert(kctx, "acme", "items", dup)
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	first := err.Error()

	_, err = s.DeleteRecord(ctx, "acme", "items", 1) // the conflict is gone...
	is.NoErr(err)
	_, err = s.Insert(kctx, "acme", "items", dup) // ...but the answer stands
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	is.Equal(err.Error(), first)
	is.Equal(*replayed, 1)
	is.Equal(countRows(t, dir, "items"), 0)

	// Validation before any write is an answer too.
	_, err = s.UpdateRecords(projectdata.WithIdempotencyKey(ctx, "where"), "acme", "items", projectdata.BulkUpdate{Data: projectdata.Row{"qty": 1}})
	pdtest.Code(t, err, projectdata.ErrWhereRequired)
	_, err = s.UpdateRecords(projectdata.WithIdempotencyKey(ctx, "where"), "acme", "items", projectdata.BulkUpdate{Data: projectdata.Row{"qty": 1}})
	pdtest.Code(t, err, projectdata.ErrWhereRequired)
}

func TestIdempotencyCancelledCallLeavesNoAnswer(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	cctx, cancel := context.WithCancel(projectdata.WithIdempotencyKey(ctx, "k"))
	cancel()
	_, err := s.Insert(cctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.True(err != nil)
	res, err := s.Insert(projectdata.WithIdempotencyKey(ctx, "k"), "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err) // the retry runs
	is.Equal(res.InsertedCount, 1)
	is.Equal(countRows(t, dir, "items"), 1)
}

func TestIdempotencyKeySyntax(t *testing.T) {
	s, _, _ := idemStore(t)
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "é"} {
		_, err := s.Insert(projectdata.WithIdempotencyKey(ctx, key), "acme", "items", nil)
		pdtest.Code(t, err, projectdata.ErrInvalidIdempotencyKey)
	}
	tests := []struct {
		header, key string
		ok          bool
	}{
		{"abc", "abc", true},
		{` "abc" `, "abc", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{"with space", "with space", true},
		{strings.Repeat("k", 255), strings.Repeat("k", 255), true},
		{strings.Repeat("k", 256), "", false},
		{`""`, "", false},
		{`"abc`, "", false},
		{`"a"b"`, "", false},
		{`"a\n"`, "", false},
		{"caf\xc3\xa9", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			is := is.New(t)
			key, err := projectdata.ParseIdempotencyKey(tt.header)
			if !tt.ok {
				pdtest.Code(t, err, projectdata.ErrInvalidIdempotencyKey)
				return
			}
			is.NoErr(err)
			is.Equal(key, tt.key)
		})
	}
}

func TestIdempotencyKeyRefusedByTokenCreationIgnoredByReads(t *testing.T) {
	is := is.New(t)
	s, _, _ := idemStore(t)
	kctx := projectdata.WithIdempotencyKey(ctx, "k")
	_, err := s.CreateToken(kctx, "acme", projectdata.NewToken{})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err)
	for range 2 { // reads run afresh and store nothing
		_, err = s.GetRecord(kctx, "acme", "items", 1)
		is.NoErr(err)
		_, err = s.Query(kctx, "acme", projectdata.QueryRequest{SQL: "SELECT 1"})
		is.NoErr(err)
	}
	_, err = s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": "b"}}) // the key is still fresh
	is.NoErr(err)
}

// TestIdempotencyLargeAnswerCompressed checks that a large answer (stored
// compressed) replays exactly.
func TestIdempotencyLargeAnswerCompressed(t *testing.T) {
	is := is.New(t)
	s, dir, _ := idemStore(t)
	rows := make([]projectdata.Row, 2000)
	for i := range rows {
		rows[i] = projectdata.Row{"qty": i}
	}
	kctx, replayed := replays("big")
	first, err := s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	second, err := s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	is.Equal(*replayed, 1)
	is.Equal(second, first)
	raw := pdtest.Raw(t, dir, "acme")
	st, _, err := raw.Prepare(`SELECT compressed, length(result) FROM _pd_idempotency`)
	is.NoErr(err)
	defer st.Close()
	is.True(st.Step())
	is.Equal(st.ColumnInt(0), 1)    // compressed
	is.True(st.ColumnInt(1) < 4000) // 2000 ids, about 10 KB of JSON
}

// TestIdempotencyTwoStoresOneFolder runs the same keyed insert from two
// Stores on one folder at once, many times: each key applies once, and
// every answer is the same.
func TestIdempotencyTwoStoresOneFolder(t *testing.T) {
	is := is.New(t)
	a, dir, clock := idemStore(t)
	b, err := projectdata.Open(dir, &projectdata.Options{Now: clock.Now})
	is.NoErr(err)
	defer b.Close()
	const keys = 20
	for k := range keys {
		key := "k" + time.Duration(k).String()
		rows := []projectdata.Row{{"qty": k}}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			seen []any
		)
		for _, s := range []*projectdata.Store{a, b, a, b} {
			wg.Go(func() {
				res, err := s.Insert(projectdata.WithIdempotencyKey(ctx, key), "acme", "items", rows)
				if projectdata.ErrorCode(err) == projectdata.ErrIdempotencyKeyInFlight {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen = append(seen, res.InsertedIDs[0])
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, id := range seen {
			is.Equal(id, seen[0])
		}
	}
	is.Equal(countRows(t, dir, "items"), keys)
}

// TestIdempotencyReplayWhenTheRetryCannotRun: a record write looks its key
// up inside its write; a retry that fails there (its table is gone) or
// before it gets there (the Store now takes fewer rows) still gets the
// stored answer, and nothing is stored for it.
func TestIdempotencyReplayWhenTheRetryCannotRun(t *testing.T) {
	is := is.New(t)
	s, dir, clock := idemStore(t)
	rows := []projectdata.Row{{"qty": 1}, {"qty": 2}}
	for _, key := range []string{"k", "rows"} {
		_, err := s.Insert(projectdata.WithIdempotencyKey(ctx, key), "acme", "items", rows)
		is.NoErr(err)
	}
	is.NoErr(s.Close())
	s, err := projectdata.Open(dir, &projectdata.Options{Now: clock.Now, MaxInsertRows: 1})
	is.NoErr(err)
	defer s.Close()

	kctx, replayed := replays("rows")
	res, err := s.Insert(kctx, "acme", "items", rows) // too many rows now, but answered
	is.NoErr(err)
	is.Equal(*replayed, 1)
	is.Equal(res.InsertedIDs, []any{int64(3), int64(4)})

	_, err = s.DeleteTable(ctx, "acme", "items")
	is.NoErr(err)
	kctx, replayed = replays("k")
	_, err = s.Insert(kctx, "acme", "items", rows[:1])
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused) // another request under the key
	res, err = s.Insert(kctx, "acme", "items", rows)
	is.NoErr(err)
	is.Equal(*replayed, 1)
	is.Equal(res.InsertedIDs, []any{int64(1), int64(2)})
	is.Equal(countRows(t, dir, "_pd_idempotency"), 2)
}

// TestIdempotencyRefusedBodyFingerprint: a Go caller's InsertJSON refused
// for its body is answered under its key with the table and the refusal as
// its fingerprint: the same call replays the refusal, while another table
// or another refusal under the key is idempotency_key_reused (every
// refusal had one fingerprint, so another call's refusal was replayed in
// its place: invalid_json for a body whose answer is another).
func TestIdempotencyRefusedBodyFingerprint(t *testing.T) {
	is := is.New(t)
	s, _, _ := idemStore(t)
	kctx, replayed := replays("k")
	_, err := s.InsertJSON(kctx, "acme", "items", strings.NewReader(`{"sku":`))
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	_, err = s.InsertJSON(kctx, "acme", "items", strings.NewReader(`{"sku":`))
	pdtest.Code(t, err, projectdata.ErrInvalidJSON)
	is.Equal(*replayed, 1)
	for _, call := range []struct{ table, body string }{
		{"other", `{"sku":`},   // another table
		{"items", `[1, 2]`},    // another refusal
		{"items", `{"sku":1}`}, // a body that is not refused
	} {
		_, err = s.InsertJSON(kctx, "acme", call.table, strings.NewReader(call.body))
		pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	}
	is.Equal(*replayed, 1)

	// RefuseIdempotent alone: the refusal is the fingerprint.
	rctx := projectdata.WithIdempotencyKey(ctx, "r")
	refusal := &projectdata.Error{Code: projectdata.ErrInvalidRequest, Message: "no"}
	err = s.RefuseIdempotent(rctx, "acme", projectdata.OpUpdateRecords, refusal)
	is.Equal(err.Error(), "no")
	err = s.RefuseIdempotent(rctx, "acme", projectdata.OpUpdateRecords, &projectdata.Error{Code: projectdata.ErrInvalidJSON, Message: "bad"})
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
}
