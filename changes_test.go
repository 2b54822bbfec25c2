package projectdata_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// changesAfter reads every change of project acme after the id after.
func changesAfter(t *testing.T, s *projectdata.Store, after int64) []projectdata.Change {
	t.Helper()
	var all []projectdata.Change
	for {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatalf("list changes after %d: %v", after, err)
		}
		all = append(all, page.Changes...)
		if len(page.Changes) == 0 {
			return all
		}
		after = page.NextAfter
	}
}

// wantChange is a change without its id, time and row.
type wantChange struct {
	table, op string
	key       any
}

func TestChangeLogEveryWritePath(t *testing.T) {
	s, _ := pdtest.NewProject(t, nil)
	var last int64
	// step runs a write and checks the changes it logged: exactly want,
	// ids following the previous ones, the row of each insert and update
	// as GetRecord reads it right after.
	step := func(t *testing.T, want []wantChange, write func() error) {
		t.Helper()
		is := is.NewRelaxed(t)
		if err := write(); err != nil {
			t.Fatal(err)
		}
		got := changesAfter(t, s, last)
		is.Equal(len(got), len(want)) // changes logged
		for i, c := range got {
			if i >= len(want) {
				break
			}
			last++
			is.Equal(c.ID, last) // ids strictly increasing, no gap
			is.Equal(wantChange{c.Table, c.Op, c.Key}, want[i])
			is.True(!c.At.IsZero())
			switch c.Op {
			case projectdata.ChangeInsert, projectdata.ChangeUpdate:
				row, err := s.GetRecord(ctx, "acme", c.Table, c.Key)
				is.NoErr(err)
				is.Equal(c.Row, row) // the row image is the stored row
			default:
				is.Equal(c.Row, nil) // no row for deletes and schema changes
			}
		}
	}
	insert := projectdata.ChangeInsert
	update := projectdata.ChangeUpdate
	del := projectdata.ChangeDelete
	schema := projectdata.ChangeSchema

	t.Run("CreateTable", func(t *testing.T) {
		step(t, []wantChange{{"items", schema, nil}}, func() error {
			_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
				{Name: "name", Unique: true}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"},
				{Name: "n", Type: "NUMERIC"}, {Name: "ok", Type: "BOOLEAN"}, {Name: "d", Type: "DATETIME"},
				{Name: "note", Default: "none"},
			}})
			return err
		})
	})
	t.Run("InsertLogsFullRowsWithDefaults", func(t *testing.T) {
		step(t, []wantChange{{"items", insert, int64(1)}, {"items", insert, int64(2)}, {"items", insert, int64(7)}}, func() error {
			_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{
				{"name": "a", "qty": 1, "price": 2, "n": "2.0", "ok": true, "d": "2026-01-02T03:04:05Z"},
				{"name": "b\n\"q\" ü", "qty": 5, "n": 1e15, "price": 1e300},
				{"id": 7, "name": "c", "note": nil, "n": 1e20},
			})
			return err
		})
	})
	t.Run("BulkUpdate", func(t *testing.T) {
		step(t, []wantChange{{"items", update, int64(1)}, {"items", update, int64(2)}}, func() error {
			_, err := s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{
				Data:  projectdata.Row{"price": 9.5, "note": "x"},
				Where: projectdata.Where{{Column: "qty", Op: ">=", Value: 1}},
			})
			return err
		})
	})
	t.Run("UpdateOne", func(t *testing.T) {
		step(t, []wantChange{{"items", update, int64(2)}}, func() error {
			_, err := s.UpdateRecord(ctx, "acme", "items", 2, projectdata.Row{"qty": 6, "note": nil})
			return err
		})
	})
	t.Run("DeleteOne", func(t *testing.T) {
		step(t, []wantChange{{"items", del, int64(1)}}, func() error {
			_, err := s.DeleteRecord(ctx, "acme", "items", "1")
			return err
		})
	})
	t.Run("FailedBatchLogsNothing", func(t *testing.T) {
		step(t, nil, func() error {
			_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "d"}, {"name": "d"}})
			pdtest.Code(t, err, projectdata.ErrUniqueViolation)
			_, err = s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{Data: projectdata.Row{"name": "same"}, AllowAll: true})
			pdtest.Code(t, err, projectdata.ErrUniqueViolation)
			return nil
		})
	})
	// An update that moves a row to another key is the old key's delete
	// and the new one's insert: a follower keyed by primary key drops the
	// old row.
	t.Run("UpdateOfTheKey", func(t *testing.T) {
		step(t, []wantChange{{"items", del, int64(7)}, {"items", insert, int64(10)}}, func() error {
			_, err := s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{
				Data:  projectdata.Row{"id": 10},
				Where: projectdata.Where{{Column: "name", Op: "=", Value: "c"}},
			})
			return err
		})
	})
	t.Run("UpdateOneOfTheKey", func(t *testing.T) {
		step(t, []wantChange{{"items", del, int64(10)}, {"items", insert, int64(11)}}, func() error {
			_, err := s.UpdateRecord(ctx, "acme", "items", 10, projectdata.Row{"id": 11})
			return err
		})
	})
	t.Run("UpdateOfTheKeyToItself", func(t *testing.T) {
		step(t, []wantChange{{"items", update, int64(2)}, {"items", update, int64(2)}}, func() error {
			_, err := s.UpdateRecord(ctx, "acme", "items", 2, projectdata.Row{"id": 2, "qty": 8})
			if err == nil {
				_, err = s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{
					Data:  projectdata.Row{"id": 2},
					Where: projectdata.Where{{Column: "id", Op: "=", Value: 2}},
				})
			}
			return err
		})
	})
	t.Run("BulkDeleteAll", func(t *testing.T) {
		step(t, []wantChange{{"items", del, int64(2)}, {"items", del, int64(11)}}, func() error {
			_, err := s.DeleteRecords(ctx, "acme", "items", projectdata.BulkDelete{AllowAll: true})
			return err
		})
	})
	t.Run("SchemaChanges", func(t *testing.T) {
		step(t, []wantChange{{"items", schema, nil}, {"items", schema, nil}, {"items", schema, nil}}, func() error {
			if _, err := s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "extra"}); err != nil {
				return err
			}
			if _, err := s.UpdateColumn(ctx, "acme", "items", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("other")}); err != nil {
				return err // a rebuild
			}
			if _, err := s.UpdateColumn(ctx, "acme", "items", "extra", projectdata.ColumnUpdate{Name: projectdata.SetTo("more")}); err != nil {
				return err
			}
			name := "Items"
			if _, err := s.UpdateTable(ctx, "acme", "items", projectdata.TableUpdate{DisplayName: projectdata.SetTo(&name)}); err != nil {
				return err // not a schema change: rows keep their shape
			}
			_, err := s.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"qty"}})
			return err // nor is an index
		})
	})
	t.Run("TextKeys", func(t *testing.T) {
		step(t, []wantChange{{"tags", schema, nil}, {"tags", insert, "x"}, {"tags", insert, "y"}}, func() error {
			_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "tags", Columns: []projectdata.ColumnDef{
				{Name: "code", Primary: true}, {Name: "label"},
			}})
			if err != nil {
				return err
			}
			_, err = s.Insert(ctx, "acme", "tags", []projectdata.Row{{"code": "x"}, {"code": "y", "label": "why"}})
			return err
		})
		step(t, []wantChange{{"tags", update, "y"}}, func() error {
			_, err := s.UpdateRecords(ctx, "acme", "tags", projectdata.BulkUpdate{Data: projectdata.Row{"label": "y2"}, Where: projectdata.Where{{Column: "code", Op: "=", Value: "y"}}})
			return err
		})
		step(t, []wantChange{{"tags", del, "x"}, {"tags", del, "y"}}, func() error {
			if _, err := s.DeleteRecord(ctx, "acme", "tags", "x"); err != nil {
				return err
			}
			_, err := s.DeleteRecords(ctx, "acme", "tags", projectdata.BulkDelete{Where: projectdata.Where{{Column: "code", Op: "!=", Value: ""}}})
			return err
		})
	})
	t.Run("DeleteTable", func(t *testing.T) {
		step(t, []wantChange{{"items", schema, nil}}, func() error {
			_, err := s.DeleteTable(ctx, "acme", "items")
			return err
		})
	})
}

