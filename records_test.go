package projectdata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// rows decodes an insert body, failing the test on error.
func rows(t *testing.T, body string) []projectdata.Row {
	t.Helper()
	rs, err := projectdata.DecodeRows(strings.NewReader(body), 0)
	if err != nil {
		t.Fatalf("decode rows %s: %v", body, err)
	}
	return rs
}

// where decodes a where clause, failing the test on error.
func where(t *testing.T, body string) projectdata.Where {
	t.Helper()
	var w projectdata.Where
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatalf("decode where %s: %v", body, err)
	}
	return w
}

// createTable creates a table in project acme, failing the test on error.
func createTable(t *testing.T, s *projectdata.Store, name string, cols ...projectdata.ColumnDef) {
	t.Helper()
	if _, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: name, Columns: cols}); err != nil {
		t.Fatal(err)
	}
}

// total returns the number of rows in a table.
func total(t *testing.T, s *projectdata.Store, table string) int64 {
	t.Helper()
	l, err := s.ListRecords(ctx, "acme", table, projectdata.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *l.Total
}

// itemsStore returns a Store whose project has the table items: id
// (automatic), name TEXT NOT NULL, qty INTEGER, price REAL, code TEXT
// UNIQUE, active BOOLEAN, seen DATETIME.
func itemsStore(t *testing.T, opts *projectdata.Options) *projectdata.Store {
	t.Helper()
	s, _ := pdtest.NewProject(t, opts)
	createTable(t, s, "items",
		projectdata.ColumnDef{Name: "name", NotNull: true},
		projectdata.ColumnDef{Name: "qty", Type: "INTEGER", Default: 7},
		projectdata.ColumnDef{Name: "price", Type: "REAL"},
		projectdata.ColumnDef{Name: "code", Unique: true},
		projectdata.ColumnDef{Name: "active", Type: "BOOLEAN"},
		projectdata.ColumnDef{Name: "seen", Type: "DATETIME"},
	)
	return s
}

func TestInsert(t *testing.T) {
	t.Run("ReturnsAssignedKeysInOrder", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		res, err := s.Insert(ctx, "acme", "items", rows(t, `[{"name":"a"},{"name":"b","id":10},{"name":"c"}]`))
		is.NoErr(err)
		is.Equal(res.Table, "items")
		is.Equal(res.InsertedCount, 3)
		is.Equal(res.InsertedIDs, []any{int64(1), int64(10), int64(11)})
		row, err := s.GetRecord(ctx, "acme", "items", int64(10))
		is.NoErr(err)
		is.Equal(row["name"], "b")
	})
	t.Run("SuccessiveInsertsOfOtherColumns", func(t *testing.T) {
		// An insert reuses the statement of the one before when its rows
		// have the same columns: each must still store its own columns.
		is := is.New(t)
		s := itemsStore(t, nil)
		bodies := []string{`{"name":"a","qty":1}`, `{"name":"b","price":2.5}`, `{"name":"c","qty":3}`, `[{"qty":4,"name":"d"},{"name":"e"}]`, `{"price":6.5,"name":"f","qty":6}`}
		want := [][]any{{"a", int64(1), nil}, {"b", int64(7), 2.5}, {"c", int64(3), nil}, {"d", int64(4), nil}, {"e", int64(7), nil}, {"f", int64(6), 6.5}}
		for _, body := range bodies {
			_, err := s.Insert(ctx, "acme", "items", rows(t, body))
			is.NoErr(err)
			_, err = s.InsertJSON(ctx, "acme", "items", strings.NewReader(body))
			is.NoErr(err)
		}
		res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT name, qty, price FROM items ORDER BY id"})
		is.NoErr(err)
		var got [][]any
		for _, r := range res.Rows {
			got = append(got, []any{r["name"], r["qty"], r["price"]})
		}
		var twice [][]any // each body went in by Insert, then by InsertJSON
		i := 0
		for _, body := range bodies {
			n := 1 + strings.Count(body, "},{")
			twice = append(twice, want[i:i+n]...)
			twice = append(twice, want[i:i+n]...)
			i += n
		}
		is.Equal(got, twice)
	})
	t.Run("ReturnsValuesByColumnType", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		_, err := s.Insert(ctx, "acme", "items", rows(t,
			`{"name":"a","qty":"42","price":2,"code":5,"active":true,"seen":"2026-11-21T14:05:09Z"}`))
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "items", 1)
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": int64(1), "name": "a", "qty": int64(42), "price": 2.0, "code": "5", "active": int64(1), "seen": "2026-11-21T14:05:09.000Z"})
	})
	t.Run("EmptyRowGetsDefaults", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "things", projectdata.ColumnDef{Name: "qty", Type: "INTEGER", Default: 7}, projectdata.ColumnDef{Name: "note"})
		res, err := s.Insert(ctx, "acme", "things", rows(t, `[{}, {}]`))
		is.NoErr(err)
		is.Equal(res.InsertedIDs, []any{int64(1), int64(2)})
		row, err := s.GetRecord(ctx, "acme", "things", 2)
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": int64(2), "qty": int64(7), "note": nil})
	})
	t.Run("KeepsInt64Precision", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		res, err := s.Insert(ctx, "acme", "items", rows(t, `{"id":9007199254740993,"name":"big","qty":9007199254740993}`))
		is.NoErr(err)
		is.Equal(res.InsertedIDs, []any{int64(9007199254740993)})
		row, err := s.GetRecord(ctx, "acme", "items", "9007199254740993")
		is.NoErr(err)
		is.Equal(row["qty"], int64(9007199254740993))
		b, err := json.Marshal(res)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"inserted_ids":[9007199254740993]`))
		b, err = json.Marshal(row)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"qty":9007199254740993`))
	})
	t.Run("TextPrimaryKeys", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "skus", projectdata.ColumnDef{Name: "sku", Primary: true}, projectdata.ColumnDef{Name: "qty", Type: "INTEGER"})
		res, err := s.Insert(ctx, "acme", "skus", rows(t, `[{"sku":"A-1","qty":1},{"sku":42}]`))
		is.NoErr(err)
		is.Equal(res.InsertedIDs, []any{"A-1", "42"})
		row, err := s.GetRecord(ctx, "acme", "skus", "A-1")
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"sku": "A-1", "qty": int64(1)})
		_, err = s.GetRecord(ctx, "acme", "skus", 42) // the key's string form
		is.NoErr(err)
	})
	t.Run("TextPrimaryKeyFromDefault", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "slots", projectdata.ColumnDef{Name: "slot", Primary: true, Default: "first"}, projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		res, err := s.Insert(ctx, "acme", "slots", rows(t, `[{"n":1},{"slot":"second"}]`))
		is.NoErr(err)
		is.Equal(res.InsertedIDs, []any{"first", "second"})
	})
	t.Run("MatchesKeysCaseInsensitively", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		_, err := s.Insert(ctx, "acme", "items", rows(t, `{"NAME":"a","Qty":3}`))
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "items", 1)
		is.NoErr(err)
		is.Equal(row["name"], "a")
		is.Equal(row["qty"], int64(3))
	})
	t.Run("MixedKeySetsKeepOrder", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		res, err := s.Insert(ctx, "acme", "items", rows(t,
			`[{"name":"a"},{"name":"b","qty":1},{"qty":2,"name":"c"},{"name":"d"},{"id":100,"name":"e"}]`))
		is.NoErr(err)
		is.Equal(res.InsertedIDs, []any{int64(1), int64(2), int64(3), int64(4), int64(100)})
		for i, want := range []struct {
			name string
			qty  int64
		}{{"a", 7}, {"b", 1}, {"c", 2}, {"d", 7}} {
			row, err := s.GetRecord(ctx, "acme", "items", i+1)
			is.NoErr(err)
			is.Equal(row["name"], want.name)
			is.Equal(row["qty"], want.qty)
		}
	})
	t.Run("ManyKeySetsInOneInsert", func(t *testing.T) {
		// 255 key sets: more statements than a connection caches.
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		var cols []projectdata.ColumnDef
		for j := range 8 {
			cols = append(cols, projectdata.ColumnDef{Name: fmt.Sprintf("c%d", j), Type: "INTEGER"})
		}
		createTable(t, s, "wide", cols...)
		var body []string
		for m := 1; m < 256; m++ {
			var kv []string
			for j := range 8 {
				if m&(1<<j) != 0 {
					kv = append(kv, fmt.Sprintf(`"c%d":%d`, j, m))
				}
			}
			body = append(body, "{"+strings.Join(kv, ",")+"}")
		}
		res, err := s.Insert(ctx, "acme", "wide", rows(t, "["+strings.Join(body, ",")+"]"))
		is.NoErr(err)
		is.Equal(res.InsertedCount, 255)
		for _, m := range []int{1, 128, 200, 255} {
			is.Equal(res.InsertedIDs[m-1], int64(m))
			row, err := s.GetRecord(ctx, "acme", "wide", m)
			is.NoErr(err)
			for j := range 8 {
				want := any(nil)
				if m&(1<<j) != 0 {
					want = int64(m)
				}
				is.Equal(row[fmt.Sprintf("c%d", j)], want)
			}
		}
	})
	t.Run("NoRowsInsertsNothing", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		res, err := s.Insert(ctx, "acme", "items", nil)
		is.NoErr(err)
		is.Equal(res.InsertedCount, 0)
		is.Equal(res.InsertedIDs, []any{})
		b, err := json.Marshal(res)
		is.NoErr(err)
		is.Equal(string(b), `{"table":"items","inserted_count":0,"inserted_ids":[]}`)
		_, err = s.Insert(ctx, "acme", "nope", nil)
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
	t.Run("NeedsWriteRole", func(t *testing.T) {
		s := itemsStore(t, nil)
		_, err := s.Insert(pdtest.As(t, s, projectdata.RoleRead), "acme", "items", rows(t, `{"name":"a"}`))
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		_, err = s.Insert(pdtest.As(t, s, projectdata.RoleWrite), "acme", "items", rows(t, `{"name":"a"}`))
		is.New(t).NoErr(err)
	})

	refusals := []struct {
		name string
		body string
		code projectdata.Code
		msg  string // part of the message
	}{
		{"UnknownColumn", `{"name":"a","colour":"red"}`, projectdata.ErrColumnNotFound, `"colour"`},
		{"ColumnIDAsKey", `{"name":"a","2":"x"}`, projectdata.ErrColumnNotFound, `"2"`},
		{"NestedObject", `{"name":{"first":"a"}}`, projectdata.ErrInvalidColumnValue, `column "name"`},
		{"NestedArray", `{"name":"a","qty":[1]}`, projectdata.ErrInvalidColumnValue, `column "qty"`},
		{"TextIntoInteger", `{"name":"a","qty":"abc"}`, projectdata.ErrInvalidColumnValue, `"abc"`},
		{"FractionIntoInteger", `{"name":"a","qty":1.5}`, projectdata.ErrInvalidColumnValue, `1.5`},
		{"TwoIntoBoolean", `{"name":"a","active":2}`, projectdata.ErrInvalidColumnValue, `column "active"`},
		{"BadDatetime", `{"name":"a","seen":"yesterday"}`, projectdata.ErrInvalidColumnValue, `column "seen"`},
		{"ColumnTwice", `{"name":"a","NAME":"b"}`, projectdata.ErrInvalidRequest, `twice`},
		{"NullIntoNotNull", `{"name":null}`, projectdata.ErrNotNullViolation, `row 0: column "name" must not be NULL`},
		{"MissingNotNull", `{"qty":1}`, projectdata.ErrNotNullViolation, `row 0: column "name" must not be NULL`},
		{"DuplicateKey", `{"id":1,"name":"b"}`, projectdata.ErrUniqueViolation, `row 0: column "id" value 1 already exists`},
		{"DuplicateUnique", `{"name":"b","code":"C1"}`, projectdata.ErrUniqueViolation, `row 0: column "code" value "C1" already exists`},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s := itemsStore(t, nil)
			_, err := s.Insert(ctx, "acme", "items", rows(t, `{"name":"first","code":"C1"}`))
			is.NoErr(err)
			rs, err := projectdata.DecodeRows(strings.NewReader(c.body), 0) // nested values are refused here
			if err == nil {
				_, err = s.Insert(ctx, "acme", "items", rs)
			}
			pdtest.Code(t, err, c.code)
			is.True(strings.Contains(err.Error(), c.msg)) // the message names the column and value
			is.Equal(total(t, s, "items"), int64(1))
		})
	}

	t.Run("RefusesTooManyRows", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, &projectdata.Options{MaxInsertRows: 3})
		_, err := s.Insert(ctx, "acme", "items", rows(t, `[{"name":"a"},{"name":"b"},{"name":"c"}]`))
		is.NoErr(err)
		_, err = s.Insert(ctx, "acme", "items", rows(t, `[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}]`))
		pdtest.Code(t, err, projectdata.ErrTooManyRows)
		is.Equal(total(t, s, "items"), int64(3))
	})

	// Row 3 of 5 fails: nothing is written, and the message names row 3
	// (0-based: the fourth row).
	atomic := []struct {
		name string
		row3 string
		code projectdata.Code
		msg  string
	}{
		{"BadValue", `{"name":"d","qty":"many"}`, projectdata.ErrInvalidColumnValue, `row 3: column "qty": "many" does not fit`},
		{"DuplicateOfEarlierRow", `{"name":"d","code":"X"}`, projectdata.ErrUniqueViolation, `row 3: column "code" value "X" already exists`},
		{"NotNull", `{"qty":4}`, projectdata.ErrNotNullViolation, `row 3: column "name" must not be NULL`},
		{"UnknownColumn", `{"name":"d","size":4}`, projectdata.ErrColumnNotFound, `row 3: column "size"`},
	}
	for _, c := range atomic {
		t.Run("AllOrNothing"+c.name, func(t *testing.T) {
			is := is.New(t)
			s := itemsStore(t, nil)
			body := `[{"name":"a","code":"X"},{"name":"b"},{"name":"c"},` + c.row3 + `,{"name":"e"}]`
			_, err := s.Insert(ctx, "acme", "items", rows(t, body))
			pdtest.Code(t, err, c.code)
			is.True(strings.Contains(err.Error(), c.msg)) // names row 3, the column and the value
			is.Equal(total(t, s, "items"), int64(0))      // no row written
			res, err := s.Insert(ctx, "acme", "items", rows(t, `{"name":"after"}`))
			is.NoErr(err)
			is.Equal(res.InsertedIDs, []any{int64(1)}) // the failed rows used no key either
		})
	}
}

