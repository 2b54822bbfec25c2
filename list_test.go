package projectdata_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestListRecords(t *testing.T) {
	s := itemsStore(t, nil)
	var body []string
	for i := range 25 {
		body = append(body, fmt.Sprintf(`{"name":"n%c","qty":%d}`, 'a'+i%5, i%3))
	}
	_, err := s.Insert(ctx, "acme", "items", rows(t, "["+strings.Join(body, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(l projectdata.RecordList) []int64 {
		out := []int64{}
		for _, r := range l.Rows {
			out = append(out, r["id"].(int64))
		}
		return out
	}
	t.Run("DefaultsToFirstHundredByKey", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(l.Table, "items")
		is.Equal(*l.Total, int64(25))
		is.Equal(l.Limit, 100)
		is.Equal(l.Offset, 0)
		is.Equal(len(l.Rows), 25)
		is.Equal(l.Rows[0], projectdata.Row{"id": int64(1), "name": "na", "qty": int64(0), "price": nil, "code": nil, "active": nil, "seen": nil})
	})
	t.Run("Pages", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: 10, Offset: 20})
		is.NoErr(err)
		is.Equal(*l.Total, int64(25))
		is.Equal(ids(l), []int64{21, 22, 23, 24, 25})
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: 10, Offset: 30})
		is.NoErr(err)
		is.Equal(ids(l), []int64{})
		b, err := json.Marshal(l)
		is.NoErr(err)
		is.Equal(string(b), `{"table":"items","rows":[],"total":25,"limit":10,"offset":30,"next_cursor":null,"truncated":false}`)
	})
	t.Run("OrdersDescendingWithKeyTieBreak", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "-qty", Limit: 4})
		is.NoErr(err)
		is.Equal(ids(l), []int64{24, 21, 18, 15}) // qty 2, then by id, descending as the last column
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "-id", Limit: 2})
		is.NoErr(err)
		is.Equal(ids(l), []int64{25, 24})
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "NAME", Limit: 3, Offset: 4})
		is.NoErr(err)
		is.Equal(ids(l), []int64{21, 2, 7}) // na: 1 6 11 16 21, then nb
	})
	t.Run("ClampsLimit", func(t *testing.T) {
		is := is.New(t)
		for limit, want := range map[int]int{-5: 1, 1: 1, 1000: 1000, 5000: 1000} {
			l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: limit})
			is.NoErr(err)
			is.Equal(l.Limit, want)
			is.Equal(len(l.Rows), min(want, 25))
		}
	})
	refusals := []struct {
		name string
		opts projectdata.ListOptions
		code projectdata.Code
	}{
		{"NegativeOffset", projectdata.ListOptions{Offset: -1}, projectdata.ErrInvalidRequest},
		{"UnknownOrder", projectdata.ListOptions{Order: "colour"}, projectdata.ErrColumnNotFound},
		{"SQLAsOrder", projectdata.ListOptions{Order: "qty; DROP TABLE items"}, projectdata.ErrColumnNotFound},
		{"DashOnly", projectdata.ListOptions{Order: "-"}, projectdata.ErrInvalidRequest},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			_, err := s.ListRecords(ctx, "acme", "items", c.opts)
			pdtest.Code(t, err, c.code)
		})
	}
	t.Run("UnknownTable", func(t *testing.T) {
		_, err := s.ListRecords(ctx, "acme", "nope", projectdata.ListOptions{})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
}

// walkStore returns a Store whose table walk holds 2,500 rows: grp
// INTEGER and score REAL with many ties and NULLs, flag BOOLEAN, name TEXT.
// It returns the rows as inserted, with their ids.
func walkStore(t *testing.T) (*projectdata.Store, []projectdata.Row) {
	t.Helper()
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: time.Minute}) // what is tested is not time: a slow machine (-race) too
	createTable(t, s, "walk",
		projectdata.ColumnDef{Name: "grp", Type: "INTEGER"},
		projectdata.ColumnDef{Name: "score", Type: "REAL"},
		projectdata.ColumnDef{Name: "flag", Type: "BOOLEAN", NotNull: true},
		projectdata.ColumnDef{Name: "name"},
	)
	all := make([]projectdata.Row, 2500)
	for i := range all {
		r := projectdata.Row{"grp": nil, "score": nil, "flag": int64(i % 3 % 2), "name": fmt.Sprintf("r%04d", i)}
		if i%7 != 0 {
			r["grp"] = int64(i % 11)
		}
		if i%5 != 0 {
			r["score"] = float64(i%13) / 2
		}
		all[i] = r
	}
	res, err := s.Insert(ctx, "acme", "walk", all)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range res.InsertedIDs {
		all[i]["id"] = id
	}
	return s, all
}

