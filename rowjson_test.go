package projectdata_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// oddValues are SQL literals of values whose JSON form is easy to get
// wrong: escapes, HTML characters, line separators, invalid UTF-8, integer
// extremes, floats at the edges of encoding/json's notation, blobs, NULL.
var oddValues = []string{
	`NULL`, `''`, `'plain'`, `'<script>&"\'`, `'a' || char(0, 1, 8, 9, 10, 12, 13, 31, 127) || 'z'`,
	`char(8232, 8233)`, `'é日本🎉'`, `CAST(x'fffe61c3' AS TEXT)`, `CAST(x'e280' AS TEXT)`,
	`0`, `-1`, `9223372036854775807`, `-9223372036854775808`, `'42'`, `'1.5'`,
	`0.0`, `-0.0`, `1.5`, `1e20`, `1e21`, `-1e21`, `1e-6`, `1e-7`, `-2.5e-10`, `123456789.123`,
	`5e-324`, `1.7976931348623157e308`, `0.1`, `100.0`,
	`x''`, `x'00ff10'`, `x'616263'`,
}

// oddStore returns a Store whose project acme has the table Odd (an
// INTEGER key and a column of every type), a row of each of oddValues in
// every column, and the raw connection that wrote them behind the Store's
// back.
func oddStore(t *testing.T, opts *projectdata.Options) (*projectdata.Store, *sqlite3.Conn) {
	t.Helper()
	is := is.New(t)
	s, dir := pdtest.Open(t, opts)
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "Odd", Columns: []projectdata.ColumnDef{
		{Name: "id", Type: "INTEGER", Primary: true},
		{Name: "zeta"}, {Name: "Alpha", Type: "INTEGER"}, {Name: "_under", Type: "REAL"}, {Name: "b9", Type: "NUMERIC"},
		{Name: "B", Type: "BOOLEAN"}, {Name: "when_at", Type: "DATETIME"}, {Name: "a_b"},
	}})
	is.NoErr(err)
	raw := pdtest.Raw(t, dir, "acme")
	for i, v := range oddValues {
		// Every column holds the value, as SQLite stores it under the
		// column's affinity.
		pdtest.Exec(t, raw, fmt.Sprintf(`INSERT INTO Odd VALUES (%d, %[2]s, %[2]s, %[2]s, %[2]s, %[2]s, %[2]s, %[2]s)`, i+1, v))
	}
	return s, raw
}

// TestAppendRecordJSON shows that a row encoded straight from SQLite's
// columns is byte for byte what encoding/json writes for the Record that
// FindRecord returns, for every column type and odd values, and that the
// caller's buffer is appended to.
func TestAppendRecordJSON(t *testing.T) {
	is := is.New(t)
	s, raw := oddStore(t, nil)
	// And one row of mixed values.
	pdtest.Exec(t, raw, `INSERT INTO Odd VALUES (1000, 'x<y', 7, 2.5, 3, 1, '2026-11-22T10:00:00.000Z', NULL)`)
	ids := []int{1000}
	for i := range oddValues {
		ids = append(ids, i+1)
	}
	for _, id := range ids {
		rec, err := s.FindRecord(ctx, "acme", "odd", id)
		is.NoErr(err)
		want, err := json.Marshal(rec)
		is.NoErr(err)
		got, err := s.AppendRecordJSON(ctx, []byte("prefix:"), "acme", "odd", id)
		is.NoErr(err)
		is.Equal(string(got), "prefix:"+string(want)) // same bytes as encoding/json
	}

	t.Run("a value encoding/json refuses is an error, as it is there", func(t *testing.T) {
		is := is.New(t)
		pdtest.Exec(t, raw, `INSERT INTO Odd (id, _under) VALUES (2000, 1e999)`)
		rec, err := s.FindRecord(ctx, "acme", "odd", 2000)
		is.NoErr(err)
		_, err = json.Marshal(rec)
		is.True(err != nil)
		got, err := s.AppendRecordJSON(ctx, []byte("prefix:"), "acme", "odd", 2000)
		is.True(err != nil)
		is.Equal(string(got), "prefix:") // the buffer as it was
	})

	t.Run("errors are GetRecord's", func(t *testing.T) {
		_, err := s.AppendRecordJSON(ctx, nil, "acme", "odd", 99999)
		pdtest.Code(t, err, projectdata.ErrRecordNotFound)
		_, err = s.AppendRecordJSON(ctx, nil, "acme", "nope", 1)
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
		_, err = s.AppendRecordJSON(ctx, nil, "nope", "odd", 1)
		pdtest.Code(t, err, projectdata.ErrProjectNotFound)
	})
}

