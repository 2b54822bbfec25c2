package projectdata_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// randomWrites runs writes of every kind on table f of project acme until
// stop closes: inserts (some failing on a unique name, rolled back inside
// the commit they share with others), updates of one row (some moving it
// to another key), bulk updates and deletes, deletes of one row, and
// columns added. Failures the writes expect are ignored; others are sent to
// errs.
func randomWrites(s *projectdata.Store, seed int64, stop <-chan struct{}, errs chan<- error) {
	r := rand.New(rand.NewSource(seed))
	for n := 0; ; n++ {
		select {
		case <-stop:
			errs <- nil
			return
		default:
		}
		var err error
		switch r.Intn(10) {
		case 0, 1:
			var batch []projectdata.Row
			for j := range 1 + r.Intn(30) {
				batch = append(batch, projectdata.Row{"name": fmt.Sprintf("w%d-%d-%d", seed, n, j), "qty": r.Intn(5), "price": float64(r.Intn(8)) / 4})
			}
			if r.Intn(3) == 0 {
				batch = append(batch, projectdata.Row{"name": "dup"}) // fails once "dup" exists
			}
			_, err = s.Insert(ctx, "acme", "f", batch)
		case 2:
			_, err = s.UpdateRecord(ctx, "acme", "f", int64(1+r.Intn(300)), projectdata.Row{"qty": r.Intn(5), "price": nil})
		case 3:
			_, err = s.UpdateRecord(ctx, "acme", "f", int64(1+r.Intn(300)), projectdata.Row{"id": int64(100000 + r.Intn(100000))})
		case 4:
			_, err = s.UpdateRecords(ctx, "acme", "f", projectdata.BulkUpdate{
				Data:  projectdata.Row{"price": float64(r.Intn(8)) / 8},
				Where: projectdata.Where{{Column: "qty", Op: "=", Value: r.Intn(5)}},
			})
		case 5:
			_, err = s.DeleteRecords(ctx, "acme", "f", projectdata.BulkDelete{
				Where: projectdata.Where{{Column: "qty", Op: "=", Value: r.Intn(5)}, {Column: "price", Op: "<", Value: 0.5}},
			})
		case 6:
			_, err = s.DeleteRecord(ctx, "acme", "f", int64(1+r.Intn(300)))
		case 7:
			if r.Intn(5) == 0 {
				_, err = s.AddColumn(ctx, "acme", "f", projectdata.ColumnDef{Name: fmt.Sprintf("c%d_%d", seed, n), Default: fmt.Sprint("d", n)})
			}
		case 8: // a bulk update of every row, cut short by its context now and then
			cctx, cancel := context.WithTimeout(ctx, time.Duration(r.Intn(3000))*time.Microsecond)
			_, err = s.UpdateRecords(cctx, "acme", "f", projectdata.BulkUpdate{Data: projectdata.Row{"price": float64(n)}, AllowAll: true})
			cancel()
			if cctx.Err() != nil {
				err = nil // done or not, all or nothing (the replay checks)
			}
		case 9: // schema changes that rebuild the table, then fail on its rows
			col, upd := "qty", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(false)} // qty holds NULLs
			if r.Intn(2) == 0 {
				col, upd = "tag", projectdata.ColumnUpdate{Unique: projectdata.SetTo(true)} // tag holds duplicates
			}
			if _, err = s.UpdateColumn(ctx, "acme", "f", col, upd); err == nil {
				err = errors.New("a schema change that should have failed succeeded")
			}
		}
		switch projectdata.ErrorCode(err) {
		case "", projectdata.ErrUniqueViolation, projectdata.ErrRecordNotFound, projectdata.ErrInvalidColumnChange, projectdata.ErrNotNullViolation:
		default:
			errs <- err
			return
		}
	}
}

