package projectdata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// boundedStore returns a Store with project acme, its admin secret, and the
// open project, pinned until the test ends.
func boundedStore(t *testing.T, opts *Options) (*Store, string, *project) {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	// No change log: its background pruning would take connections that
	// these tests count or hold.
	opts.changeLogOff = true
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, tok, err := s.CreateProject(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "items", Columns: []ColumnDef{{Name: "name"}}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.acquire(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.release(p) })
	return s, tok.Token, p
}

// within runs fn and fails the test if it has not returned after a
// generous guard: fn must not wait for what the test holds.
func within(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting")
	}
}

func TestWaitingForAConnectionIsBounded(t *testing.T) {
	is := is.New(t)
	clk := &clock{now: time.Now()}
	s, secret, p := boundedStore(t, &Options{QueueTimeout: 20 * time.Millisecond, MaxReadersPerProject: 2, Now: clk.Now})
	ctx := context.Background()
	defer takeAllSlots(p.rsem)() // every reader taken, as by slow queries
	p.wsem <- struct{}{}         // and the writer, as by a column rebuild
	defer func() { <-p.wsem }()
	within(t, func() {
		_, err := s.ListTables(ctx, "acme")
		is.True(errors.Is(err, ErrServerBusy))
		_, err = s.Insert(ctx, "acme", "items", []Row{{"name": "a"}})
		is.True(errors.Is(err, ErrServerBusy))
	})
	t.Run("AuthenticationNeitherWaitsNorStarves", func(t *testing.T) {
		is := is.New(t)
		clk.advance(time.Hour) // a minute not yet recorded
		within(t, func() {
			caller, err := s.Authenticate(ctx, "acme", secret)
			is.NoErr(err)
			is.Equal(caller.Role, RoleAdmin)
		})
	})
}

func TestLastUsedIsRecordedOnceTheWriterIsFree(t *testing.T) {
	is := is.New(t)
	clk := &clock{now: time.Now()}
	// A queue timeout longer than within's guard: waiting for the writer
	// would fail the test.
	s, secret, p := boundedStore(t, &Options{Now: clk.Now, QueueTimeout: time.Hour})
	ctx := context.Background()
	clk.advance(time.Hour)
	now := clk.Now()
	p.wsem <- struct{}{}
	within(t, func() {
		_, err := s.Authenticate(ctx, "acme", secret) // skipped: the writer is busy
		is.NoErr(err)
	})
	<-p.wsem
	// Recorded by a later request that finds the writer free; a background
	// write (the change log's pruning) may hold it again, so a few tries.
	var recorded *Timestamp
	for range 100 {
		is.NoErr(p.write(ctx, func(*conn) error { return nil }))
		_, err := s.Authenticate(ctx, "acme", secret)
		is.NoErr(err)
		toks, err := s.ListTokens(ctx, "acme")
		is.NoErr(err)
		if recorded = toks[0].LastUsedAt; recorded != nil {
			break
		}
	}
	is.True(recorded != nil && recorded.Equal(now.UTC().Truncate(time.Minute)))
}

func TestQueryMemoryIsGivenBack(t *testing.T) {
	is := is.New(t)
	// No checkpointer: its connection, kept a while after a checkpoint,
	// would come and go in the heap this test counts.
	// A long query budget: the test is of memory, and a 20 MB string takes
	// more than the usual second under -race on a loaded machine.
	s, _, p := boundedStore(t, &Options{QueryMaxBytes: 1 << 30, ReplicatorCheckpoints: true, QueryTimeout: time.Minute})
	ctx := context.Background()
	pooled := func() int {
		p.rmu.Lock()
		defer p.rmu.Unlock()
		return len(p.readers)
	}
	_, err := s.Query(ctx, "acme", QueryRequest{SQL: `SELECT count(*) FROM items`})
	is.NoErr(err)
	is.Equal(pooled(), 1)
	base := s.heap.inUse()

	// 20 MB strings, made at once or grown: past the usual heap of a
	// reader, within QueryMaxMemory.
	for _, sql := range []string{
		`SELECT length(printf('%.*c', 20000000, 'x')) AS n`,
		`SELECT length(group_concat(printf('%.*c', 100000, 'x'), '')) AS n FROM generate_series(1, 200)`,
	} {
		res, err := s.Query(ctx, "acme", QueryRequest{SQL: sql})
		is.NoErr(err)
		is.Equal(res.Rows[0]["n"], int64(20000000))
		is.Equal(pooled(), 0)                         // the reader that grew was closed
		is.Equal(s.heap.inUse(), base-usualQueryHeap) // and its memory given back
		_, err = s.Query(ctx, "acme", QueryRequest{SQL: `SELECT count(*) FROM items`})
		is.NoErr(err)
		is.Equal(pooled(), 1) // an ordinary query keeps its reader
	}

	// A list ordered by a column no index holds sorts the rows up to its
	// offset in the same heap: 15 MB of them, past the usual heap.
	for i := 0; i < 30000; i += 1000 {
		rows := make([]Row, 1000)
		for j := range rows {
			rows[j] = Row{"name": fmt.Sprintf("%08d%s", i+j, strings.Repeat("n", 500))}
		}
		_, err := s.Insert(ctx, "acme", "items", rows)
		is.NoErr(err)
	}
	l, err := s.ListRecords(ctx, "acme", "items", ListOptions{Order: "-name", Offset: 29990, Limit: 10, Count: CountNone})
	is.NoErr(err)
	is.Equal(l.Rows[9]["name"].(string)[:8], "00000000")
	is.Equal(pooled(), 0)                         // the reader that grew was closed
	is.Equal(s.heap.inUse(), base-usualQueryHeap) // and its memory given back

	_, err = s.Query(ctx, "acme", QueryRequest{SQL: `SELECT count(*) FROM items`})
	is.NoErr(err)
	is.Equal(pooled(), 1) // an ordinary query keeps its reader
}

