package projectdata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestSchemaChangesUnderLoad changes the schema of a table, from a second
// Store on the same folder, while the first inserts, bulk-updates, lists,
// queries, exports and follows the change feed. Every request must succeed
// or fail with a code of its own (never internal_error), every row keep
// its values in their columns, and every change-feed image name the
// columns of one schema.
func TestSchemaChangesUnderLoad(t *testing.T) {
	is := is.New(t)
	a, dir := pdtest.Open(t, nil)
	b, err := projectdata.Open(dir, nil)
	is.NoErr(err)
	defer b.Close()
	_, _, err = a.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = a.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{
		{Name: "a", Type: "INTEGER"}, {Name: "b"}, {Name: "e"},
	}})
	is.NoErr(err)

	rounds := 200
	switch {
	case raceEnabled:
		rounds = 5
	case testing.Short():
		rounds = 40
	}
	var (
		mu       sync.Mutex
		failures []string
	)
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf("%s: %v (%s)", what, err, projectdata.ErrorCode(err)))
		}
	}
	var loadCtx context.Context
	check := func(what string, err error) {
		if err != nil && projectdata.ErrorCode(err) == projectdata.ErrInternal && loadCtx.Err() == nil {
			fail(what, err)
		}
	}

	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var seq atomic.Int64
	inserted := sync.Map{} // id → a
	for _, s := range []*projectdata.Store{a, b} {
		wg.Go(func() { // inserts
			for loadCtx.Err() == nil {
				n := seq.Add(1)
				res, err := s.Insert(loadCtx, "acme", "t", []projectdata.Row{{"a": n, "b": fmt.Sprint("v", n)}})
				check("insert", err)
				if err == nil {
					inserted.Store(fmt.Sprint(res.InsertedIDs[0]), n)
				}
			}
		})
	}
	wg.Go(func() { // a table deleted and made anew
		for loadCtx.Err() == nil {
			_, err := a.Insert(loadCtx, "acme", "u", []projectdata.Row{{"x": 1}, {"x": 2}})
			check("insert u", err)
			_, err = a.ListRecords(loadCtx, "acme", "u", projectdata.ListOptions{Where: projectdata.Where{{Column: "x", Op: "=", Value: 1}}, Order: "x"})
			check("list u", err)
			_, err = a.Query(loadCtx, "acme", projectdata.QueryRequest{SQL: "SELECT x FROM u"})
			check("query u", err)
			_, err = a.DeleteRecords(loadCtx, "acme", "u", projectdata.BulkDelete{Where: projectdata.Where{{Column: "x", Op: "=", Value: 2}}})
			check("delete u", err)
			_, err = a.CreateExport(loadCtx, "acme", "u", "csv")
			check("export u", err)
		}
	})
	// A row read back holds v<a> in b, whatever b is called now.
	checkRows := func(what string, body []byte, rows func(v map[string]any) []any) {
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			fail(what+" decode", err)
			return
		}
		for _, r := range rows(v) {
			row := r.(map[string]any)
			n := 0
			for _, k := range []string{"b", "B", "b2"} {
				if b, ok := row[k]; ok {
					n++
					if b != fmt.Sprint("v", row["a"]) {
						fail(what, fmt.Errorf("row %v", row))
					}
				}
			}
			if n != 1 {
				fail(what, fmt.Errorf("row %v", row))
			}
		}
	}
	rowsOf := func(v map[string]any) []any {
		rows, _ := v["rows"].([]any)
		return rows
	}
	wg.Go(func() { // the JSON paths of the HTTP routes
		for loadCtx.Err() == nil {
			n := seq.Add(1)
			res, err := a.InsertJSON(loadCtx, "acme", "t", strings.NewReader(fmt.Sprintf(`[{"a":%d,"b":"v%d"}]`, n, n)))
			check("insert json", err)
			if err == nil {
				inserted.Store(fmt.Sprint(res.InsertedIDs[0]), n)
				body, err := a.AppendRecordJSON(loadCtx, nil, "acme", "t", res.InsertedIDs[0])
				check("record json", err)
				if err == nil {
					checkRows("record json", body, func(v map[string]any) []any { return []any{v["row"]} })
				}
			}
			body, err := a.AppendRecordListJSON(loadCtx, nil, "acme", "t", projectdata.ListOptions{Where: projectdata.Where{{Column: "a", Op: ">", Value: 0}}, Order: "-a", Limit: 20})
			check("list json", err)
			if err == nil {
				checkRows("list json", body, rowsOf)
			}
			body, err = a.AppendQueryJSON(loadCtx, nil, "acme", projectdata.QueryRequest{SQL: "SELECT * FROM t ORDER BY id DESC", Limit: 20})
			check("query json", err)
			if err == nil {
				checkRows("query json", body, rowsOf)
			}
		}
	})
	wg.Go(func() { // bulk updates
		for loadCtx.Err() == nil {
			_, err := a.UpdateRecords(loadCtx, "acme", "t", projectdata.BulkUpdate{
				Data:  projectdata.Row{"e": nil},
				Where: projectdata.Where{{Column: "a", Op: "<", Value: 5}},
			})
			check("bulk update", err)
		}
	})
	wg.Go(func() { // lists with where, order and cursor
		for loadCtx.Err() == nil {
			opts := projectdata.ListOptions{Where: projectdata.Where{{Column: "a", Op: ">", Value: 0}}, Order: "-a", Limit: 7}
			for range 3 {
				page, err := a.ListRecords(loadCtx, "acme", "t", opts)
				check("list", err)
				if err != nil || page.NextCursor == "" {
					break
				}
				opts.After = page.NextCursor
			}
		}
	})
	wg.Go(func() { // queries
		for loadCtx.Err() == nil {
			_, err := a.Query(loadCtx, "acme", projectdata.QueryRequest{SQL: "SELECT * FROM t WHERE a > ? ORDER BY id DESC", Args: []any{1}, Limit: 20})
			check("query", err)
			_, err = a.Query(loadCtx, "acme", projectdata.QueryRequest{SQL: "SELECT a, b FROM t ORDER BY id DESC", Limit: 20})
			check("query b", err)
		}
	})
	wg.Go(func() { // exports
		for loadCtx.Err() == nil {
			_, err := a.CreateExport(loadCtx, "acme", "t", "csv")
			check("export", err)
		}
	})
	var images []projectdata.Change
	wg.Go(func() { // the change feed
		for c, err := range a.Changes(loadCtx, "acme", 0) {
			if err != nil {
				check("changes", err)
				return
			}
			if c.Op == projectdata.ChangeInsert && c.Table == "t" || c.Op == projectdata.ChangeUpdate {
				images = append(images, c)
			}
		}
	})

	// The schema changes, from the second Store.
	ddl := func(what string, err error) {
		if err != nil {
			fail("ddl "+what, err)
		}
	}
	for i := range rounds {
		_, err := b.AddColumn(ctx, "acme", "t", projectdata.ColumnDef{Name: fmt.Sprint("c", i)})
		ddl("add", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", "b", projectdata.ColumnUpdate{Name: projectdata.SetTo("b2")})
		ddl("rename", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", "b2", projectdata.ColumnUpdate{Name: projectdata.SetTo("b")})
		ddl("rename back", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", fmt.Sprint("c", i), projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")})
		ddl("retype", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", "b", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](fmt.Sprint("d", i))})
		ddl("default", err)
		_, err = b.DeleteTable(ctx, "acme", "u")
		if projectdata.ErrorCode(err) != projectdata.ErrTableNotFound {
			ddl("delete table", err)
		}
		typ := projectdata.ColumnType("INTEGER")
		if i%2 == 1 {
			typ = "TEXT"
		}
		_, _, err = b.CreateTable(ctx, "acme", projectdata.TableDef{Name: "u", Columns: []projectdata.ColumnDef{{Name: "x", Type: typ, Unique: i%3 == 0}}})
		ddl("create table", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", "b", projectdata.ColumnUpdate{Name: projectdata.SetTo("B")})
		ddl("rename case", err)
		_, err = b.UpdateColumn(ctx, "acme", "t", "B", projectdata.ColumnUpdate{Name: projectdata.SetTo("b")})
		ddl("rename case back", err)
		_, err = b.CreateIndex(ctx, "acme", "t", projectdata.IndexRequest{Columns: []string{"a"}, IndexName: "ix"})
		ddl("create index", err)
		_, err = b.DropIndex(ctx, "acme", "t", "ix")
		ddl("drop index", err)
	}
	time.Sleep(100 * time.Millisecond)
	stop()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}

	pdtest.CheckRowCounts(t, dir, "acme")
	// Every acknowledged row holds its values in their columns.
	inserted.Range(func(k, v any) bool {
		row, err := a.GetRecord(ctx, "acme", "t", k.(string))
		if err != nil {
			t.Errorf("row %s: %v", k, err)
			return false
		}
		n := v.(int64)
		if fmt.Sprint(row["a"]) != fmt.Sprint(n) || row["b"] != fmt.Sprint("v", n) {
			t.Errorf("row %s: %v, want a=%d b=v%d", k, row, n, n)
			return false
		}
		return true
	})
	// Every image names the columns of one schema: b or b2, not both.
	for _, c := range images {
		if c.Table != "t" {
			continue
		}
		n := 0
		for _, k := range []string{"b", "B", "b2"} {
			if _, ok := c.Row[k]; ok {
				n++
			}
		}
		if n != 1 {
			t.Errorf("change %d: image %v", c.ID, c.Row)
			break
		}
	}
	t.Logf("%d images", len(images))
}