func TestGetRecord(t *testing.T) {
	is := is.New(t)
	s := itemsStore(t, nil)
	_, err := s.Insert(ctx, "acme", "items", rows(t, `[{"name":"a"},{"name":"b"},{"name":"c","qty":null}]`))
	is.NoErr(err)
	for _, id := range []any{5 - 3, int64(2), "2", json.Number("2"), 2.0, " 2"[1:]} {
		row, err := s.GetRecord(ctx, "acme", "items", id)
		is.NoErr(err)
		is.Equal(row["name"], "b")
	}
	row, err := s.GetRecord(ctx, "acme", "ITEMS", 3)
	is.NoErr(err)
	is.Equal(row, projectdata.Row{"id": int64(3), "name": "c", "qty": nil, "price": nil, "code": nil, "active": nil, "seen": nil})

	for _, id := range []any{99, "99", "abc", "2.5", nil, "", map[string]any{}} {
		_, err := s.GetRecord(ctx, "acme", "items", id)
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
	}
	_, err = s.GetRecord(ctx, "acme", "nope", 1)
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
	_, err = s.GetRecord(ctx, "nope", "items", 1)
	pdtest.Code(t, err, projectdata.ErrProjectNotFound)
}

func TestDeleteRecord(t *testing.T) {
	t.Run("IntegerKey", func(t *testing.T) {
		is := is.New(t)
		s := itemsStore(t, nil)
		_, err := s.Insert(ctx, "acme", "items", rows(t, `[{"name":"a"},{"name":"b"}]`))
		is.NoErr(err)
		res, err := s.DeleteRecord(ctx, "acme", "items", "2")
		is.NoErr(err)
		is.Equal(res, projectdata.DeleteResult{Deleted: true, Table: "items", ID: "2"})
		_, err = s.GetRecord(ctx, "acme", "items", 2)
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
		_, err = s.DeleteRecord(ctx, "acme", "items", 2)
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
		_, err = s.DeleteRecord(ctx, "acme", "items", "abc")
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
		is.Equal(total(t, s, "items"), int64(1))
	})
	t.Run("TextKey", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "skus", projectdata.ColumnDef{Name: "sku", Primary: true})
		_, err := s.Insert(ctx, "acme", "skus", rows(t, `[{"sku":"A-1"},{"sku":"7"}]`))
		is.NoErr(err)
		res, err := s.DeleteRecord(ctx, "acme", "skus", "A-1")
		is.NoErr(err)
		is.Equal(res.ID, "A-1")
		res, err = s.DeleteRecord(ctx, "acme", "skus", 7)
		is.NoErr(err)
		is.Equal(res.ID, "7")
		_, err = s.DeleteRecord(ctx, "acme", "skus", "A-1")
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
	})
	t.Run("NeedsWriteRole", func(t *testing.T) {
		s := itemsStore(t, nil)
		_, err := s.DeleteRecord(pdtest.As(t, s, projectdata.RoleRead), "acme", "items", 1)
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	})
}

