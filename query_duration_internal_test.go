package projectdata

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestQueryDurationLeavesOutTheWait: duration_ms is the query's own time,
// from when it has a connection, not the wait for one: a query that waited
// a second for the project's one reader reports far less (it reported the
// wait, past its budget, with a 200).
func TestQueryDurationLeavesOutTheWait(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, &Options{MaxReadersPerProject: 1})
	const hold = time.Second
	held, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.withProject(ctx, "acme", "", func(p *project) error {
			return p.read(ctx, func(*conn) error {
				close(held)
				time.Sleep(hold)
				return nil
			})
		})
	}()
	<-held
	start := time.Now()
	res, err := s.Query(ctx, "acme", QueryRequest{SQL: "SELECT 1 AS one"})
	is.NoErr(err)
	is.NoErr(<-done)
	waited := time.Since(start)
	is.True(waited >= hold/2)                                // it did wait for the reader
	is.True(res.DurationMS < float64(hold.Milliseconds())/2) // and does not count the wait
}
