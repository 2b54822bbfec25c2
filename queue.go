package projectdata

import (
	"context"
	"sync/atomic"
	"time"
)

// queueStats counts the operations that had to wait for a connection of
// their project (the writer, or a reader slot), and how long they waited in
// all. Its fields are updated atomically.
type queueStats struct {
	waits atomic.Int64
	nanos atomic.Int64
}

// takeSlot takes a slot of sem (the writer's, or one of the readers'),
// waiting until one is free or ctx ends. A wait is counted in the Store's
// Stats; taking a free slot is not.
func (p *project) takeSlot(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	defer func() {
		p.store.queue.waits.Add(1)
		p.store.queue.nanos.Add(int64(time.Since(start)))
	}()
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