func TestDecodeRows(t *testing.T) {
	is := is.New(t)
	rs, err := projectdata.DecodeRows(strings.NewReader(` {"n": 9007199254740993, "x": 1.5} `), 0)
	is.NoErr(err)
	is.Equal(rs, []projectdata.Row{{"n": json.Number("9007199254740993"), "x": json.Number("1.5")}})
	rs, err = projectdata.DecodeRows(strings.NewReader(`[{}, {"a": null}]`), 0)
	is.NoErr(err)
	is.Equal(rs, []projectdata.Row{{}, {"a": nil}})

	var r projectdata.Row
	is.NoErr(json.Unmarshal([]byte(`{"n": 9007199254740993}`), &r))
	is.Equal(r["n"], json.Number("9007199254740993"))
	var u projectdata.BulkUpdate
	is.NoErr(json.Unmarshal([]byte(`{"data": {"n": 2}, "where": {"id": 9007199254740993}, "allow_all": true}`), &u))
	is.Equal(u, projectdata.BulkUpdate{
		Data:     projectdata.Row{"n": json.Number("2")},
		Where:    projectdata.Where{{Column: "id", Op: "=", Value: json.Number("9007199254740993")}},
		AllowAll: true,
	})
	pdtest.Code(t, json.Unmarshal([]byte(`[1]`), &r), projectdata.ErrInvalidRequest)

	for body, code := range map[string]projectdata.Code{
		`{`:          projectdata.ErrInvalidJSON,
		`{} {}`:      projectdata.ErrInvalidJSON,
		``:           projectdata.ErrInvalidRequest, // no rows at all
		" \n":        projectdata.ErrInvalidRequest,
		`5`:          projectdata.ErrInvalidRequest,
		`null`:       projectdata.ErrInvalidRequest,
		`[{}, 1]`:    projectdata.ErrInvalidRequest,
		`[{}, null]`: projectdata.ErrInvalidRequest,
	} {
		_, err := projectdata.DecodeRows(strings.NewReader(body), 0)
		pdtest.Code(t, err, code)
	}
}