// feedTable creates a table of randomWrites in project acme, with two rows
// that no write changes but bulk updates of price: qty NULL, tag 0.
func feedTable(t *testing.T, s *projectdata.Store, name string) {
	t.Helper()
	createTable(t, s, name,
		projectdata.ColumnDef{Name: "name", Unique: true},
		projectdata.ColumnDef{Name: "qty", Type: "INTEGER"},
		projectdata.ColumnDef{Name: "price", Type: "REAL"},
		projectdata.ColumnDef{Name: "tag", Type: "INTEGER", Default: 0},
	)
	if _, err := s.Insert(ctx, "acme", name, []projectdata.Row{{"id": 1000000, "name": "dup"}, {"id": 1000001, "name": "dup2"}}); err != nil {
		t.Fatal(err)
	}
}

// TestChangeFeedReplaysTheTable follows the change log while concurrent
// writers of every kind commit (some failing inside shared commits), then
// checks that the followed changes, and the pages of the log read with
// random limits, are the same changes, with ids 1..last without a gap, and
// that replaying them gives the table's rows.
func TestChangeFeedReplaysTheTable(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxBytes: 8 << 10})
	feedTable(t, s, "f")

	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		followed []projectdata.Change
		stopped  = make(chan error, 1)
	)
	go func() {
		for c, err := range s.Changes(followCtx, "acme", 0) {
			if err != nil {
				stopped <- err
				return
			}
			mu.Lock()
			followed = append(followed, c)
			mu.Unlock()
		}
		stopped <- nil
	}()

	writers := 3
	d := 300 * time.Millisecond
	if testing.Short() {
		d = 100 * time.Millisecond
	}
	stop := make(chan struct{})
	errs := make(chan error, writers)
	for w := range writers {
		go randomWrites(s, int64(w), stop, errs)
	}
	time.Sleep(d)
	close(stop)
	for range writers {
		is.NoErr(<-errs)
	}
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	t.Logf("%d changes", last)

	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(followed)
		done := n > 0 && followed[n-1].ID >= last
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("followed %d changes, want up to id %d", n, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	is.NoErr(<-stopped)

	// Pages of the log, with random limits, hold the same changes.
	r := rand.New(rand.NewSource(7))
	var paged []projectdata.Change
	for after := int64(0); ; {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1 + r.Intn(300)})
		is.NoErr(err)
		paged = append(paged, page.Changes...)
		b, err := json.Marshal(page.Changes)
		is.NoErr(err)
		if len(b) > 8<<10 && len(page.Changes) > 1 {
			t.Fatalf("a page of %d changes takes %d bytes, over the result budget", len(page.Changes), len(b))
		}
		if len(page.Changes) == 0 {
			is.Equal(page.NextAfter, last)
			break
		}
		is.Equal(page.NextAfter, page.Changes[len(page.Changes)-1].ID)
		after = page.NextAfter
	}
	is.Equal(len(followed), int(last))
	is.Equal(len(paged), int(last))
	for i := range followed {
		is.Equal(followed[i].ID, int64(i+1)) // no gap, no duplicate, in order
		a, err := json.Marshal(followed[i])
		is.NoErr(err)
		b, err := json.Marshal(paged[i])
		is.NoErr(err)
		is.Equal(string(a), string(b))
	}

	// Replaying the changes gives the table. Each schema change adds a
	// column: every image after it has that column more.
	replay := map[any]projectdata.Row{}
	columns := 4 // and the key; the table's schema change is change 1
	for _, c := range followed {
		if c.Table != "f" {
			t.Fatalf("change %d of table %q", c.ID, c.Table)
		}
		switch c.Op {
		case projectdata.ChangeSchema:
			columns++
		case projectdata.ChangeInsert, projectdata.ChangeUpdate:
			if len(c.Row) != columns {
				t.Fatalf("change %d (%s) has an image of %d columns; the table has %d: %v", c.ID, c.Op, len(c.Row), columns, c.Row)
			}
			is.Equal(c.Key, c.Row["id"])
			if c.Op == projectdata.ChangeInsert && replay[c.Key] != nil {
				t.Fatalf("change %d inserts key %v, which exists", c.ID, c.Key)
			}
			if c.Op == projectdata.ChangeUpdate && replay[c.Key] == nil {
				t.Fatalf("change %d updates key %v, which does not exist", c.ID, c.Key)
			}
			replay[c.Key] = c.Row
		case projectdata.ChangeDelete:
			if replay[c.Key] == nil {
				t.Fatalf("change %d deletes key %v, which does not exist", c.ID, c.Key)
			}
			delete(replay, c.Key)
		}
	}
	n := 0
	for row, err := range s.Rows(ctx, "acme", "f", projectdata.ListOptions{Limit: 1000}) {
		is.NoErr(err)
		n++
		want := replay[row["id"]]
		if want == nil {
			t.Fatalf("row %v is in no change", row)
		}
		for col, v := range row {
			if _, ok := want[col]; !ok {
				// Added after the row's last change: the column's default.
				_, n, _ := strings.Cut(col, "_")
				want[col] = "d" + n
			}
			if want[col] != v {
				t.Fatalf("row %v: column %s is %v in the replayed row %v", row["id"], col, want[col], want)
			}
		}
	}
	is.Equal(n, len(replay))
}

