package projectdata

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// trapSQL overflows SQLite's stack, once likeBomb allowed it a pattern
// longer than MaxLikePattern: no input reaches this, which is why the tests
// call it on a connection of their own making.
const trapSQL = `SELECT ? LIKE ?`

// likeBomb lets c match patterns of any length and runs one whose matching
// overflows SQLite's stack. A reader's like is the port of likefuncs.go,
// in Go, whose stack grows: the pragma, which no query can run, puts
// SQLite's own back.
func likeBomb(c *conn) error {
	c.db.Limit(sqlite3.LIMIT_LIKE_PATTERN_LENGTH, 1_000_000)
	if err := c.exec(`PRAGMA case_sensitive_like = OFF`); err != nil {
		return err
	}
	return c.exec(trapSQL, strings.Repeat("a", 30000), strings.Repeat("%a", 10000)+"%b")
}

// TestTrappedWriterReopensTheProject traps the writer in each way a write
// runs (alone, single, in a group), and in a point read, and checks that
// the trap fails the writes that shared its transaction with server_busy,
// that the project goes on writing, opened anew, and that nothing of the
// failed writes was stored.
func TestTrappedWriterReopensTheProject(t *testing.T) {
	ctx := context.Background()
	defer func(v bool) { verifyChangeLog = v }(verifyChangeLog)
	verifyChangeLog = false // the writes insert with SQL of their own, outside the change log
	for _, how := range []string{"Alone", "Single", "Group", "PointRead"} {
		t.Run(how, func(t *testing.T) {
			is := is.New(t)
			var opts *Options
			if how == "PointRead" {
				// Without the change log's prune, whose point read, on
				// the writer then, could find the writer busy with
				// this one's and open the point-read connection.
				opts = &Options{changeLogOff: true}
			}
			s := itemsStore(t, opts)
			_, err := s.Insert(ctx, "acme", "items", []Row{{"name": "kept"}})
			is.NoErr(err)
			p, err := s.acquire(ctx, "acme")
			is.NoErr(err)
			released := false
			defer func() {
				if !released {
					s.release(p) // a failed check must not leave Close waiting
				}
			}()
			insert := func(c *conn) error {
				return c.exec(`INSERT INTO items (name) VALUES ('lost')`)
			}
			switch how {
			case "Alone":
				err = p.writeAlone(ctx, func(c *conn) error {
					is.NoErr(insert(c))
					return likeBomb(c)
				})
				is.Equal(ErrorCode(err), ErrServerBusy)
			case "Single":
				err = p.write(ctx, func(c *conn) error {
					is.NoErr(insert(c))
					return likeBomb(c)
				})
				is.Equal(ErrorCode(err), ErrServerBusy)
			case "Group":
				// Holding the writer, queue three writes: the one that
				// takes it runs them as one group, the trap second.
				p.wsem <- struct{}{}
				var wg sync.WaitGroup
				errs := make([]error, 3)
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[i] = p.write(ctx, func(c *conn) error {
							is.NoErr(insert(c))
							if i == 1 {
								return likeBomb(c)
							}
							return nil
						})
					}()
					for queued(p) < i+1 {
						time.Sleep(time.Millisecond)
					}
				}
				<-p.wsem
				wg.Wait()
				for _, err := range errs {
					is.Equal(ErrorCode(err), ErrServerBusy)
				}
			case "PointRead":
				// Before the point-read connection is opened, point reads
				// run on the writer.
				err = p.readPoint(ctx, likeBomb)
				is.Equal(ErrorCode(err), ErrServerBusy)
				is.True(p.point == nil)
			}
			is.True(p.faulted.Load())
			err = p.write(ctx, insert) // the faulted project fails fast
			is.Equal(ErrorCode(err), ErrServerBusy)
			ran, err := p.tryWrite(ctx, insert) // so does bookkeeping (last_used_at), without a call into the writer
			is.True(!ran)
			is.NoErr(err)
			s.release(p)
			released = true

			_, err = s.Insert(ctx, "acme", "items", []Row{{"name": "after"}})
			is.NoErr(err)
			list, err := s.ListRecords(ctx, "acme", "items", ListOptions{})
			is.NoErr(err)
			var names []string
			for _, r := range list.Rows {
				names = append(names, r["name"].(string))
			}
			is.Equal(names, []string{"kept", "after"})
			is.Equal(*list.Total, int64(2))
		})
	}
}