func TestWhereJSON(t *testing.T) {
	is := is.New(t)
	is.Equal(where(t, `{"b": 1, "a": null}`), projectdata.Where{
		{Column: "b", Op: "=", Value: json.Number("1")},
		{Column: "a", Op: "=", Value: nil},
	}) // in the object's order
	is.Equal(where(t, `[{"column":"a","op":"<","value":2},{"column":"b","op":"is_null"},{"op":"in","column":"c","value":["x",3]}]`), projectdata.Where{
		{Column: "a", Op: "<", Value: json.Number("2")},
		{Column: "b", Op: "is_null"},
		{Column: "c", Op: "in", Value: []any{"x", json.Number("3")}},
	})
	is.Equal(len(where(t, `null`)), 0)
	is.Equal(len(where(t, `{}`)), 0)
	is.Equal(len(where(t, `[]`)), 0)

	var u projectdata.BulkDelete
	is.NoErr(json.Unmarshal([]byte(`{}`), &u))
	is.Equal(len(u.Where), 0)

	for _, body := range []string{
		`5`, `"a = 1"`, `true`,
		`[1]`, `[null]`, `[[]]`,
		`[{"column":"a"}]`,                             // no op
		`[{"op":"="}]`,                                 // no column
		`[{"column":"a","op":"="}]`,                    // no value
		`[{"column":"a","op":"in"}]`,                   // no value
		`[{"column":1,"op":"="}]`,                      // column not a string
		`[{"column":"a","op":"=","value":1,"x":2}]`,    // unknown field
		`[{"column":"a","op":"is_null","valeu":null}]`, // misspelt field
		`{"age":{"gt":1}}`,                             // object as a value
		`[{"column":"age","op":"in","value":[[1]]}]`,   // nested list
	} {
		var w projectdata.Where
		err := json.Unmarshal([]byte(body), &w)
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
	}
}

