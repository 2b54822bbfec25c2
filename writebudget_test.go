package projectdata_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// fillSlowTable fills table "big" of project acme: 1,000 short rows, then
// 1,000 long ones, every v a run of 'a' ending in 'b'. slowWhere matches
// every row, the short ones at once and each long one after some 200,000
// steps of like: the first chunk of a bulk change (1,000 rows) changes
// its rows in some 20 ms, the second takes seconds.
func fillSlowTable(t *testing.T, s *projectdata.Store) {
	t.Helper()
	createTable(t, s, "big", projectdata.ColumnDef{Name: "v"}, projectdata.ColumnDef{Name: "n", Type: projectdata.TypeInteger})
	rows := make([]projectdata.Row, 0, 2000)
	for i := range 2000 {
		v := strings.Repeat("a", 300) + "b"
		if i >= 1000 {
			v = strings.Repeat("a", 1000) + "b"
		}
		rows = append(rows, projectdata.Row{"v": v, "n": i})
	}
	if _, err := s.Insert(ctx, "acme", "big", rows); err != nil {
		t.Fatal(err)
	}
}

// slowWhere: see fillSlowTable.
var slowWhere = projectdata.Where{{Column: "v", Op: projectdata.WhereLike, Value: "%" + strings.Repeat("a", 300) + "b"}}

// bigRows returns the n of every row of table big, by id.
func bigRows(t *testing.T, s *projectdata.Store) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for r, err := range s.Rows(ctx, "acme", "big", projectdata.ListOptions{Columns: []string{"id", "n"}}) {
		if err != nil {
			t.Fatal(err)
		}
		out[r["id"].(int64)] = r["n"].(int64)
	}
	return out
}

// TestBulkChangePastWriteBudget: a bulk update or delete whose where
// cannot finish within Options.WriteTimeout fails with
// ErrQueryBudgetExceeded naming the budget, after its first chunks had
// changed rows: every row is as before, the change log has nothing new,
// the kept row counts are right, and the next writes (a row write, and a
// bulk change that fits) run.
func TestBulkChangePastWriteBudget(t *testing.T) {
	s, dir := pdtest.Open(t, &projectdata.Options{WriteTimeout: 50 * time.Millisecond})
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	fillSlowTable(t, s)
	before := bigRows(t, s)
	for _, change := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"Update", func(ctx context.Context) error {
			_, err := s.UpdateRecords(ctx, "acme", "big", projectdata.BulkUpdate{Data: projectdata.Row{"n": -1}, Where: slowWhere})
			return err
		}},
		{"Delete", func(ctx context.Context) error {
			_, err := s.DeleteRecords(ctx, "acme", "big", projectdata.BulkDelete{Where: slowWhere})
			return err
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			is := is.New(t)
			last, err := s.LastChangeID(ctx, "acme")
			is.NoErr(err)

			err = change.run(ctx)
			pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
			is.True(strings.Contains(err.Error(), `table "big"`))
			is.True(strings.Contains(err.Error(), "write budget of 50ms"))
			is.True(strings.Contains(err.Error(), "add an index"))

			is.Equal(bigRows(t, s), before) // nothing half-written
			now, err := s.LastChangeID(ctx, "acme")
			is.NoErr(err)
			is.Equal(now, last) // nothing logged
			pdtest.CheckRowCounts(t, dir, "acme")

			// The writer is free, and its interrupt no longer the spent
			// budget's: a row write and a quick bulk change run.
			_, err = s.Insert(ctx, "acme", "big", []projectdata.Row{{"v": "x", "n": 0}})
			is.NoErr(err)
			del, err := s.DeleteRecords(ctx, "acme", "big", projectdata.BulkDelete{Where: projectdata.Where{{Column: "v", Op: projectdata.WhereEq, Value: "x"}}})
			is.NoErr(err)
			is.Equal(del.AffectedRows, int64(1))
		})
	}
}

// TestBulkChangeEndedByItsCallerIsNotOverBudget: a bulk change whose
// caller's context ends before the write budget fails with the context's
// error, not ErrQueryBudgetExceeded.
func TestBulkChangeEndedByItsCallerIsNotOverBudget(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil) // the default budget, 30s
	fillSlowTable(t, s)
	rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := s.UpdateRecords(rctx, "acme", "big", projectdata.BulkUpdate{Data: projectdata.Row{"n": -1}, Where: slowWhere})
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(projectdata.ErrorCode(err) != projectdata.ErrQueryBudgetExceeded)
}

