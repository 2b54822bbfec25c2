package projectdata

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestExportsLeaveTheReadersToReads: exports running at once, as many as
// Options.MaxExportsPerProject, hold none of the project's readers, so the
// project's reads still run however long the exports take (they held a
// reader each: a few large exports from one token made every other read of
// the project wait, then fail with server_busy). An export more waits for
// one to end, then fails with ErrServerBusy (503, Retry-After), which is
// not stored under an idempotency key.
func TestExportsLeaveTheReadersToReads(t *testing.T) {
	ctx := context.Background()
	const exports = 2
	s := itemsStore(t, &Options{MaxReadersPerProject: exports, MaxExportsPerProject: exports, QueueTimeout: 100 * time.Millisecond})
	if _, err := s.Insert(ctx, "acme", "items", []Row{{"name": "a", "qty": 1}, {"name": "b", "qty": 2}}); err != nil {
		t.Fatal(err)
	}
	// Exports that run until hold closes, as a large table's would.
	hold, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for range exports {
		wg.Go(func() {
			err := s.withProject(ctx, "acme", OpCreateExport, func(p *project) error {
				return p.exportRead(ctx, func(*conn) error {
					started <- struct{}{}
					<-hold
					return nil
				})
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	for range exports {
		<-started
	}

	if l, err := s.ListRecords(ctx, "acme", "items", ListOptions{}); err != nil || len(l.Rows) != 2 {
		t.Errorf("a list while the exports run: %d rows, %v", len(l.Rows), err)
	}
	if _, err := s.Query(ctx, "acme", QueryRequest{SQL: "SELECT count(*) FROM items"}); err != nil {
		t.Errorf("a query while the exports run: %v", err)
	}
	if _, err := s.GetRecord(ctx, "acme", "items", 1); err != nil {
		t.Errorf("a read by key while the exports run: %v", err)
	}
	if _, err := s.CreateExport(ctx, "acme", "items", "csv"); ErrorCode(err) != ErrServerBusy {
		t.Errorf("an export past the bound: %v, want server_busy", err)
	}
	if _, err := s.CreateProjectExport(ctx, "acme"); ErrorCode(err) != ErrServerBusy {
		t.Errorf("a project export past the bound: %v, want server_busy", err)
	}
	// server_busy is not an answer to store (CONTRACT §13): the retry of
	// a keyed export refused so runs.
	kctx := WithIdempotencyKey(ctx, "busy")
	if _, err := s.CreateExport(kctx, "acme", "items", "csv"); ErrorCode(err) != ErrServerBusy {
		t.Errorf("a keyed export past the bound: %v, want server_busy", err)
	}

	close(hold)
	wg.Wait()
	if e, err := s.CreateExport(ctx, "acme", "items", "csv"); err != nil || e.RowCount != 2 {
		t.Errorf("an export once the others ended: %d rows, %v", e.RowCount, err)
	}
	if e, err := s.CreateExport(kctx, "acme", "items", "csv"); err != nil || e.RowCount != 2 {
		t.Errorf("the keyed export's retry once the others ended: %d rows, %v", e.RowCount, err)
	}
	if _, err := s.CreateProjectExport(ctx, "acme"); err != nil {
		t.Errorf("a project export once the others ended: %v", err)
	}
}