// peopleStore returns a Store whose project has the table people:
//
//	id  name  age   score  code  tag
//	1   ann   30    1.5    A1
//	2   bob   40    NULL   7
//	3   cid   NULL  2.5    NULL
//	4   dan   50    3.5    8
func peopleStore(t *testing.T) *projectdata.Store {
	t.Helper()
	var opts *projectdata.Options
	if raceEnabled {
		// Lists of 10,000 values outrun the default budget of a second
		// under the race detector; no test of budgets uses this store.
		opts = &projectdata.Options{QueryTimeout: time.Minute}
	}
	s, _ := pdtest.NewProject(t, opts)
	createTable(t, s, "people",
		projectdata.ColumnDef{Name: "name", NotNull: true},
		projectdata.ColumnDef{Name: "age", Type: "INTEGER"},
		projectdata.ColumnDef{Name: "score", Type: "REAL"},
		projectdata.ColumnDef{Name: "code"},
		projectdata.ColumnDef{Name: "tag"},
	)
	_, err := s.Insert(ctx, "acme", "people", rows(t, `[
		{"name":"ann","age":30,"score":1.5,"code":"A1"},
		{"name":"bob","age":40,"code":"7"},
		{"name":"cid","score":2.5},
		{"name":"dan","age":50,"score":3.5,"code":"8"}]`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tagged returns the ids of the people whose tag is set, in order.
func tagged(t *testing.T, s *projectdata.Store) []int64 {
	t.Helper()
	l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{}
	for _, r := range l.Rows {
		if r["tag"] != nil {
			ids = append(ids, r["id"].(int64))
		}
	}
	return ids
}

func TestBulkWhere(t *testing.T) {
	s := peopleStore(t)
	cases := []struct {
		name  string
		where string
		want  []int64
	}{
		{"ObjectEquality", `{"name":"bob"}`, []int64{2}},
		{"ObjectAllMustMatch", `{"name":"bob","age":40}`, []int64{2}},
		{"ObjectAllMustMatchNone", `{"name":"bob","age":30}`, []int64{}},
		{"ObjectNullMatchesNull", `{"age":null}`, []int64{3}},
		{"ObjectKeyAnyCase", `{"NAME":"ann"}`, []int64{1}},
		{"ObjectIntegerAsText", `{"age":"40"}`, []int64{2}},
		{"ObjectKeyAsText", `{"id":"4"}`, []int64{4}},
		{"Equal", `[{"column":"age","op":"=","value":30}]`, []int64{1}},
		{"EqualNullMatchesNull", `[{"column":"score","op":"=","value":null}]`, []int64{2}},
		{"NotEqual", `[{"column":"age","op":"!=","value":30}]`, []int64{2, 4}},
		{"NotEqualNullMatchesNotNull", `[{"column":"age","op":"!=","value":null}]`, []int64{1, 2, 4}},
		{"Less", `[{"column":"age","op":"<","value":40}]`, []int64{1}},
		{"LessOrEqual", `[{"column":"age","op":"<=","value":40}]`, []int64{1, 2}},
		{"Greater", `[{"column":"score","op":">","value":2}]`, []int64{3, 4}},
		{"GreaterOrEqual", `[{"column":"age","op":">=","value":40}]`, []int64{2, 4}},
		{"Like", `[{"column":"name","op":"like","value":"B%"}]`, []int64{2}},
		{"LikeWildcard", `[{"column":"name","op":"like","value":"_a_"}]`, []int64{4}},
		{"In", `[{"column":"age","op":"in","value":[30,"50",99]}]`, []int64{1, 4}},
		{"InText", `[{"column":"name","op":"in","value":["cid","ann"]}]`, []int64{1, 3}},
		{"InNumbersOnTextColumn", `[{"column":"code","op":"in","value":[7,8,"A1"]}]`, []int64{1, 2, 4}},
		{"NotInNumbersOnTextColumn", `[{"column":"code","op":"not_in","value":[7]}]`, []int64{1, 4}},
		{"EqualNumberOnTextColumn", `{"code":7}`, []int64{2}},
		{"NotIn", `[{"column":"age","op":"not_in","value":[30]}]`, []int64{2, 4}},
		{"IsNull", `[{"column":"score","op":"is_null"}]`, []int64{2}},
		{"IsNullWithNullValue", `[{"column":"score","op":"is_null","value":null}]`, []int64{2}},
		{"IsNotNull", `[{"column":"score","op":"is_not_null"}]`, []int64{1, 3, 4}},
		{"OpAnyCase", `[{"column":"name","op":"LIKE","value":"a%"}]`, []int64{1}},
		{"Several", `[{"column":"age","op":">","value":20},{"column":"score","op":"<","value":3}]`, []int64{1}},
		// Values are bound, never SQL: these match nothing.
		{"BoundTextInjection", `{"name":"x' OR '1'='1"}`, []int64{}},
		{"BoundLikeInjection", `[{"column":"name","op":"like","value":"x' OR '1'='1"}]`, []int64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			_, err := s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": nil}, AllowAll: true})
			is.NoErr(err)
			res, err := s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{
				Data:  projectdata.Row{"tag": "x"},
				Where: where(t, c.where),
			})
			is.NoErr(err)
			is.Equal(res, projectdata.BulkResult{Table: "people", AffectedRows: int64(len(c.want))})
			is.Equal(tagged(t, s), c.want)
		})
	}
}

func TestBulkWhereRefusals(t *testing.T) {
	s := peopleStore(t)
	cases := []struct {
		name  string
		where projectdata.Where
		code  projectdata.Code
	}{
		{"UnknownOp", projectdata.Where{{Column: "age", Op: "~", Value: 1}}, projectdata.ErrInvalidWhere},
		{"SQLAsOp", projectdata.Where{{Column: "age", Op: "= 1 OR 1=1 --", Value: 1}}, projectdata.ErrInvalidWhere},
		{"UnknownColumn", projectdata.Where{{Column: "height", Op: "=", Value: 1}}, projectdata.ErrColumnNotFound},
		{"SQLAsColumn", projectdata.Where{{Column: `age" OR 1=1 --`, Op: "=", Value: 1}}, projectdata.ErrColumnNotFound},
		{"ColumnIDAsColumn", projectdata.Where{{Column: "2", Op: "=", Value: 1}}, projectdata.ErrColumnNotFound},
		{"NullWithLess", projectdata.Where{{Column: "age", Op: "<", Value: nil}}, projectdata.ErrInvalidWhere},
		{"NullWithLike", projectdata.Where{{Column: "name", Op: "like", Value: nil}}, projectdata.ErrInvalidWhere},
		{"ValueWithIsNull", projectdata.Where{{Column: "age", Op: "is_null", Value: 1}}, projectdata.ErrInvalidWhere},
		{"ArrayValueForEqual", where(t, `{"age":[1,2]}`), projectdata.ErrInvalidWhere},
		{"InEmpty", where(t, `[{"column":"age","op":"in","value":[]}]`), projectdata.ErrInvalidWhere},
		{"InScalar", where(t, `[{"column":"age","op":"in","value":30}]`), projectdata.ErrInvalidWhere},
		{"InNull", where(t, `[{"column":"age","op":"in","value":null}]`), projectdata.ErrInvalidWhere},
		{"InWithNull", where(t, `[{"column":"age","op":"not_in","value":[1,null]}]`), projectdata.ErrInvalidWhere},
		{"InWithNested", projectdata.Where{{Column: "age", Op: projectdata.WhereIn, Value: []any{[]any{1}}}}, projectdata.ErrInvalidWhere},
		// Values are checked against the column's type, as inserted values
		// are; values that look like SQL are values that do not fit.
		{"TextForInteger", where(t, `[{"column":"age","op":"<","value":"abc"}]`), projectdata.ErrInvalidColumnValue},
		{"FractionForInteger", where(t, `[{"column":"age","op":"<","value":40.5}]`), projectdata.ErrInvalidColumnValue},
		{"BooleanForInteger", where(t, `{"age":true}`), projectdata.ErrInvalidColumnValue},
		{"NumberInjection", where(t, `{"age":"1 OR 1=1"}`), projectdata.ErrInvalidColumnValue},
		{"InInjection", where(t, `[{"column":"age","op":"in","value":["1 OR 1=1", "0) OR (1=1"]}]`), projectdata.ErrInvalidColumnValue},
		{"KeyInjection", where(t, `{"id":"1 OR 1=1"}`), projectdata.ErrInvalidColumnValue},
		{"InOneValueDoesNotFit", where(t, `[{"column":"age","op":"in","value":[30,"x"]}]`), projectdata.ErrInvalidColumnValue},
		{"LikeNumber", where(t, `[{"column":"name","op":"like","value":5}]`), projectdata.ErrInvalidWhere},
		{"InTooLong", projectdata.Where{{Column: "age", Op: projectdata.WhereIn, Value: make([]int, projectdata.MaxWhereList+1)}}, projectdata.ErrInvalidWhere},
		{"GoBytesAsList", projectdata.Where{{Column: "age", Op: projectdata.WhereIn, Value: []byte{1}}}, projectdata.ErrInvalidWhere},
		// Lists within bounds one by one, but over SQLite's parameters in all.
		{"InListsTooLongInAll", projectdata.Where{
			{Column: "age", Op: projectdata.WhereIn, Value: make([]int, projectdata.MaxWhereList)},
			{Column: "age", Op: projectdata.WhereNotIn, Value: make([]int, projectdata.MaxWhereList)},
			{Column: "age", Op: projectdata.WhereIn, Value: make([]int, projectdata.MaxWhereList)},
			{Column: "age", Op: projectdata.WhereIn, Value: make([]int, projectdata.MaxWhereList)},
		}, projectdata.ErrInvalidWhere},
		{"InListsOneOverInAll", projectdata.Where{
			{Column: "age", Op: projectdata.WhereIn, Value: make([]int, projectdata.MaxWhereList-1)},
			{Column: "age", Op: projectdata.WhereNotIn, Value: []int{1, 2}},
		}, projectdata.ErrInvalidWhere},
		{"NullKey", nil, projectdata.ErrNotNullViolation}, // the data sets the key to NULL (see below)
		{"LikeTooLong", projectdata.Where{{Column: "name", Op: projectdata.WhereLike, Value: strings.Repeat("%a", projectdata.MaxLikePattern/2) + "b"}}, projectdata.ErrInvalidWhere},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			if c.where == nil {
				_, err := s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "x", "id": nil}, Where: where(t, `{"id":1}`)})
				pdtest.Code(t, err, c.code)
				is.Equal(tagged(t, s), []int64{})
				return
			}
			_, err := s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "x"}, Where: c.where})
			pdtest.Code(t, err, c.code)
			_, err = s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: c.where})
			pdtest.Code(t, err, c.code)
			is.Equal(tagged(t, s), []int64{})
			is.Equal(total(t, s, "people"), int64(4))
		})
	}
}