// queued returns how many writes wait in p's queue.
func queued(p *project) int {
	p.wq.mu.Lock()
	defer p.wq.mu.Unlock()
	return len(p.wq.pending)
}

// TestGroupThatFailsToBeginAcknowledgesNothing: when the writer fails in
// the BEGIN of a group (here, while it waits for a lock another connection
// holds, in its busy handler), none of the group's writes is acknowledged
// as done, the writes taken after the group get an answer too, and the
// project writes on. A trap fails them with server_busy and reopens the
// project; another panic fails them, goes on in the runner, and leaves
// the writer free.
func TestGroupThatFailsToBeginAcknowledgesNothing(t *testing.T) {
	ctx := context.Background()
	defer func(v bool) { verifyChangeLog = v }(verifyChangeLog)
	verifyChangeLog = false // the writes insert with SQL of their own, outside the change log
	for _, how := range []string{"Trap", "Panic"} {
		t.Run(how, func(t *testing.T) {
			is := is.New(t)
			s := itemsStore(t, nil)
			p, err := s.acquire(ctx, "acme")
			is.NoErr(err)
			defer s.release(p)
			other, err := openConn(p.dbPath(), false, time.Second)
			is.NoErr(err)
			defer other.close()
			is.NoErr(other.exec(`BEGIN IMMEDIATE`)) // the writer's BEGIN waits, in its busy handler
			is.NoErr(p.writer.db.BusyHandler(func(context.Context, int) bool {
				if how == "Trap" {
					var none []int
					return none[len(none)] == 0 // a runtime error, raised inside SQLite's BEGIN
				}
				panic("the busy handler failed")
			}))

			// Holding the writer, queue two writes and a write alone: the
			// one that takes the writer runs the two as a group, which
			// fails to begin, and the write alone, queued, fails with it.
			p.wsem <- struct{}{}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			panics := 0
			var mu sync.Mutex
			for i := range errs {
				wg.Go(func() {
					defer func() {
						if v := recover(); v != nil {
							mu.Lock()
							panics++
							mu.Unlock()
							errs[i] = errors.New("panicked")
						}
					}()
					insert := func(c *conn) error { return c.exec(`INSERT INTO items (name) VALUES ('lost')`) }
					if i == 2 {
						errs[i] = p.writeAlone(ctx, insert)
						return
					}
					errs[i] = p.write(ctx, insert)
				})
				for queued(p) < i+1 {
					time.Sleep(time.Millisecond)
				}
			}
			<-p.wsem
			wg.Wait()
			for _, err := range errs {
				is.True(err != nil) // nothing acknowledged
			}
			if how == "Trap" {
				is.True(p.faulted.Load())
				for _, err := range errs {
					is.Equal(ErrorCode(err), ErrServerBusy)
				}
			} else {
				is.Equal(panics, 1) // the runner's
			}
			is.NoErr(other.exec(`ROLLBACK`))
			if how == "Panic" {
				is.NoErr(p.writer.db.BusyTimeout(time.Second))
				is.NoErr(p.write(ctx, func(c *conn) error { return c.exec(`INSERT INTO items (name) VALUES ('after')`) })) // the writer is free
			}
			s.release(p)
			_, err = s.Insert(ctx, "acme", "items", []Row{{"name": "later"}})
			is.NoErr(err)
			p, err = s.acquire(ctx, "acme") // for the deferred release
			is.NoErr(err)
			list, err := s.ListRecords(ctx, "acme", "items", ListOptions{Where: Where{{Column: "name", Op: WhereEq, Value: "lost"}}})
			is.NoErr(err)
			is.Equal(len(list.Rows), 0)
		})
	}
}