// seedItems creates table items (name, qty) in project acme with n rows.
func seedItems(t testing.TB, s *projectdata.Store, n int) {
	t.Helper()
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	insertItems(t, s, 0, n)
}

// insertItems inserts rows from..to-1 into items, 10,000 per insert.
func insertItems(t testing.TB, s *projectdata.Store, from, to int) {
	t.Helper()
	for start := from; start < to; start += 10000 {
		rows := make([]projectdata.Row, 0, 10000)
		for i := start; i < min(to, start+10000); i++ {
			rows = append(rows, projectdata.Row{"name": fmt.Sprint("item-", i), "qty": i})
		}
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChangeLogBulkUpdateStreamsCompletely(t *testing.T) {
	is := is.New(t)
	n := 100_000
	if testing.Short() {
		n = 3_500 // several chunks of 1,000 rows
	}
	s, _ := pdtest.NewProject(t, nil)
	seedItems(t, s, n)
	from, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		seen := map[int64]bool{}
		next := from + 1
		for c, err := range s.Changes(ctx, "acme", from) {
			if err != nil {
				got <- err
				return
			}
			switch {
			case c.ID != next:
				got <- fmt.Errorf("change %d after %d", c.ID, next-1)
				return
			case c.Op != projectdata.ChangeUpdate || c.Row["qty"] != int64(-1) || seen[c.Key.(int64)]:
				got <- fmt.Errorf("change %d: %s of %v, row %v", c.ID, c.Op, c.Key, c.Row)
				return
			}
			seen[c.Key.(int64)] = true
			next++
			if len(seen) == n {
				got <- nil
				return
			}
		}
	}()
	res, err := s.UpdateRecords(ctx, "acme", "items", projectdata.BulkUpdate{Data: projectdata.Row{"qty": -1}, AllowAll: true})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(n))
	is.NoErr(<-got) // every row's update arrived once, in order
}

