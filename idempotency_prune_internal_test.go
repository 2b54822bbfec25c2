package projectdata

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// pruneTest is a Store with project "acme", table "items" and a settable
// clock, and the project held open for the test.
type pruneTest struct {
	s   *Store
	p   *project
	clk *clock
}

func newPruneTest(t *testing.T) *pruneTest {
	t.Helper()
	clk := &clock{now: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)}
	s := itemsStore(t, &Options{Now: clk.Now, IdempotencyTTL: time.Hour, changeLogOff: true})
	p, err := s.acquire(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.release(p) })
	return &pruneTest{s: s, p: p, clk: clk}
}

// seed stores n answers with keys prefix0.., expiring at expires, behind
// the operations' back (one transaction).
func (pt *pruneTest) seed(t *testing.T, prefix string, n int, expires time.Time) {
	t.Helper()
	err := pt.p.write(context.Background(), func(c *conn) error {
		return c.exec(`WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?)
			INSERT INTO _pd_idempotency (token_id, key, fingerprint, result, compressed, expires_at)
			SELECT 0, ? || n, x'00', '[]', 0, ? FROM i`, n, prefix, expires.UnixMilli())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// keys returns the stored keys in id order.
func (pt *pruneTest) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	err := pt.p.read(context.Background(), func(c *conn) error {
		return c.query(`SELECT key FROM _pd_idempotency ORDER BY id`, nil, func(st *sqlite3.Stmt) error {
			keys = append(keys, st.ColumnText(0))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// prune runs the pruning a keyed write starts, as if a minute had passed
// since the last, and waits for it.
func (pt *pruneTest) prune() {
	pt.p.idempotency.prunedAt = time.Time{}
	pt.s.pruneAnswersSoon(pt.p)
	pt.p.idempotency.pruning.Wait()
}

// insert inserts a row with an idempotency key, and waits for the prune
// it started, if any.
func (pt *pruneTest) insert(t *testing.T, key string) {
	t.Helper()
	if _, err := pt.s.Insert(WithIdempotencyKey(context.Background(), key), "acme", "items", []Row{{"qty": 1}}); err != nil {
		t.Fatal(err)
	}
	pt.p.idempotency.pruning.Wait()
}

func TestIdempotencyPruning(t *testing.T) {
	t.Run("TheOldestGoFirstAndOnePruneIsBounded", func(t *testing.T) {
		is := is.New(t)
		pt := newPruneTest(t)
		const most = pruneBatch * pruneBatches // what one prune deletes at most
		now := pt.clk.Now()
		pt.seed(t, "old", most+10, now.Add(-time.Minute))
		pt.seed(t, "live", 2, now.Add(time.Minute))
		pt.prune()
		keys := pt.keys(t)
		is.Equal(len(keys), 12)
		is.Equal(keys[0], "old"+strconv.Itoa(most)) // the 10 newest expired are left for the next prune
		pt.prune()
		is.Equal(pt.keys(t), []string{"live0", "live1"})
	})
	t.Run("APruneThatFellBehindGoesOnAtTheNextKeyedWrite", func(t *testing.T) {
		// Keyed writes faster than one prune a minute deletes must not
		// leave expired answers to pile up.
		is := is.New(t)
		pt := newPruneTest(t)
		const most = pruneBatch * pruneBatches
		now := pt.clk.Now()
		pt.seed(t, "old", 2*most+10, now.Add(-time.Minute))
		pt.prune()
		is.Equal(len(pt.keys(t)), most+10)
		insert := func(key string) { pt.insert(t, key) }
		insert("a") // within the minute: pruning was behind
		is.Equal(len(pt.keys(t)), 10+1)
		insert("b") // behind again: the last prune's batches were all full
		is.Equal(pt.keys(t), []string{"a", "b"})
		pt.seed(t, "late", 3, now.Add(-time.Minute))
		insert("c") // caught up: the next prune waits for the minute
		is.Equal(len(pt.keys(t)), 6)
	})
	t.Run("TheKeyedWriteDoesNotWaitForThePrune", func(t *testing.T) {
		is := is.New(t)
		pt := newPruneTest(t)
		pt.seed(t, "old", 10, pt.clk.Now().Add(-time.Minute))
		started, release := make(chan struct{}), make(chan struct{})
		pt.p.idempotency.beforePrune = func() { close(started); <-release }
		_, err := pt.s.Insert(WithIdempotencyKey(context.Background(), "a"), "acme", "items", []Row{{"qty": 1}})
		is.NoErr(err) // answered while its prune is held
		<-started
		is.Equal(len(pt.keys(t)), 11)
		close(release)
		pt.p.idempotency.pruning.Wait()
		is.Equal(pt.keys(t), []string{"a"})
	})
	t.Run("ALiveAnswerAheadDoesNotHoldBackTheExpiredBehindIt", func(t *testing.T) {
		is := is.New(t)
		pt := newPruneTest(t)
		now := pt.clk.Now()
		pt.seed(t, "long", 1, now.Add(time.Hour)) // stored under a longer TTL
		pt.seed(t, "old", 2*pruneBatch, now.Add(-time.Minute))
		pt.prune()
		is.Equal(pt.keys(t), []string{"long0"})
	})
	t.Run("AKeyUsedAgainAfterExpiryIsTheNewest", func(t *testing.T) {
		is := is.New(t)
		pt := newPruneTest(t)
		insert := func(key string) { pt.insert(t, key) }
		insert("k")
		insert("a")
		pt.clk.advance(30 * time.Minute)
		insert("b")
		pt.clk.advance(31 * time.Minute) // k and a expired, b live
		pt.p.idempotency.prunedAt = pt.clk.Now()
		insert("k")
		is.Equal(pt.keys(t), []string{"a", "b", "k"}) // k moved behind b: pruning in id order reaches it last
		pt.prune()
		is.Equal(pt.keys(t), []string{"b", "k"})
	})
}