func TestUpdateRecords(t *testing.T) {
	t.Run("SetsColumnsAndCountsRows", func(t *testing.T) {
		is := is.New(t)
		s := peopleStore(t)
		res, err := s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{
			Data:  rows(t, `{"score":"0.5","TAG":"old"}`)[0],
			Where: where(t, `[{"column":"age","op":">=","value":40}]`),
		})
		is.NoErr(err)
		is.Equal(res, projectdata.BulkResult{Table: "people", AffectedRows: 2})
		row, err := s.GetRecord(ctx, "acme", "people", 4)
		is.NoErr(err)
		is.Equal(row["score"], 0.5)
		is.Equal(row["tag"], "old")
		row, err = s.GetRecord(ctx, "acme", "people", 1)
		is.NoErr(err)
		is.Equal(row["score"], 1.5)
		res, err = s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "y"}, Where: where(t, `{"name":"nobody"}`)})
		is.NoErr(err)
		is.Equal(res.AffectedRows, int64(0))
	})
	t.Run("KeepsInt64Precision", func(t *testing.T) {
		is := is.New(t)
		s := peopleStore(t)
		var upd projectdata.BulkUpdate
		is.NoErr(json.Unmarshal([]byte(`{"data":{"age":9007199254740993},"where":{"id":1}}`), &upd))
		_, err := s.UpdateRecords(ctx, "acme", "people", upd)
		is.NoErr(err)
		res, err := s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: where(t, `{"age":9007199254740993}`)})
		is.NoErr(err)
		is.Equal(res.AffectedRows, int64(1)) // not 9007199254740992
	})
	refusals := []struct {
		name string
		upd  projectdata.BulkUpdate
		code projectdata.Code
	}{
		{"NoData", projectdata.BulkUpdate{Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrInvalidRequest},
		{"EmptyData", projectdata.BulkUpdate{Data: projectdata.Row{}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrInvalidRequest},
		{"UnknownColumn", projectdata.BulkUpdate{Data: projectdata.Row{"height": 1}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrColumnNotFound},
		{"BadValue", projectdata.BulkUpdate{Data: projectdata.Row{"age": "old"}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrInvalidColumnValue},
		{"NestedValue", projectdata.BulkUpdate{Data: projectdata.Row{"tag": []any{"a"}}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrInvalidColumnValue},
		{"NullIntoNotNull", projectdata.BulkUpdate{Data: projectdata.Row{"name": nil}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 1}}}, projectdata.ErrNotNullViolation},
		{"DuplicateKey", projectdata.BulkUpdate{Data: projectdata.Row{"id": 1}, Where: projectdata.Where{{Column: "id", Op: "=", Value: 2}}}, projectdata.ErrUniqueViolation},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s := peopleStore(t)
			_, err := s.UpdateRecords(ctx, "acme", "people", c.upd)
			pdtest.Code(t, err, c.code)
			row, err := s.GetRecord(ctx, "acme", "people", 1)
			is.NoErr(err)
			is.Equal(row, projectdata.Row{"id": int64(1), "name": "ann", "age": int64(30), "score": 1.5, "code": "A1", "tag": nil})
		})
	}
	t.Run("UniqueViolationChangesNothing", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		createTable(t, s, "codes", projectdata.ColumnDef{Name: "code", Unique: true}, projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
		_, err := s.Insert(ctx, "acme", "codes", rows(t, `[{"code":"a","n":1},{"code":"b","n":1},{"code":"c","n":2}]`))
		is.NoErr(err)
		_, err = s.UpdateRecords(ctx, "acme", "codes", projectdata.BulkUpdate{Data: projectdata.Row{"code": "z"}, Where: where(t, `{"n":1}`)})
		pdtest.Code(t, err, projectdata.ErrUniqueViolation)
		is.True(strings.Contains(err.Error(), `"codes"`))
		row, err := s.GetRecord(ctx, "acme", "codes", 1)
		is.NoErr(err)
		is.Equal(row["code"], "a") // the first row's change was rolled back
	})
}