// compareSQLite orders two values of one column as SQLite does: NULL
// first, then numbers, or text.
func compareSQLite(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if x, ok := a.(string); ok {
		return cmp.Compare(x, b.(string))
	}
	return cmp.Compare(toFloat(a), toFloat(b))
}

func toFloat(v any) float64 {
	if i, ok := v.(int64); ok {
		return float64(i)
	}
	return v.(float64)
}

func TestListWalksByCursor(t *testing.T) {
	s, all := walkStore(t)
	cases := []struct {
		order string
		terms []string // columns, "-" for descending, ending with the key (in the direction of the last column)
	}{
		{"grp,-score", []string{"grp", "-score", "-id"}},
		{"-grp,score", []string{"-grp", "score", "id"}},
		{"-score,-grp", []string{"-score", "-grp", "-id"}},
		{"", []string{"id"}},
		{"-id", []string{"-id"}},
		{"grp,score", []string{"grp", "score", "id"}}, // one row value, but where a value is NULL
		{"name", []string{"name", "id"}},
	}
	for _, c := range cases {
		t.Run("Order"+c.order, func(t *testing.T) {
			is := is.New(t)
			var want []int64
			for _, r := range all {
				if r["flag"] == int64(1) {
					want = append(want, r["id"].(int64))
				}
			}
			slices.SortFunc(want, func(x, y int64) int {
				rx, ry := all[x-1], all[y-1]
				for _, term := range c.terms {
					name, desc := strings.CutPrefix(term, "-")
					if n := compareSQLite(rx[name], ry[name]); n != 0 {
						if desc {
							return -n
						}
						return n
					}
				}
				return 0
			})
			opts := projectdata.ListOptions{Where: where(t, `{"flag":true}`), Order: c.order, Limit: 37}
			var got []int64
			pages := 0
			for {
				l, err := s.ListRecords(ctx, "acme", "walk", opts)
				is.NoErr(err)
				is.Equal(*l.Total, int64(len(want))) // the filtered total, on every page
				for _, r := range l.Rows {
					got = append(got, r["id"].(int64))
				}
				pages++
				is.True(pages <= len(want)/37+1) // the walk ends
				if l.NextCursor == "" {
					is.True(len(l.Rows) <= 37)
					break
				}
				is.Equal(len(l.Rows), 37)
				opts.After = l.NextCursor
			}
			is.Equal(pages, (len(want)+36)/37)
			is.Equal(got, want) // every row once, in order

			var iterated []int64
			for row, err := range s.Rows(ctx, "acme", "walk", projectdata.ListOptions{Where: where(t, `{"flag":true}`), Order: c.order, Limit: 100}) {
				is.NoErr(err)
				iterated = append(iterated, row["id"].(int64))
			}
			is.Equal(iterated, want)
		})
	}
	t.Run("RowsStopsWhenTheLoopBreaks", func(t *testing.T) {
		is := is.New(t)
		n := 0
		for _, err := range s.Rows(ctx, "acme", "walk", projectdata.ListOptions{Limit: 10}) {
			is.NoErr(err)
			if n++; n == 25 {
				break
			}
		}
		is.Equal(n, 25)
	})
	t.Run("RowsEndsWithTheError", func(t *testing.T) {
		is := is.New(t)
		var errs []error
		for row, err := range s.Rows(ctx, "acme", "nope", projectdata.ListOptions{}) {
			is.Equal(row, nil)
			errs = append(errs, err)
		}
		is.Equal(len(errs), 1)
		pdtest.Code(t, errs[0], projectdata.ErrTableNotFound)
	})
	t.Run("OffsetThenCursor", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "walk", projectdata.ListOptions{Order: "-grp", Offset: 100, Limit: 50})
		is.NoErr(err)
		next, err := s.ListRecords(ctx, "acme", "walk", projectdata.ListOptions{Order: "-grp", After: l.NextCursor, Limit: 50})
		is.NoErr(err)
		ref, err := s.ListRecords(ctx, "acme", "walk", projectdata.ListOptions{Order: "-grp", Offset: 150, Limit: 50})
		is.NoErr(err)
		is.Equal(next.Rows, ref.Rows)
	})
}

