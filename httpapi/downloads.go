package httpapi

import (
	"context"
	"sync"

	"github.com/projectdata/projectdata"
)

// downloadCounts counts the export downloads each token runs
// (Options.MaxDownloadsPerToken). A download holds its connection for as
// long as its client reads, a chunk per StreamWriteTimeout at worst, and
// the server serves a bounded number of connections: without a bound, one
// token reading slowly could hold all of them, as a change stream could
// (the Store bounds those, Options.MaxChangeStreamsPerToken).
type downloadCounts struct {
	mu      sync.Mutex
	running map[tokenKey]int // tokens running none are not kept
}

// start counts a download of the caller ctx carries, or fails with
// ErrServerBusy if it runs max already. Call the returned end once the
// download is over.
func (d *downloadCounts) start(ctx context.Context, max int) (end func(), err error) {
	who := tokenKeyOf(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[who] >= max {
		return nil, errorf(projectdata.ErrServerBusy, "this token runs %d export downloads already, as many as it may at once; retry once one has ended", max)
	}
	if d.running == nil {
		d.running = make(map[tokenKey]int)
	}
	d.running[who]++
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.running[who]--; d.running[who] <= 0 {
			delete(d.running, who)
		}
	}, nil
}