func TestFollowChanges(t *testing.T) {
	t.Run("PassedNamesThePointPastOtherTables", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		seedItems(t, s, 0)
		from, err := s.LastChangeID(ctx, "acme") // the table's creation
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "other"})
		is.NoErr(err)
		_, err = s.Insert(ctx, "acme", "other", []projectdata.Row{{}, {}})
		is.NoErr(err)
		last, err := s.LastChangeID(ctx, "acme")
		is.NoErr(err)
		fctx, cancel := context.WithTimeout(ctx, time.Minute) // only against hanging
		defer cancel()
		passed := make(chan int64, 1)
		q := projectdata.ChangeQuery{After: from, Tables: []string{"items"}, Passed: func(after int64) {
			passed <- after
			cancel()
		}}
		for _, err := range s.FollowChanges(fctx, "acme", q) {
			is.NoErr(err)
			t.Fatal("no change of items was made")
		}
		select {
		case after := <-passed:
			is.Equal(after, last)
		default:
			t.Fatal("Passed was not called")
		}
	})
	t.Run("ResumedFollowerSeesEveryChangeOnce", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		seedItems(t, s, 0)
		const total = 600
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range total / 3 {
				insertItems(t, s, 3*i, 3*i+3)
			}
		}()
		var after int64 = 1 // the table's schema change
		seen := map[int64]int{}
		for round := 0; len(seen) < total; round++ {
			// Each round follows for a while, then stops, as a killed
			// client does, and the next resumes from the last id.
			ctx, cancel := context.WithCancel(ctx)
			k := 0
			for c, err := range s.Changes(ctx, "acme", after) {
				is.NoErr(err)
				is.Equal(c.ID, after+1) // in order, no gap
				after = c.ID
				seen[c.Key.(int64)]++
				if k++; k == 37 || len(seen) == total {
					break
				}
			}
			cancel()
		}
		<-done
		for key, n := range seen {
			if n != 1 {
				t.Fatalf("row %d seen %d times", key, n)
			}
		}
		is.Equal(len(seen), total)
	})
	t.Run("RolledBackChangesNeverAppear", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		seedItems(t, s, 3)
		from, err := s.LastChangeID(ctx, "acme")
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "uniq", Columns: []projectdata.ColumnDef{{Name: "v", Unique: true}}})
		is.NoErr(err)
		_, err = s.Insert(ctx, "acme", "uniq", []projectdata.Row{{"v": "a"}, {"v": "b"}, {"v": "a"}})
		pdtest.Code(t, err, projectdata.ErrUniqueViolation)
		_, err = s.Insert(ctx, "acme", "uniq", []projectdata.Row{{"v": "c"}})
		is.NoErr(err)
		var got []wantChange
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for c, err := range s.Changes(ctx, "acme", from) {
			is.NoErr(err)
			is.Equal(c.ID, from+int64(len(got))+1)
			got = append(got, wantChange{c.Table, c.Op, c.Key})
			if len(got) == 2 {
				break
			}
		}
		is.Equal(got, []wantChange{{"uniq", projectdata.ChangeSchema, nil}, {"uniq", projectdata.ChangeInsert, int64(1)}})
	})
	t.Run("TablesFilter", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		seedItems(t, s, 2)
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "other"})
		is.NoErr(err)
		_, err = s.Insert(ctx, "acme", "other", []projectdata.Row{{}})
		is.NoErr(err)
		insertItems(t, s, 2, 3)
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{Tables: []string{"OTHER"}})
		is.NoErr(err)
		is.Equal(len(page.Changes), 2) // the schema change and the insert of table other
		is.Equal(page.NextAfter, int64(6))
		var ids []int64
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for c, err := range s.FollowChanges(ctx, "acme", projectdata.ChangeQuery{Tables: []string{"items"}}) {
			is.NoErr(err)
			ids = append(ids, c.ID)
			if len(ids) == 4 {
				break
			}
		}
		is.Equal(ids, []int64{1, 2, 3, 6})
		_, err = s.ListChanges(ctx, "acme", projectdata.ChangeQuery{Tables: []string{"bad name"}})
		pdtest.Code(t, err, projectdata.ErrInvalidTableName)
	})
	t.Run("CloseEndsFollowers", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		ended := make(chan error)
		go func() {
			for _, err := range s.Changes(ctx, "acme", 0) {
				ended <- err
				return
			}
		}()
		is.NoErr(s.Close())
		pdtest.Code(t, <-ended, projectdata.ErrStoreClosed)
	})
	t.Run("RevokedTokenEndsItsFollowers", func(t *testing.T) {
		is := is.New(t)
		s, dir := pdtest.Open(t, nil)
		_, _, err := s.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		seedItems(t, s, 0)
		follow := func(s *projectdata.Store) (int64, <-chan error) {
			cctx := pdtest.As(t, s, projectdata.RoleRead)
			c, _ := projectdata.CallerFrom(cctx)
			cctx, cancel := context.WithTimeout(cctx, time.Minute)
			t.Cleanup(cancel)
			last, err := s.LastChangeID(cctx, "acme")
			is.NoErr(err)
			ended := make(chan error, 1)
			go func() {
				for ch, err := range s.FollowChanges(cctx, "acme", projectdata.ChangeQuery{After: last}) {
					if err == nil {
						err = fmt.Errorf("change %d (%v) reached a revoked token", ch.ID, ch.Row)
					}
					ended <- err
					return
				}
				ended <- fmt.Errorf("the follower ended without an error")
			}()
			return c.TokenID, ended
		}
		// By this Store: the next change is not delivered.
		id, ended := follow(s)
		_, err = s.RevokeToken(ctx, "acme", id)
		is.NoErr(err)
		insertItems(t, s, 0, 1)
		pdtest.Code(t, <-ended, projectdata.ErrInvalidToken)
		// By another Store on the folder: an idle follower ends too.
		id, ended = follow(s)
		other, err := projectdata.Open(dir, nil)
		is.NoErr(err)
		defer other.Close()
		_, err = other.RevokeToken(ctx, "acme", id)
		is.NoErr(err)
		pdtest.Code(t, <-ended, projectdata.ErrInvalidToken)
	})
	t.Run("ExpiredTokenEndsItsFollowers", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, _ := pdtest.NewProject(t, &projectdata.Options{Now: clock.Now})
		exp := clock.Now().Add(time.Hour)
		tok, err := s.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead, ExpiresAt: &exp})
		is.NoErr(err)
		c, err := s.Authenticate(ctx, "acme", tok.Token)
		is.NoErr(err)
		cctx, cancel := context.WithTimeout(projectdata.WithCaller(ctx, c), time.Minute)
		defer cancel()
		clock.Advance(time.Hour)
		var got error
		for _, err := range s.FollowChanges(cctx, "acme", projectdata.ChangeQuery{}) {
			got = err
			break
		}
		pdtest.Code(t, got, projectdata.ErrInvalidToken) // not the minute's timeout
	})
	t.Run("ReadRoleMayFollow", func(t *testing.T) {
		s, _ := pdtest.NewProject(t, nil)
		ctx := pdtest.As(t, s, projectdata.RoleRead)
		_, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{})
		is.New(t).NoErr(err)
		_, err = s.ListChanges(ctx, "other", projectdata.ChangeQuery{})
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
	})
}

