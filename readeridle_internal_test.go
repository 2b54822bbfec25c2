package projectdata

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// Readers idle past the reader idle time are closed, their memory given
// back, all but the most recently used; the project reads on.
func TestIdleReadersAreClosed(t *testing.T) {
	is := is.New(t)
	// No checkpointer: its connection would come and go in the count.
	s, err := Open(t.TempDir(), &Options{readerIdle: 50 * time.Millisecond, ReplicatorCheckpoints: true})
	is.NoErr(err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, _, err = s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	p, err := s.acquire(ctx, "acme")
	is.NoErr(err)
	t.Cleanup(func() { s.release(p) })
	conns := func() int64 {
		s.heap.mu.Lock()
		defer s.heap.mu.Unlock()
		return s.heap.conns
	}
	before := conns()

	// Three reads at once: three readers.
	var entered, wg sync.WaitGroup
	entered.Add(3)
	release := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			is.NoErr(p.read(ctx, func(c *conn) error {
				entered.Done()
				<-release
				return nil
			}))
		})
	}
	entered.Wait()
	close(release)
	wg.Wait()
	p.rmu.Lock()
	is.Equal(len(p.readers), 3)
	latest := p.readers[2]
	p.rmu.Unlock()
	is.Equal(conns(), before+3)

	deadline := time.Now().Add(10 * time.Second)
	for {
		p.rmu.Lock()
		n, trimming := len(p.readers), p.trimming
		p.rmu.Unlock()
		// The trim closes the readers it took out after leaving the
		// pool's lock.
		open := conns()
		if n == 1 && !trimming && open == before+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d readers still pooled, %d connections open (%d before the reads)", n, open, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.rmu.Lock()
	is.True(p.readers[0] == latest) // the most recently used stays, the others are closed
	p.rmu.Unlock()

	is.NoErr(p.read(ctx, func(c *conn) error { return c.exec(`SELECT 1`) }))
}