func TestListCursorMisuse(t *testing.T) {
	s, _ := walkStore(t)
	createTable(t, s, "other", projectdata.ColumnDef{Name: "grp", Type: "INTEGER"})
	base := projectdata.ListOptions{Where: where(t, `[{"column":"grp","op":">","value":2}]`), Order: "-score", Limit: 10}
	first, err := s.ListRecords(ctx, "acme", "walk", base)
	if err != nil {
		t.Fatal(err)
	}
	cur := first.NextCursor
	if cur == "" {
		t.Fatal("no next cursor")
	}
	flip := func(c projectdata.Cursor, i int) projectdata.Cursor {
		b := []byte(c)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return projectdata.Cursor(b)
	}
	cases := []struct {
		name  string
		table string
		edit  func(o *projectdata.ListOptions)
		code  projectdata.Code
	}{
		{"OtherTable", "other", func(o *projectdata.ListOptions) { o.Order = "-grp" }, projectdata.ErrInvalidCursor},
		{"OtherOrder", "walk", func(o *projectdata.ListOptions) { o.Order = "score" }, projectdata.ErrInvalidCursor},
		{"OtherOrderSameColumns", "walk", func(o *projectdata.ListOptions) { o.Order = "-score,grp" }, projectdata.ErrInvalidCursor},
		{"OtherWhere", "walk", func(o *projectdata.ListOptions) { o.Where = where(t, `[{"column":"grp","op":">","value":3}]`) }, projectdata.ErrInvalidCursor},
		{"NoWhere", "walk", func(o *projectdata.ListOptions) { o.Where = nil }, projectdata.ErrInvalidCursor},
		{"OtherWhereOperator", "walk", func(o *projectdata.ListOptions) { o.Where = where(t, `[{"column":"grp","op":">=","value":2}]`) }, projectdata.ErrInvalidCursor},
		{"OtherWhereColumn", "walk", func(o *projectdata.ListOptions) { o.Where = where(t, `[{"column":"score","op":">","value":2}]`) }, projectdata.ErrInvalidCursor},
		{"TamperedFirstByte", "walk", func(o *projectdata.ListOptions) { o.After = flip(cur, 0) }, projectdata.ErrInvalidCursor},
		{"TamperedValue", "walk", func(o *projectdata.ListOptions) { o.After = flip(cur, 3) }, projectdata.ErrInvalidCursor},
		{"TamperedSignature", "walk", func(o *projectdata.ListOptions) { o.After = flip(cur, len(cur)-1) }, projectdata.ErrInvalidCursor},
		{"Truncated", "walk", func(o *projectdata.ListOptions) { o.After = cur[:len(cur)-2] }, projectdata.ErrInvalidCursor},
		{"Garbage", "walk", func(o *projectdata.ListOptions) { o.After = "not a cursor!" }, projectdata.ErrInvalidCursor},
		{"Short", "walk", func(o *projectdata.ListOptions) { o.After = "AAAA" }, projectdata.ErrInvalidCursor},
		{"WithOffset", "walk", func(o *projectdata.ListOptions) { o.Offset = 5 }, projectdata.ErrInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := base
			opts.After = cur
			c.edit(&opts)
			_, err := s.ListRecords(ctx, "acme", c.table, opts)
			pdtest.Code(t, err, c.code)
		})
	}
	t.Run("SameListOtherLimitAndColumnsIsFine", func(t *testing.T) {
		is := is.New(t)
		opts := base
		opts.After, opts.Limit, opts.Columns = cur, 3, []string{"name"}
		l, err := s.ListRecords(ctx, "acme", "walk", opts)
		is.NoErr(err)
		is.Equal(len(l.Rows), 3)
		is.Equal(len(l.Rows[0]), 1)
	})
	t.Run("ValidAfterReopen", func(t *testing.T) {
		is := is.New(t)
		s2, dir := pdtest.Open(t, nil)
		_, _, err := s2.CreateProject(ctx, "acme", "")
		is.NoErr(err)
		createTable(t, s2, "t", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		_, err = s2.Insert(ctx, "acme", "t", rows(t, `[{"n":1},{"n":2},{"n":3}]`))
		is.NoErr(err)
		l, err := s2.ListRecords(ctx, "acme", "t", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		is.NoErr(s2.Close())
		s3, err := projectdata.Open(dir, nil)
		is.NoErr(err)
		defer s3.Close()
		l, err = s3.ListRecords(ctx, "acme", "t", projectdata.ListOptions{Limit: 1, After: l.NextCursor})
		is.NoErr(err)
		is.Equal(l.Rows[0]["n"], int64(2))
	})
	t.Run("OtherProject", func(t *testing.T) {
		is := is.New(t)
		// The same table, id, order and where in another project: only the
		// project's key tells the cursors apart.
		s2, _ := pdtest.NewProject(t, nil)
		createTable(t, s2, "t", projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		_, _, err := s.CreateProject(ctx, "beta", "")
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "beta", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "n", Type: "INTEGER"}}})
		is.NoErr(err)
		for _, p := range []struct {
			s    *projectdata.Store
			slug string
		}{{s2, "acme"}, {s, "beta"}} {
			_, err = p.s.Insert(ctx, p.slug, "t", rows(t, `[{"n":1},{"n":2}]`))
			is.NoErr(err)
		}
		l, err := s2.ListRecords(ctx, "acme", "t", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		_, err = s.ListRecords(ctx, "beta", "t", projectdata.ListOptions{Limit: 1, After: l.NextCursor})
		pdtest.Code(t, err, projectdata.ErrInvalidCursor)
	})
	t.Run("TableDroppedAndMadeAgain", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "other", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		_, err = s.Insert(ctx, "acme", "other", rows(t, `[{"grp":1},{"grp":2}]`))
		is.NoErr(err)
		l, err = s.ListRecords(ctx, "acme", "other", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		_, err = s.DeleteTable(ctx, "acme", "other")
		is.NoErr(err)
		createTable(t, s, "other", projectdata.ColumnDef{Name: "grp", Type: "INTEGER"})
		_, err = s.ListRecords(ctx, "acme", "other", projectdata.ListOptions{Limit: 1, After: l.NextCursor})
		pdtest.Code(t, err, projectdata.ErrInvalidCursor)
	})
}