// TestBulkChangesWithoutARowidName: a table whose columns hide every name
// of the rowid and whose key is not an INTEGER has its rows changed by one
// statement, each row once, and logged once.
func TestBulkChangesWithoutARowidName(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "t", projectdata.ColumnDef{Name: "code", Primary: true}, projectdata.ColumnDef{Name: "rowid"},
		projectdata.ColumnDef{Name: "_rowid_"}, projectdata.ColumnDef{Name: "oid"}, projectdata.ColumnDef{Name: "n", Type: "INTEGER"})
	const n = 2500 // more than a log record holds
	var in []projectdata.Row
	for i := range n {
		in = append(in, projectdata.Row{"code": fmt.Sprint("c", i*7919%n), "n": i})
	}
	_, err := s.Insert(ctx, "acme", "t", in)
	is.NoErr(err)
	from, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)

	res, err := s.UpdateRecords(ctx, "acme", "t", projectdata.BulkUpdate{Data: projectdata.Row{"rowid": "y"}, AllowAll: true})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(n))
	res, err = s.DeleteRecords(ctx, "acme", "t", projectdata.BulkDelete{Where: projectdata.Where{{Column: "n", Op: ">=", Value: 100}}})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(n-100))
	list, err := s.ListRecords(ctx, "acme", "t", projectdata.ListOptions{Where: projectdata.Where{{Column: "rowid", Op: "=", Value: "y"}}, Limit: 1})
	is.NoErr(err)
	is.Equal(*list.Total, int64(100))

	seen := map[string]int{}
	for after := from; ; {
		page, err := s.ListChanges(ctx, "acme", projectdata.ChangeQuery{After: after, Limit: 1000})
		is.NoErr(err)
		if len(page.Changes) == 0 {
			break
		}
		for _, c := range page.Changes {
			seen[c.Op+" "+c.Key.(string)]++
		}
		after = page.NextAfter
	}
	is.Equal(len(seen), 2*n-100)
	for k, times := range seen {
		if times != 1 {
			t.Fatalf("%s logged %d times", k, times)
		}
	}
}

// TestBulkNeedsWhere checks where_required and allow_all for both bulk
// operations.
func TestBulkNeedsWhere(t *testing.T) {
	ops := []struct {
		name string
		run  func(s *projectdata.Store, ctx context.Context, w projectdata.Where, allowAll bool) (projectdata.BulkResult, error)
	}{
		{"Update", func(s *projectdata.Store, ctx context.Context, w projectdata.Where, allowAll bool) (projectdata.BulkResult, error) {
			return s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "all"}, Where: w, AllowAll: allowAll})
		}},
		{"Delete", func(s *projectdata.Store, ctx context.Context, w projectdata.Where, allowAll bool) (projectdata.BulkResult, error) {
			return s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: w, AllowAll: allowAll})
		}},
	}
	for _, op := range ops {
		t.Run(op.name+"RefusesEmptyWhere", func(t *testing.T) {
			is := is.New(t)
			s := peopleStore(t)
			for _, w := range []projectdata.Where{nil, where(t, `{}`), where(t, `[]`), where(t, `null`)} {
				_, err := op.run(s, ctx, w, false)
				pdtest.Code(t, err, projectdata.ErrWhereRequired)
				is.Equal(err.Error(), "an explicit where clause is required unless an administrator sets allow_all")
			}
			is.Equal(tagged(t, s), []int64{})
			is.Equal(total(t, s, "people"), int64(4))
		})
		t.Run(op.name+"AllowAllNeedsAdmin", func(t *testing.T) {
			is := is.New(t)
			s := peopleStore(t)
			write := pdtest.As(t, s, projectdata.RoleWrite)
			_, err := op.run(s, write, nil, true)
			pdtest.Code(t, err, projectdata.ErrPermissionDenied)
			_, err = op.run(s, write, where(t, `{"id":1}`), true)
			pdtest.Code(t, err, projectdata.ErrPermissionDenied)
			is.Equal(tagged(t, s), []int64{})
			is.Equal(total(t, s, "people"), int64(4))
			res, err := op.run(s, write, where(t, `{"id":1}`), false) // a where needs no admin
			is.NoErr(err)
			is.Equal(res.AffectedRows, int64(1))
		})
		t.Run(op.name+"AllowAllByAdminTakesEveryRow", func(t *testing.T) {
			is := is.New(t)
			s := peopleStore(t)
			res, err := op.run(s, pdtest.As(t, s, projectdata.RoleAdmin), nil, true)
			is.NoErr(err)
			is.Equal(res, projectdata.BulkResult{Table: "people", AffectedRows: 4})
		})
		t.Run(op.name+"NeedsWriteRole", func(t *testing.T) {
			s := peopleStore(t)
			_, err := op.run(s, pdtest.As(t, s, projectdata.RoleRead), where(t, `{"id":1}`), false)
			pdtest.Code(t, err, projectdata.ErrPermissionDenied)
		})
		t.Run(op.name+"UnknownTable", func(t *testing.T) {
			s, _ := pdtest.NewProject(t, nil)
			_, err := op.run(s, ctx, where(t, `{"id":1}`), false)
			pdtest.Code(t, err, projectdata.ErrTableNotFound)
		})
	}
	t.Run("DeleteCountsRows", func(t *testing.T) {
		is := is.New(t)
		s := peopleStore(t)
		res, err := s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: where(t, `[{"column":"age","op":"<","value":45}]`)})
		is.NoErr(err)
		is.Equal(res.AffectedRows, int64(2))
		l, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(*l.Total, int64(2))
		is.Equal(l.Rows[0]["name"], "cid")
		is.Equal(l.Rows[1]["name"], "dan")
	})
}

func TestReadsRecoverFromASchemaChangedUnderTheCache(t *testing.T) {
	is := is.New(t)
	s, dir := pdtest.Open(t, nil)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "orders", []projectdata.Row{{"qty": 7}})
	is.NoErr(err)
	_, err = s.GetRecord(ctx, "acme", "orders", 1) // the registry is cached
	is.NoErr(err)

	// A rename committed by someone else: the cached registry is stale.
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `BEGIN; ALTER TABLE orders RENAME COLUMN qty TO quantity; UPDATE _pd_columns SET name = 'quantity' WHERE name = 'qty'; COMMIT`)

	row, err := s.GetRecord(ctx, "acme", "orders", 1)
	is.NoErr(err)
	is.Equal(row["quantity"], int64(7))
	pdtest.Exec(t, raw, `BEGIN; ALTER TABLE orders RENAME COLUMN quantity TO amount; UPDATE _pd_columns SET name = 'amount' WHERE name = 'quantity'; COMMIT`)
	list, err := s.ListRecords(ctx, "acme", "orders", projectdata.ListOptions{})
	is.NoErr(err)
	is.Equal(list.Rows[0]["amount"], int64(7))
}