// TestChangeFeedOfSomeTables follows and pages the log of one table, named
// in another case, while writers change two tables: the changes are those
// of the whole log of that table, each once, in order.
func TestChangeFeedOfSomeTables(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxBytes: 4 << 10})
	for _, name := range []string{"f", "g"} {
		feedTable(t, s, name)
	}
	follow := func(after int64, out *[]projectdata.Change, mu *sync.Mutex, fctx context.Context, stopped chan<- error) {
		for c, err := range s.FollowChanges(fctx, "acme", projectdata.ChangeQuery{After: after, Tables: []string{"F"}}) {
			if err != nil {
				stopped <- err
				return
			}
			mu.Lock()
			*out = append(*out, c)
			mu.Unlock()
		}
		stopped <- nil
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu                  sync.Mutex
		fromStart, fromLate []projectdata.Change
		stopped             = make(chan error, 2)
	)
	go follow(0, &fromStart, &mu, fctx, stopped)

	stop := make(chan struct{})
	errs := make(chan error, 2)
	go randomWrites(s, 1, stop, errs)
	go func() { // table g: inserts and deletes
		r := rand.New(rand.NewSource(9))
		for n := 0; ; n++ {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			var err error
			if n%3 == 2 {
				_, err = s.DeleteRecords(ctx, "acme", "g", projectdata.BulkDelete{Where: projectdata.Where{{Column: "qty", Op: "=", Value: r.Intn(4)}}})
			} else {
				_, err = s.Insert(ctx, "acme", "g", []projectdata.Row{{"name": fmt.Sprint("g", n), "qty": r.Intn(4)}})
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	late, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)
	go follow(late, &fromLate, &mu, fctx, stopped)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	for range 2 {
		is.NoErr(<-errs)
	}
	// A last change of f, which both followers wait for.
	_, err = s.Insert(ctx, "acme", "f", []projectdata.Row{{"name": "last"}})
	is.NoErr(err)
	last, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)

	var want []projectdata.Change
	for after := int64(0); ; {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1000})
		is.NoErr(err)
		if len(page.Changes) == 0 {
			break
		}
		for _, c := range page.Changes {
			if c.Table == "f" {
				want = append(want, c)
			}
		}
		after = page.NextAfter
	}
	r := rand.New(rand.NewSource(5))
	var paged []projectdata.Change
	for after := int64(0); ; {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1 + r.Intn(200), Tables: []string{"F"}})
		is.NoErr(err)
		paged = append(paged, page.Changes...)
		if len(page.Changes) == 0 {
			is.Equal(page.NextAfter, last)
			break
		}
		after = page.NextAfter
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		done := len(fromStart) > 0 && fromStart[len(fromStart)-1].ID == last && len(fromLate) > 0 && fromLate[len(fromLate)-1].ID == last
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the followers did not reach change %d", last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	for range 2 {
		is.NoErr(<-stopped)
	}
	ids := func(cs []projectdata.Change) []int64 {
		var out []int64
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	is.True(len(want) > 10)
	is.Equal(ids(paged), ids(want))
	is.Equal(ids(fromStart), ids(want))
	var wantLate []int64
	for _, id := range ids(want) {
		if id > late {
			wantLate = append(wantLate, id)
		}
	}
	is.Equal(ids(fromLate), wantLate)
}