// TestAppendRecordListJSON shows that a page encoded straight from
// SQLite's columns is byte for byte what encoding/json writes for the
// RecordList that ListRecords returns: every column type and odd value,
// chosen columns, orders, where, cursors, counts, a page the result budget
// cuts short, a REAL JSON cannot hold, and errors.
func TestAppendRecordListJSON(t *testing.T) {
	is := is.New(t)
	s, raw := oddStore(t, &projectdata.Options{QueryMaxBytes: 4000})
	pdtest.Exec(t, raw, `INSERT INTO Odd (id, _under, zeta) VALUES (2000, 1e999, 'inf'), (2001, -1e999, '-inf')`)
	pdtest.Exec(t, raw, `UPDATE _pd_row_counts SET row_count = (SELECT count(*) FROM Odd); UPDATE _pd_row_counts_as_of SET change_id = (SELECT coalesce(max(last_id), 0) FROM _pd_changes)`)

	next := func(l projectdata.RecordList) projectdata.Cursor { return l.NextCursor }
	cases := map[string]projectdata.ListOptions{
		"defaults":               {},
		"a page of 5":            {Limit: 5},
		"offset":                 {Limit: 7, Offset: 9},
		"count none":             {Limit: 3, Count: projectdata.CountNone},
		"columns chosen":         {Columns: []string{"zeta", "id", "_under"}, Limit: 40},
		"one column":             {Columns: []string{"a_b"}},
		"ordered down":           {Order: "-zeta,Alpha", Limit: 8},
		"where":                  {Where: projectdata.Where{{Column: "Alpha", Op: projectdata.WhereGt, Value: 0}}, Limit: 4},
		"where none":             {Where: projectdata.Where{{Column: "id", Op: projectdata.WhereEq, Value: -5}}},
		"budget cuts it":         {Limit: 1000}, // QueryMaxBytes 4000: Truncated
		"the last rows":          {Limit: 10, Offset: 30},
		"order the key up":       {Order: "id", Limit: 2},
		"REALs JSON cannot hold": {Where: projectdata.Where{{Column: "id", Op: projectdata.WhereGe, Value: 2000}}},
	}
	list, err := s.ListRecords(ctx, "acme", "odd", cases["budget cuts it"])
	is.NoErr(err)
	is.True(list.Truncated) // the case is what it says
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			for page := 0; page < 3; page++ {
				list, err := s.ListRecords(ctx, "acme", "odd", opts)
				is.NoErr(err)
				want, err := json.Marshal(list)
				is.NoErr(err)
				got, err := s.AppendRecordListJSON(ctx, []byte("prefix:"), "acme", "odd", opts)
				is.NoErr(err)
				is.Equal(string(got), "prefix:"+string(want)) // same bytes as encoding/json
				if next(list) == "" || opts.Offset > 0 {
					break
				}
				opts.After = next(list) // and the pages after it
			}
		})
	}

	t.Run("a REAL JSON cannot hold is text, as in the Row", func(t *testing.T) {
		is := is.New(t)
		got, err := s.AppendRecordListJSON(ctx, nil, "acme", "odd", cases["REALs JSON cannot hold"])
		is.NoErr(err)
		is.True(strings.Contains(string(got), `{"Alpha":null,"B":null,"_under":"Inf","a_b":null,"b9":null,"id":2000,"when_at":null,"zeta":"inf"}`))
	})

	t.Run("errors are ListRecords'", func(t *testing.T) {
		is := is.New(t)
		for _, opts := range []projectdata.ListOptions{{Order: "nope"}, {Columns: []string{"id", "id"}}, {After: "garbage"}, {Offset: -1}} {
			_, want := s.ListRecords(ctx, "acme", "odd", opts)
			got, err := s.AppendRecordListJSON(ctx, []byte("prefix:"), "acme", "odd", opts)
			is.Equal(projectdata.ErrorCode(err), projectdata.ErrorCode(want))
			is.True(err != nil)
			is.Equal(string(got), "prefix:")
		}
		_, err := s.AppendRecordListJSON(ctx, nil, "acme", "nope", projectdata.ListOptions{})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
}

// TestAppendQueryJSON shows that a query result encoded straight from
// SQLite's columns is byte for byte what encoding/json writes for the
// QueryResult that Query returns (the duration aside, which differs from
// run to run), and that errors are Query's.
func TestAppendQueryJSON(t *testing.T) {
	is := is.New(t)
	s, raw := oddStore(t, &projectdata.Options{QueryMaxBytes: 3000})
	pdtest.Exec(t, raw, `INSERT INTO Odd (id, _under, zeta) VALUES (2000, 1e999, 'inf'), (2001, -1e999, '-inf')`)
	duration := regexp.MustCompile(`"duration_ms":[-+.0-9e]+`)
	for _, req := range []projectdata.QueryRequest{
		{SQL: "SELECT * FROM Odd WHERE id < 20"},
		{SQL: "SELECT * FROM Odd WHERE id >= 20 AND id < 40"},
		{SQL: "SELECT * FROM Odd WHERE id >= 2000"},
		{SQL: "SELECT id, zeta AS \"<k>\", id, Alpha * 2 FROM Odd WHERE id > ? ORDER BY id DESC", Args: []any{10}},
		{SQL: "SELECT id FROM Odd", Limit: 5},
		{SQL: "SELECT id FROM Odd WHERE id < 0"},
		{SQL: "SELECT count(*) AS n, group_concat(zeta) FROM Odd WHERE id < :top", Named: map[string]any{"top": 5}},
		{SQL: "EXPLAIN QUERY PLAN SELECT * FROM Odd WHERE id = 1"},
	} {
		res, err := s.Query(ctx, "acme", req)
		is.NoErr(err)
		want, err := json.Marshal(res)
		is.NoErr(err)
		got, err := s.AppendQueryJSON(ctx, []byte("prefix:"), "acme", req)
		is.NoErr(err)
		is.Equal(duration.ReplaceAllString(string(got), `"duration_ms":0`), "prefix:"+duration.ReplaceAllString(string(want), `"duration_ms":0`)) // same bytes as encoding/json
	}

	for _, req := range []projectdata.QueryRequest{
		{SQL: "SELECT printf('%.*c', 500, 'x') FROM Odd"}, // past QueryMaxBytes
		{SQL: "SELECT * FROM _pd_tokens"},
		{SQL: "DELETE FROM Odd"},
		{SQL: "SELECT ?"},
	} {
		_, want := s.Query(ctx, "acme", req)
		is.True(want != nil)
		got, err := s.AppendQueryJSON(ctx, []byte("prefix:"), "acme", req)
		is.Equal(projectdata.ErrorCode(err), projectdata.ErrorCode(want))
		is.Equal(err.Error(), want.Error())
		is.Equal(string(got), "prefix:")
	}
}