// TestLikePatternAtItsLimit runs the deepest pattern allowed (a wildcard
// and a letter MaxLikePattern/2 times, each a level of SQLite's recursion
// against a long run of that letter) on the writer, on a list and in a
// query: each answers, and the project goes on writing. A longer pattern
// is refused before SQLite sees it, or by SQLite's limit in a query.
func TestLikePatternAtItsLimit(t *testing.T) {
	is := is.New(t)
	s := peopleStore(t)
	_, err := s.Insert(ctx, "acme", "people", []projectdata.Row{{"name": strings.Repeat("a", 3*projectdata.MaxLikePattern)}})
	is.NoErr(err)
	deepest := strings.Repeat("%a", projectdata.MaxLikePattern/2-1) + "%b"
	is.Equal(len(deepest), projectdata.MaxLikePattern)
	like := projectdata.Where{{Column: "name", Op: projectdata.WhereLike, Value: deepest}}

	res, err := s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: like})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(0))
	res, err = s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{Data: projectdata.Row{"tag": "x"}, Where: like})
	is.NoErr(err)
	is.Equal(res.AffectedRows, int64(0))
	list, err := s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: like})
	is.NoErr(err)
	is.Equal(len(list.Rows), 0)
	q, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT count(*) AS n FROM people WHERE name LIKE ?", Args: []any{deepest}})
	is.NoErr(err)
	is.Equal(q.Rows[0]["n"], int64(0))
	_, err = s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT name GLOB ? AS g FROM people", Args: []any{strings.ReplaceAll(deepest, "%", "*")}})
	is.NoErr(err)

	// One level deeper than allowed, and deep enough to overflow SQLite's
	// stack: refused, in a where and in a query.
	for _, deeper := range []string{"%a" + deepest, strings.Repeat("%a", 10000) + "%b"} {
		_, err = s.DeleteRecords(ctx, "acme", "people", projectdata.BulkDelete{Where: projectdata.Where{{Column: "name", Op: projectdata.WhereLike, Value: deeper}}})
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
		_, err = s.ListRecords(ctx, "acme", "people", projectdata.ListOptions{Where: projectdata.Where{{Column: "name", Op: projectdata.WhereLike, Value: deeper}}})
		pdtest.Code(t, err, projectdata.ErrInvalidWhere)
		_, err = s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT count(*) AS n FROM people WHERE name LIKE ?", Args: []any{deeper}})
		pdtest.Code(t, err, projectdata.ErrInvalidRequest)
	}

	// The writer and the readers are whole.
	_, err = s.Insert(ctx, "acme", "people", []projectdata.Row{{"name": "eve"}})
	is.NoErr(err)
	is.Equal(total(t, s, "people"), int64(6))
}

func TestRowJSON(t *testing.T) {
	is := is.New(t)
	row := projectdata.Row{"r": 2.0, "half": 0.5, "big": 1e21, "neg": -3.0, "n": int64(2), "s": "a<b>&c\u2028", "nil": nil, "ok": true}
	b, err := json.Marshal(row)
	is.NoErr(err)
	is.Equal(string(b), `{"big":1e+21,"half":0.5,"n":2,"neg":-3.0,"nil":null,"ok":true,"r":2.0,"s":"a\u003cb\u003e\u0026c\u2028"}`)
	var sent bytes.Buffer
	enc := json.NewEncoder(&sent)
	enc.SetEscapeHTML(false) // as the Go client sends rows
	is.NoErr(enc.Encode(row))
	is.Equal(sent.String(), `{"big":1e+21,"half":0.5,"n":2,"neg":-3.0,"nil":null,"ok":true,"r":2.0,"s":"a<b>&c\u2028"}`+"\n")
	var back projectdata.Row
	is.NoErr(json.Unmarshal(b, &back))
	is.Equal(back["r"], json.Number("2.0")) // a float again, for whoever reads it
	_, err = json.Marshal(projectdata.Row{"x": math.Inf(1)})
	is.True(err != nil)
	b, err = json.Marshal(projectdata.Row(nil))
	is.NoErr(err)
	is.Equal(string(b), "null")
}

// TestBulkChangeLikeStopsWithItsRequest: a bulk change whose where has a
// like over a big value (one call of SQLite's own like, minutes) stops on
// the writer when its request ends, and the next write runs.
func TestBulkChangeLikeStopsWithItsRequest(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "big", projectdata.ColumnDef{Name: "v"})
	_, err := s.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("a", 3000000)}})
	is.NoErr(err)
	slow := projectdata.Where{{Column: "v", Op: projectdata.WhereLike, Value: "%" + strings.Repeat("a", projectdata.MaxLikePattern-2) + "b"}}
	for _, change := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"Delete", func(ctx context.Context) error {
			_, err := s.DeleteRecords(ctx, "acme", "big", projectdata.BulkDelete{Where: slow})
			return err
		}},
		{"Update", func(ctx context.Context) error {
			_, err := s.UpdateRecords(ctx, "acme", "big", projectdata.BulkUpdate{Data: projectdata.Row{"v": "x"}, Where: slow})
			return err
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			is := is.New(t)
			rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- change.run(rctx) }()
			select {
			case err := <-done:
				is.True(err != nil)
			case <-time.After(30 * time.Second):
				t.Fatal("the bulk change ran on far past its request")
			}
			res, err := s.DeleteRecords(ctx, "acme", "big", projectdata.BulkDelete{Where: projectdata.Where{{Column: "v", Op: projectdata.WhereLike, Value: "b%"}}})
			is.NoErr(err)
			is.Equal(res.AffectedRows, int64(0))
		})
	}
}
