package projectdata_test

import (
	"testing"

	"github.com/projectdata/projectdata"
)

// crashFeed follows the change log of the crash test's table events across
// kill points: the ids must go on from the last one read with no gap, and
// the inserts and deletes logged must be exactly the rows stored.
type crashFeed struct {
	last int64
	live map[int64]bool // keys of the rows the log says exist
}

// check reads the log after the last id read and checks it against the
// rows stored (rows, COUNT(*) of events).
func (f *crashFeed) check(t *testing.T, k int, s *projectdata.Store, rows int) {
	t.Helper()
	if f.live == nil {
		f.live = map[int64]bool{}
	}
	for {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: f.last, Limit: 1000})
		if err != nil {
			t.Fatalf("kill point %d: the feed does not resume after change %d: %v", k, f.last, err)
		}
		for _, c := range page.Changes {
			if c.ID != f.last+1 {
				t.Fatalf("kill point %d: change %d follows change %d", k, c.ID, f.last)
			}
			f.last = c.ID
			switch key, _ := c.Key.(int64); c.Op {
			case projectdata.ChangeInsert:
				if f.live[key] {
					t.Fatalf("kill point %d: change %d inserts row %d twice", k, c.ID, key)
				}
				f.live[key] = true
			case projectdata.ChangeDelete:
				if !f.live[key] {
					t.Fatalf("kill point %d: change %d deletes row %d, never inserted", k, c.ID, key)
				}
				delete(f.live, key)
			}
		}
		if len(page.Changes) < 1000 {
			break
		}
	}
	if len(f.live) != rows {
		t.Fatalf("kill point %d: the log holds %d rows, the table %d", k, len(f.live), rows)
	}
}
