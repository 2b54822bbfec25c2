package projectdata_test

import (
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