func TestSQLiteMemoryIsCapped(t *testing.T) {
	is := is.New(t)
	// The open connections (the writer and a reader at least) count 8 MiB
	// each: no room left for a query that needs more than the usual heap,
	// though the 32 MiB it may use would fit in the cap alone.
	s, _, _ := boundedStore(t, &Options{QueryMaxBytes: 1 << 30, MaxSQLiteMemory: 40 << 20, QueryMaxMemory: 32 << 20})
	ctx := context.Background()
	_, err := s.Query(ctx, "acme", QueryRequest{SQL: `SELECT length(printf('%.*c', 20000000, 'x'))`})
	is.True(errors.Is(err, ErrServerBusy))
	_, err = s.Query(ctx, "acme", QueryRequest{SQL: `SELECT count(*) FROM items`})
	is.NoErr(err) // ordinary queries still run
	_, err = s.Insert(ctx, "acme", "items", []Row{{"name": strings.Repeat("x", 1000)}})
	is.NoErr(err) // and writes
}

func TestEncodedSizeIsExact(t *testing.T) {
	is := is.New(t)
	values := []any{
		nil, "", "plain", `"quoted" \back\slash`, "<script>&amp;</script>", "\n\r\t\b\f\x00\x01\x1f\x7f",
		"é ü 中文 😀", "\u2028\u2029", "bad \xff\xfe utf-8 \xc3", string([]byte{0xe2, 0x80}),
		int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, 1.5, -2.25, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-100,
		[]byte{}, []byte{1}, []byte{1, 2}, []byte{1, 2, 3}, []byte("binary\x00data"),
		true, false, json.Number("12345678901234567890"),
	}
	for _, key := range []string{"k", "<key>", "ключ", "a\"b"} {
		for _, v := range values {
			b, err := json.Marshal(map[string]any{key: v})
			is.NoErr(err)
			if got, want := encodedSize(key, v), len(b)-1; got != want { // the object's opening brace is not the value's
				t.Errorf("encodedSize(%q, %#v) = %d, want %d (%s)", key, v, got, want, b)
			}
			b, err = json.Marshal(Row{key: v}) // a REAL with a fraction or an exponent
			is.NoErr(err)
			if got, want := rowValueSize(key, v), len(b)-1; got != want {
				t.Errorf("rowValueSize(%q, %#v) = %d, want %d (%s)", key, v, got, want, b)
			}
		}
	}
}

// TestBudgetHintIsBoundedByPreparation shows that the hint of
// query_budget_exceeded (the plan's full scans, from compiling the
// statement once more) is left out when the statement alone took half the
// hint's budget to prepare: a statement long to plan is not planned twice.
func TestBudgetHintIsBoundedByPreparation(t *testing.T) {
	is := is.New(t)
	s, _, p := boundedStore(t, nil)
	ctx := context.Background()
	err := p.readSchema(ctx, func(c *conn, sc *schema) error {
		q := &queryRun{s: s, ctx: ctx, c: c, sc: sc, req: QueryRequest{SQL: `SELECT * FROM items`}, hintBudget: time.Minute}
		quick := q.budgetError().Error()
		is.True(strings.Contains(quick, "the plan scans items in full")) // prepared quickly: hinted
		q.prepared = time.Minute / 2
		slow := q.budgetError().Error()
		is.True(!strings.Contains(slow, "the plan scans")) // prepared slowly: compiled once only
		is.True(strings.Contains(slow, "narrow the query"))
		return nil
	})
	is.NoErr(err)
}
