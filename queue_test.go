package projectdata_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestStatsCountQueueWaits(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{MaxReadersPerProject: 1, QueryTimeout: 200 * time.Millisecond})
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t"})
	is.NoErr(err)
	is.Equal(s.Stats().QueueWaits, int64(0)) // free connections are taken without a wait

	runaway := projectdata.QueryRequest{SQL: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`}
	var wg sync.WaitGroup
	wg.Go(func() { s.Query(ctx, "acme", runaway) })
	for s.Stats().Operations == 0 { // the first query is under way
		time.Sleep(time.Millisecond)
	}
	// Both hold the project's one reader for the whole budget, so whichever
	// comes second waits for it.
	wg.Go(func() { s.Query(ctx, "acme", runaway) })
	wg.Wait()
	st := s.Stats()
	is.Equal(st.QueueWaits, int64(1))
	is.True(st.QueueWaitTime > 0)
}

func TestClosedReportsClose(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.Open(t, nil)
	is.True(!s.Closed())
	is.NoErr(s.Close())
	is.True(s.Closed())
}

// TestWriteLockHeldElsewhereIsServerBusy: a write that waits past
// Options.BusyTimeout for the database's write lock, which another process
// (or another Store on the folder) holds, is ErrServerBusy, for a retry,
// whether it writes alone, in a group or in a schema change; not an
// internal error.
func TestWriteLockHeldElsewhereIsServerBusy(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, &projectdata.Options{BusyTimeout: 50 * time.Millisecond})
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	createTable(t, s, "t", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `BEGIN IMMEDIATE`)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 3 { // in one group or in turn
		wg.Go(func() { _, errs[i] = s.Insert(ctx, "acme", "t", []projectdata.Row{{"n": i}}) })
	}
	wg.Go(func() {
		_, errs[3] = s.DeleteRecords(ctx, "acme", "t", projectdata.BulkDelete{Where: where(t, `{"n":1}`)})
	})
	wg.Wait()
	_, err = s.AddColumn(ctx, "acme", "t", projectdata.ColumnDef{Name: "m"})
	errs = append(errs, err)
	for _, err := range errs {
		pdtest.Code(t, err, projectdata.ErrServerBusy)
	}
	pdtest.Exec(t, raw, `COMMIT`)
	_, err = s.Insert(ctx, "acme", "t", []projectdata.Row{{"n": 1}})
	is.NoErr(err)
}

// TestReadersGoFirstToTheTokenHoldingFewest: a token that keeps every
// reader of a project busy with slow queries, and many more waiting, does
// not make another token's queries wait behind all of its own: each gets
// the next reader that comes free, rather than ErrServerBusy.
func TestReadersGoFirstToTheTokenHoldingFewest(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{MaxReadersPerProject: 2, QueryTimeout: 300 * time.Millisecond})
	greedy, other := pdtest.As(t, s, projectdata.RoleRead), pdtest.As(t, s, projectdata.RoleRead)

	runaway := projectdata.QueryRequest{SQL: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`}
	stop, cancel := context.WithCancel(greedy)
	var wg sync.WaitGroup
	for range 30 { // 2 run, 28 wait; each waits up to QueueTimeout (2 s)
		wg.Go(func() {
			for stop.Err() == nil {
				s.Query(stop, "acme", runaway)
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	for s.Stats().QueueWaits < 30 { // the greedy token's line is long
		time.Sleep(10 * time.Millisecond)
	}
	for range 5 {
		_, err := s.Query(other, "acme", projectdata.QueryRequest{SQL: `SELECT 1`})
		is.NoErr(err)
	}
}