// TestWriteBudgetIsTheBulkChanges: with a budget of a nanosecond, every
// bulk change over the table runs out, but schema changes (an index, a
// column, a rebuild of the table) and the row writes do not: they have no
// budget.
func TestWriteBudgetIsTheBulkChanges(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{WriteTimeout: time.Nanosecond})
	createTable(t, s, "t", projectdata.ColumnDef{Name: "v"})
	rows := make([]projectdata.Row, 3000)
	for i := range rows {
		rows[i] = projectdata.Row{"v": "v" + strconv.Itoa(i)}
	}
	_, err := s.Insert(ctx, "acme", "t", rows)
	is.NoErr(err)
	_, err = s.UpdateRecord(ctx, "acme", "t", 1, projectdata.Row{"v": "one"})
	is.NoErr(err)
	_, err = s.DeleteRecord(ctx, "acme", "t", 2)
	is.NoErr(err)

	_, err = s.CreateIndex(ctx, "acme", "t", projectdata.IndexRequest{Columns: []string{"v"}})
	is.NoErr(err)
	_, err = s.AddColumn(ctx, "acme", "t", projectdata.ColumnDef{Name: "w", Default: "d"})
	is.NoErr(err)
	_, err = s.UpdateColumn(ctx, "acme", "t", "v", projectdata.ColumnUpdate{Unique: projectdata.SetTo(true)}) // rebuilds the table
	is.NoErr(err)

	all := projectdata.Where{{Column: "id", Op: projectdata.WhereGt, Value: 0}}
	_, err = s.UpdateRecords(ctx, "acme", "t", projectdata.BulkUpdate{Data: projectdata.Row{"w": "x"}, Where: all})
	pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	_, err = s.DeleteRecords(ctx, "acme", "t", projectdata.BulkDelete{Where: all})
	pdtest.Code(t, err, projectdata.ErrQueryBudgetExceeded)
	is.Equal(total(t, s, "t"), int64(2999))
}

// TestBulkChangePastWriteBudgetReplays: the refusal of a keyed bulk change
// is its answer, stored as any other 422 is: a retry with the key replays
// it without running the change again (and holding the writer again).
func TestBulkChangePastWriteBudgetReplays(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, &projectdata.Options{WriteTimeout: 50 * time.Millisecond})
	fillSlowTable(t, s)
	var replays int
	kctx := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: "k", OnReplay: func() { replays++ }})
	upd := projectdata.BulkUpdate{Data: projectdata.Row{"n": -1}, Where: slowWhere}
	_, first := s.UpdateRecords(kctx, "acme", "big", upd)
	pdtest.Code(t, first, projectdata.ErrQueryBudgetExceeded)
	is.Equal(replays, 0)
	_, again := s.UpdateRecords(kctx, "acme", "big", upd)
	pdtest.Code(t, again, projectdata.ErrQueryBudgetExceeded)
	is.Equal(replays, 1)
	is.Equal(again.Error(), first.Error())
}

// TestBulkChangesOfOneTokenDoNotHoldAnother: bulk changes run one at a
// time, each up to Options.WriteTimeout, with the writes queued meanwhile
// looked at again after each: a token that keeps many slow ones queued
// does not make another token's writes wait behind all of them. That
// token's row writes wait for the bulk change running at most, and its
// bulk changes go before the greedy token's next.
func TestBulkChangesOfOneTokenDoNotHoldAnother(t *testing.T) {
	s, _ := pdtest.Open(t, &projectdata.Options{WriteTimeout: 300 * time.Millisecond})
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	fillSlowTable(t, s)
	greedy, other := pdtest.As(t, s, projectdata.RoleWrite), pdtest.As(t, s, projectdata.RoleWrite)

	stop, cancel := context.WithCancel(greedy)
	var wg sync.WaitGroup
	for range 20 { // each runs 300 ms; the writer is theirs for 6 s
		wg.Go(func() {
			for stop.Err() == nil {
				s.UpdateRecords(stop, "acme", "big", projectdata.BulkUpdate{Data: projectdata.Row{"n": -1}, Where: slowWhere})
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	for s.Stats().QueueWaits < 20 { // the greedy token's line is long
		time.Sleep(10 * time.Millisecond)
	}
	is := is.New(t)
	for i := range 3 {
		_, err := s.Insert(other, "acme", "big", []projectdata.Row{{"v": "x", "n": -2 - i}})
		is.NoErr(err)
		_, err = s.UpdateRecords(other, "acme", "big", projectdata.BulkUpdate{
			Data:  projectdata.Row{"v": "y"},
			Where: projectdata.Where{{Column: "n", Op: projectdata.WhereEq, Value: -2 - i}},
		})
		is.NoErr(err)
	}
}