// TestChangePagesKeepToTheResultBudget checks that a page of the change
// log stops before its changes' JSON passes Options.QueryMaxBytes, as a
// list's rows do (but for its first change, which comes whole: the log
// must go on), that paging on from next_after reads every change once, and
// that a follower at the head of the log gets them all.
func TestChangePagesKeepToTheResultBudget(t *testing.T) {
	is := is.New(t)
	const budget = 64 << 10
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryMaxBytes: budget})
	createTable(t, s, "docs", projectdata.ColumnDef{Name: "body"})
	// A follower at the head of the log when the inserts commit.
	follow, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	followed := make(chan int)
	go func() {
		got := 0
		for c, err := range s.Changes(follow, "acme", 1) {
			if err != nil {
				break
			}
			if got++; c.ID == 22 {
				break
			}
		}
		followed <- got
	}()
	rows := make([]projectdata.Row, 20)
	for i := range rows {
		rows[i] = projectdata.Row{"body": strings.Repeat(string(rune('a'+i)), 10<<10)}
	}
	_, err := s.Insert(ctx, "acme", "docs", rows) // one log record of 20 changes
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "docs", []projectdata.Row{{"body": strings.Repeat("z", 2*budget)}})
	is.NoErr(err)

	page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: 1, Limit: 1000})
	is.NoErr(err)
	n := len(page.Changes)
	is.True(n > 1 && n < 20)
	enc, err := json.Marshal(page.Changes)
	is.NoErr(err)
	is.True(len(enc) <= budget)
	is.Equal(page.NextAfter, page.Changes[n-1].ID)

	all := changesAfter(t, s, 1)
	is.Equal(len(all), 21)
	for i, c := range all {
		is.Equal(c.ID, int64(i+2)) // in order, each once
	}
	page, err = s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: 21, Limit: 1000})
	is.NoErr(err)
	is.Equal(len(page.Changes), 1) // larger than the budget: alone, whole
	is.Equal(len(page.Changes[0].Row["body"].(string)), 2*budget)

	is.Equal(<-followed, 21) // every change once (TestFeedReadsOnPastTheBudget: without waiting for a poll)
}

// TestChangePagesEndingOnARecord pages through a log of one-change
// records (single-row inserts) with a limit of 2: each page after the
// first starts just after the last change of a record, and must still hold
// two changes, so that paging reads every change once. A query that also
// read the record ending at after (it holds no change after it) would
// give that record a place of the page's LIMIT, and next_after would then
// jump past changes to the end of the log.
func TestChangePagesEndingOnARecord(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "t", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	for i := range 5 {
		_, err := s.Insert(ctx, "acme", "t", []projectdata.Row{{"n": i}})
		is.NoErr(err)
	}
	var ids []int64
	for after := int64(1); ; { // after the table's creation
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 2})
		is.NoErr(err)
		if len(page.Changes) == 0 {
			break
		}
		is.True(len(page.Changes) == 2 || after == 5) // full but the last
		for _, c := range page.Changes {
			ids = append(ids, c.ID)
		}
		after = page.NextAfter
	}
	is.Equal(ids, []int64{2, 3, 4, 5, 6})
}