func TestListOptions(t *testing.T) {
	s := peopleStore(t)
	names := func(l projectdata.RecordList) []string {
		out := []string{}
		for _, r := range l.Rows {
			out = append(out, r["name"].(string))
		}
		return out
	}
	t.Run("WhereObjectForm", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: where(t, `{"code":"7"}`)})
		is.NoErr(err)
		is.Equal(names(l), []string{"bob"})
		is.Equal(*l.Total, int64(1))
	})
	t.Run("WhereArrayForm", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: where(t, `[{"column":"age","op":">=","value":40},{"column":"score","op":"is_not_null"}]`)})
		is.NoErr(err)
		is.Equal(names(l), []string{"dan"})
		is.Equal(*l.Total, int64(1))
	})
	t.Run("FilteredTotalCountsAllMatchesNotThePage", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: where(t, `[{"column":"score","op":"is_not_null"}]`), Limit: 1})
		is.NoErr(err)
		is.Equal(names(l), []string{"ann"})
		is.Equal(*l.Total, int64(3))
		is.True(l.NextCursor != "")
	})
	t.Run("MultiColumnOrder", func(t *testing.T) {
		is := is.New(t)
		_, err := s.Insert(ctx, "acme", "people", rows(t, `[{"name":"eve","age":40,"score":9},{"name":"fay","age":40,"score":0.5}]`))
		is.NoErr(err)
		defer s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: where(t, `[{"column":"name","op":"in","value":["eve","fay"]}]`)})
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Order: "-age,score"})
		is.NoErr(err)
		is.Equal(names(l), []string{"dan", "bob", "fay", "eve", "ann", "cid"}) // bob's score is NULL: first when ascending
		l, err = s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Order: " age , -score "})
		is.NoErr(err)
		is.Equal(names(l), []string{"cid", "ann", "eve", "fay", "bob", "dan"})
	})
	t.Run("Columns", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Columns: []string{"NAME", "age"}, Order: "-score", Limit: 2})
		is.NoErr(err)
		is.Equal(l.Rows, []projectdata.Row{{"name": "dan", "age": int64(50)}, {"name": "cid", "age": nil}})
		l, err = s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Columns: []string{"name"}, Order: "-score", Limit: 2, After: l.NextCursor})
		is.NoErr(err)
		is.Equal(names(l), []string{"ann", "bob"})
	})
	t.Run("CountNone", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Count: projectdata.CountNone, Limit: 4})
		is.NoErr(err)
		is.Equal(l.Total, nil)
		is.Equal(l.NextCursor, projectdata.Cursor("")) // exactly 4 rows: no next page
		b, err := json.Marshal(l)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"total":null,"limit":4,"offset":0,"next_cursor":null,"truncated":false`))
	})
	t.Run("InTakesTenThousandValues", func(t *testing.T) {
		is := is.New(t)
		vals := make([]any, 10000)
		for i := range vals {
			vals[i] = fmt.Sprintf("n%d", i)
		}
		vals[9999] = "dan"
		w := projectdata.Where{{Column: "name", Op: "in", Value: vals}}
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: w})
		is.NoErr(err)
		is.Equal(names(l), []string{"dan"})
		w[0].Value = append(vals, "ann")
		_, err = s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: w})
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
		w[0].Op = "not_in"
		_, err = s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: w})
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
	})
	refusals := []struct {
		name string
		opts projectdata.ListOptions
		code projectdata.Code
	}{
		{"EmptyOrderTerm", projectdata.ListOptions{Order: "age,,name"}, projectdata.ErrInvalidRequest},
		{"OrderTwice", projectdata.ListOptions{Order: "age,-age"}, projectdata.ErrInvalidRequest},
		{"UnknownColumn", projectdata.ListOptions{Columns: []string{"colour"}}, projectdata.ErrColumnNotFound},
		{"ColumnTwice", projectdata.ListOptions{Columns: []string{"age", "AGE"}}, projectdata.ErrInvalidRequest},
		{"EmptyColumn", projectdata.ListOptions{Columns: []string{""}}, projectdata.ErrColumnNotFound},
		{"UnknownCount", projectdata.ListOptions{Count: "estimate"}, projectdata.ErrInvalidRequest},
		{"UnknownWhereColumn", projectdata.ListOptions{Where: projectdata.Where{{Column: "colour", Op: "=", Value: "red"}}}, projectdata.ErrColumnNotFound},
		{"UnknownWhereOp", projectdata.ListOptions{Where: projectdata.Where{{Column: "age", Op: "~", Value: 1}}}, projectdata.ErrInvalidWhere},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			_, err := s.ListRecords(ctx, "acme", "people", c.opts)
			pdtest.Code(t, err, c.code)
		})
	}
}

// TestListOrderOfManyColumns is the regression of an order naming every
// column of a 200-column table of five rows: its first page came, the
// next took the whole execution budget (422 with an index hint) preparing
// one statement per column of the order. An order of more than 32 columns
// is now refused (400 invalid_request); one of 32 pages in the order
// SQLite gives, whatever the columns returned.
func TestListOrderOfManyColumns(t *testing.T) {
	s, _ := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: time.Minute}) // what is tested is not time: a slow machine (-race) too
	cols := make([]projectdata.ColumnDef, 200)
	for i := range cols {
		cols[i] = projectdata.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: "INTEGER"}
	}
	createTable(t, s, "wide", cols...)
	rows := make([]projectdata.Row, 40)
	for i := range rows {
		rows[i] = projectdata.Row{}
		for k := range 40 {
			if v := (i*7 + k*3) % 5; v < 3 { // 3 values and NULL: many ties
				rows[i][fmt.Sprintf("c%d", k)] = v
			}
		}
	}
	if _, err := s.Insert(ctx, "acme", "wide", rows); err != nil {
		t.Fatal(err)
	}
	// order returns an order of the first n columns, every third one
	// descending, and the same as SQL.
	order := func(n int) (order, sql string) {
		terms, sqlTerms := make([]string, n), make([]string, n)
		for k := range terms {
			terms[k], sqlTerms[k] = fmt.Sprintf("c%d", k), fmt.Sprintf("c%d", k)
			if k%3 == 1 {
				terms[k], sqlTerms[k] = "-"+terms[k], sqlTerms[k]+" DESC"
			}
		}
		return strings.Join(terms, ","), strings.Join(sqlTerms, ", ")
	}

	all, _ := order(200)
	_, err := s.ListRecords(ctx, "acme", "wide", projectdata.ListOptions{Order: all})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	if !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("the refusal does not give the limit: %v", err)
	}

	by, sql := order(32)
	res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT id FROM wide ORDER BY " + sql + ", id DESC"}) // c31 is descending: so is the key
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, row := range res.Rows {
		want = append(want, row["id"].(int64))
	}
	for _, columns := range [][]string{nil, {"c35", "id"}} {
		var got []int64
		for row, err := range s.Rows(ctx, "acme", "wide", projectdata.ListOptions{Order: by, Columns: columns, Limit: 3}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, row["id"].(int64))
			if len(got) > len(want) {
				t.Fatalf("columns %v: the pages hold more than the %d rows: %v", columns, len(want), got)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("columns %v: the pages hold %v, want %v", columns, got, want)
		}
	}
}
