package projectdata

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// Group commit carries the idempotent answer and the change log of each
// write in the write's own savepoint: these tests queue keyed writes so
// that they run in one group, make one member (or the COMMIT) fail, and
// check that every stored answer has its effect and every effect its
// answer, and that the change ids a follower sees have no gap and no
// change that did not commit.

// groupTest is a Store with project acme, table t (id INTEGER PRIMARY KEY,
// v TEXT UNIQUE), the change log on and its background pruning held off,
// and a follower of the log started before any row was written.
type groupTest struct {
	s       *Store
	p       *project
	commits atomic.Int64
	feed    chan Change
}

func newGroupTest(t *testing.T) *groupTest {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	s, err := Open(t.TempDir(), &Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	// No background prune: it would queue writes of its own.
	s.feeds.pruneMu.Lock()
	s.feeds.pruned["acme"] = now.Add(time.Hour)
	s.feeds.pruneMu.Unlock()
	if _, _, err := s.CreateTable(ctx, "acme", TableDef{Name: "t", Columns: []ColumnDef{{Name: "v", Unique: true}}}); err != nil {
		t.Fatal(err)
	}
	pctx, release, err := s.Pin(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	p, _ := s.pinned(pctx, "acme")
	p.idempotency.prunedAt = now
	g := &groupTest{s: s, p: p, feed: make(chan Change, 1000)}
	p.writer.db.CommitHook(func() bool { g.commits.Add(1); return true })
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for c, err := range s.Changes(fctx, "acme", 1) { // after the table's schema change
			if err != nil {
				t.Error(err)
				return
			}
			g.feed <- c
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	return g
}

// keyed is a write of a group: an idempotent Insert of one row v under
// key, or (key empty) a raw write fn, or a raw bulk change (writeBulk).
type keyed struct {
	key, v string
	fn     func(c *conn) error
	bulk   func(c *conn) error
}

// queue runs the writes as one group: it holds the writer while it
// submits them in order, then lets it go; it returns each outcome and the
// ids each insert returned.
func (g *groupTest) queue(t *testing.T, writes []keyed) ([]error, [][]any) {
	t.Helper()
	g.p.wsem <- struct{}{}
	errs := make([]error, len(writes))
	ids := make([][]any, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() {
			if w.fn != nil {
				errs[i] = g.p.write(context.Background(), w.fn)
				return
			}
			if w.bulk != nil {
				errs[i] = g.p.writeBulk(context.Background(), w.bulk)
				return
			}
			var res InsertResult
			res, errs[i] = g.s.Insert(WithIdempotencyKey(context.Background(), w.key), "acme", "t", []Row{{"v": w.v}})
			ids[i] = res.InsertedIDs
		})
		waitQueued(g.p, i+1) // queue in order
	}
	g.commits.Store(0)
	<-g.p.wsem
	wg.Wait()
	return errs, ids
}

// insertKeyed inserts v under key, reporting whether the answer was a
// replay.
func (g *groupTest) insertKeyed(key, v string) (ids []any, replayed bool, err error) {
	ctx := WithIdempotency(context.Background(), Idempotency{Key: key, OnReplay: func() { replayed = true }})
	res, err := g.s.Insert(ctx, "acme", "t", []Row{{"v": v}})
	return res.InsertedIDs, replayed, err
}

// rows returns the table's rows as id → v.
func (g *groupTest) rows(t *testing.T) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for r, err := range g.s.Rows(context.Background(), "acme", "t", ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[r["id"].(int64)] = r["v"].(string)
	}
	return out
}

// answers counts the stored idempotent answers.
func (g *groupTest) answers(t *testing.T) int {
	t.Helper()
	var n int
	err := g.p.read(context.Background(), func(c *conn) error {
		_, err := c.queryRow(`SELECT count(*) FROM _pd_idempotency`, nil, func(st *sqlite3.Stmt) error {
			n = st.ColumnInt(0)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// followed returns the changes the follower received until the one with
// id last: each must follow the previous one without a gap.
func (g *groupTest) followed(t *testing.T, last int64) map[int64]string {
	t.Helper()
	got := map[int64]string{}
	want := int64(2)
	for want <= last {
		c := <-g.feed
		if c.ID != want {
			t.Fatalf("the follower got change %d, want %d", c.ID, want)
		}
		if c.Op != ChangeInsert {
			t.Fatalf("change %d is a %s", c.ID, c.Op)
		}
		got[c.Key.(int64)] = c.Row["v"].(string)
		want++
	}
	select {
	case c := <-g.feed:
		t.Fatalf("an extra change %d", c.ID)
	default:
	}
	return got
}

func TestGroupCommitWithIdempotencyAndChangeLog(t *testing.T) {
	t.Run("AFailingMemberLeavesNoChangeAndTheOthersTheirAnswers", func(t *testing.T) {
		is := is.New(t)
		g := newGroupTest(t)
		errs, ids := g.queue(t, []keyed{
			{key: "k1", v: "a"},
			{key: "k2", v: "a"}, // a duplicate of a, in the same transaction
			{key: "k3", v: "b"},
			{key: "k4", v: "c"},
		})
		is.NoErr(errs[0])
		is.Equal(ErrorCode(errs[1]), ErrUniqueViolation)
		is.NoErr(errs[2])
		is.NoErr(errs[3])
		is.Equal(g.commits.Load(), int64(2)) // the group, then k2's stored error
		is.Equal(g.answers(t), 4)
		rows := g.rows(t)
		is.Equal(rows, map[int64]string{1: "a", 2: "b", 3: "c"})
		is.Equal(g.followed(t, 4), rows) // changes 2..4, k2's rolled back

		// Every retry replays its answer and changes nothing.
		for i, w := range []keyed{{key: "k1", v: "a"}, {key: "k2", v: "a"}, {key: "k3", v: "b"}, {key: "k4", v: "c"}} {
			got, replayed, err := g.insertKeyed(w.key, w.v)
			is.True(replayed)
			is.Equal(ErrorCode(err), ErrorCode(errs[i]))
			is.Equal(fmt.Sprint(got), fmt.Sprint(ids[i]))
		}
		is.Equal(g.rows(t), rows)
		is.Equal(g.followed(t, 1), map[int64]string{}) // nothing new
	})
	t.Run("ATransactionLostByOneMemberStoresNoAnswerForTheOthers", func(t *testing.T) {
		is := is.New(t)
		g := newGroupTest(t)
		lost := func(c *conn) error { // fails as an I/O error does: SQLite rolls the transaction back
			if err := c.exec(`INSERT INTO t (v) VALUES ('x')`); err != nil {
				return err
			}
			if err := c.exec(`ROLLBACK`); err != nil {
				return err
			}
			return errorf(ErrInvalidRequest, "a failure that rolled the transaction back")
		}
		errs, _ := g.queue(t, []keyed{{key: "k1", v: "a"}, {fn: lost}, {key: "k3", v: "b"}})
		is.True(errs[0] != nil)                   // lost with the transaction…
		is.Equal(ErrorCode(errs[0]), ErrInternal) // …a failure of the service, not k1's own answer
		is.Equal(ErrorCode(errs[1]), ErrInvalidRequest)
		is.NoErr(errs[2]) // in a new transaction
		is.Equal(g.answers(t), 1)
		is.Equal(g.rows(t), map[int64]string{1: "b"})

		ids, replayed, err := g.insertKeyed("k1", "a") // the retry runs
		is.NoErr(err)
		is.True(!replayed)
		is.Equal(fmt.Sprint(ids), "[2]")
		is.Equal(g.followed(t, 3), map[int64]string{1: "b", 2: "a"})
	})
	t.Run("ACommitThatFailsStoresNoAnswerAndNoChange", func(t *testing.T) {
		is := is.New(t)
		g := newGroupTest(t)
		var fail atomic.Bool
		fail.Store(true)
		g.p.writer.db.CommitHook(func() bool { return !fail.Swap(false) })
		errs, _ := g.queue(t, []keyed{{key: "k1", v: "a"}, {key: "k2", v: "a"}, {key: "k3", v: "b"}})
		is.Equal(ErrorCode(errs[0]), ErrInternal)
		is.Equal(ErrorCode(errs[1]), ErrUniqueViolation) // its own failure: stored, in a transaction of its own
		is.Equal(ErrorCode(errs[2]), ErrInternal)
		is.Equal(g.answers(t), 1)
		is.Equal(len(g.rows(t)), 0)

		for _, w := range []keyed{{key: "k1", v: "a"}, {key: "k3", v: "b"}} { // retries run
			_, replayed, err := g.insertKeyed(w.key, w.v)
			is.NoErr(err)
			is.True(!replayed)
		}
		_, replayed, err := g.insertKeyed("k2", "a")
		is.True(replayed)
		is.Equal(ErrorCode(err), ErrUniqueViolation)
		is.Equal(g.followed(t, 3), map[int64]string{1: "a", 2: "b"})
	})
}

// TestAGroupReadsTheRegistryVersionOnce: the writes of one group share
// the registry version read by the first (see schemaFor); the next group
// reads it again, and after a schema change reads the new one.
func TestAGroupReadsTheRegistryVersionOnce(t *testing.T) {
	is := is.New(t)
	g := newGroupTest(t)
	versionReads := func() int {
		st, ok := g.p.writer.stmts[registryVersionSQL]
		if !ok { // not read on the writer yet
			return 0
		}
		return st.Status(sqlite3.STMTSTATUS_RUN, true)
	}
	versionReads()
	errs, _ := g.queue(t, []keyed{{key: "k1", v: "a"}, {key: "k2", v: "b"}, {key: "k3", v: "c"}, {key: "k4", v: "d"}})
	for _, err := range errs {
		is.NoErr(err)
	}
	is.Equal(g.commits.Load(), int64(1)) // one group
	is.Equal(versionReads(), 1)

	errs, _ = g.queue(t, []keyed{{key: "k5", v: "e"}, {key: "k6", v: "f"}})
	is.NoErr(errs[0])
	is.NoErr(errs[1])
	is.Equal(versionReads(), 1)

	// A schema change (writeSchema, alone) raises the version; the next
	// write reads the new one and sees the new column. (The statement that
	// reads it is prepared again after the change, which SQLite counts as
	// a second run.)
	_, err := g.s.AddColumn(context.Background(), "acme", "t", ColumnDef{Name: "w"})
	is.NoErr(err)
	_, err = g.s.Insert(context.Background(), "acme", "t", []Row{{"v": "g", "w": "x"}})
	is.NoErr(err)
	versionReads()
	errs, _ = g.queue(t, []keyed{{key: "k7", v: "h"}, {key: "k8", v: "i"}, {key: "k9", v: "j"}})
	for _, err := range errs {
		is.NoErr(err)
	}
	is.Equal(versionReads(), 1)
}

// TestAReadReadsTheRegistryVersionOnce: the registry version of a read
// transaction is read once, however often its reads ask for the registry.
func TestAReadReadsTheRegistryVersionOnce(t *testing.T) {
	is := is.New(t)
	g := newGroupTest(t)
	for range 3 { // a new read transaction, then parked ones
		err := g.p.readSchema(context.Background(), func(c *conn, _ *schema) error {
			runs := func() int {
				if st, ok := c.stmts[registryVersionSQL]; ok {
					return st.Status(sqlite3.STMTSTATUS_RUN, false)
				}
				return 0
			}
			before := runs()
			for range 2 {
				if _, err := g.p.schemaFor(c); err != nil {
					return err
				}
			}
			is.Equal(runs(), before)
			return nil
		})
		is.NoErr(err)
	}
}
