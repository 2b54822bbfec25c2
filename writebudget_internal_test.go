package projectdata

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestWriteBudgetOfOneWriteOnly: a bulk change over its write budget,
// queued between writes that group commit takes with it, fails alone:
// the groups before and after it commit, with their answers and changes,
// and its spent budget interrupts none of the writes after it.
func TestWriteBudgetOfOneWriteOnly(t *testing.T) {
	is := is.New(t)
	g := newGroupTest(t)
	g.s.opts.WriteTimeout = 20 * time.Millisecond
	slow := func(c *conn) error { // a million rows: seconds
		return c.exec(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000000)
			INSERT INTO t (v) SELECT 'bulk ' || x FROM c`)
	}
	errs, _ := g.queue(t, []keyed{
		{key: "k1", v: "a"},
		{key: "k2", v: "b"},
		{bulk: slow},
		{key: "k3", v: "c"},
		{key: "k4", v: "d"},
	})
	is.NoErr(errs[0])
	is.NoErr(errs[1])
	is.Equal(ErrorCode(errs[2]), ErrQueryBudgetExceeded)
	is.True(strings.Contains(errs[2].Error(), "write budget of 20ms"))
	is.NoErr(errs[3])
	is.NoErr(errs[4])
	is.Equal(g.commits.Load(), int64(2)) // the group before, the group after; not the bulk change
	is.Equal(g.answers(t), 4)
	rows := g.rows(t)
	is.Equal(rows, map[int64]string{1: "a", 2: "b", 3: "c", 4: "d"})
	is.Equal(g.followed(t, 5), rows)
}
