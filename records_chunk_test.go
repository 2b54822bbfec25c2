package projectdata_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

// namesByID reads the name of every row of a table, by its key.
func namesByID(t *testing.T, s *projectdata.Store, table string) map[string]string {
	t.Helper()
	res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: "SELECT * FROM " + table, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range res.Rows {
		names[fmt.Sprint(r["id"])] = fmt.Sprint(r["name"])
	}
	return names
}

// numbered returns n rows named r<from>… with code set when withCode.
func numbered(from, n int, withCode bool) []projectdata.Row {
	rows := make([]projectdata.Row, n)
	for i := range rows {
		rows[i] = projectdata.Row{"name": fmt.Sprintf("r%d", from+i)}
		if withCode {
			rows[i]["code"] = fmt.Sprintf("c%d", from+i)
		}
	}
	return rows
}

// TestInsertIDsInChunks: large inserts go in multi-row statements; every
// inserted id is the key of the row it names, whatever mix of given keys,
// assigned rowids and shapes the rows have.
func TestInsertIDsInChunks(t *testing.T) {
	cases := map[string]func() []projectdata.Row{
		"assigned rowids": func() []projectdata.Row { return numbered(0, 100, false) },
		"given keys": func() []projectdata.Row {
			rows := numbered(0, 100, false)
			for i, r := range rows {
				r["id"] = 1000 + 3*i
			}
			return rows
		},
		"given and assigned mixed": func() []projectdata.Row {
			rows := numbered(0, 100, false)
			for i, r := range rows {
				switch {
				case i%40 < 20:
					r["id"] = 5000 + i
				case i%7 == 0:
					r["id"] = nil
				}
			}
			return rows
		},
		"assigned, given up to the last rowid, assigned": func() []projectdata.Row {
			rows := numbered(0, 100, false)
			for i, r := range rows[32:64] {
				r["id"] = int64(math.MaxInt64 - 31 + i)
			}
			return rows
		},
		"shapes alternating": func() []projectdata.Row {
			rows := numbered(0, 100, false)
			for i, r := range rows {
				if i/10%2 == 1 {
					r["qty"] = i
				}
			}
			return rows
		},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			s := itemsStore(t, nil)
			_, err := s.Insert(ctx, "acme", "items", numbered(100, 5, false)) // rows before
			is.NoErr(err)
			want := rows()
			res, err := s.Insert(ctx, "acme", "items", want)
			is.NoErr(err)
			is.Equal(res.InsertedCount, len(want))
			names := namesByID(t, s, "items")
			is.Equal(len(names), 105)
			for i, id := range res.InsertedIDs {
				is.Equal(names[fmt.Sprint(id)], fmt.Sprintf("r%d", i)) // inserted_ids[i] is row i's key
			}
		})
	}
}

// TestInsertChunkNearTheLastRowid: past the largest rowid SQLite picks
// free rowids at random; the rows then go one by one and the ids are
// still theirs.
func TestInsertChunkNearTheLastRowid(t *testing.T) {
	is := is.New(t)
	s := itemsStore(t, nil)
	_, err := s.Insert(ctx, "acme", "items", []projectdata.Row{{"id": int64(math.MaxInt64 - 40), "name": "top"}})
	is.NoErr(err)
	res, err := s.Insert(ctx, "acme", "items", numbered(0, 100, false))
	is.NoErr(err)
	names := namesByID(t, s, "items")
	for i, id := range res.InsertedIDs {
		is.Equal(names[fmt.Sprint(id)], fmt.Sprintf("r%d", i))
	}
}

// TestInsertChunkFailureNamesTheRow: a row failing inside a chunk fails
// the insert as it would alone, naming that row, and nothing is stored.
func TestInsertChunkFailureNamesTheRow(t *testing.T) {
	for _, failing := range []int{0, 31, 40, 63, 98} {
		t.Run(fmt.Sprint(failing), func(t *testing.T) {
			is := is.New(t)
			s := itemsStore(t, nil)
			rows := numbered(0, 100, true)
			rows[failing]["code"] = "c99" // the code of the last row
			if failing == 98 {
				rows[failing]["code"] = "c0"
			}
			_, err := s.Insert(ctx, "acme", "items", rows)
			is.Equal(projectdata.ErrorCode(err), projectdata.ErrUniqueViolation)
			row, dup := failing, 99
			if failing == 98 {
				dup = 0
			}
			is.Equal(err.Error(), fmt.Sprintf("row %d: column \"code\" value %q already exists in table \"items\"", max(row, dup), fmt.Sprintf("c%d", dup)))
			is.Equal(total(t, s, "items"), int64(0))

			rows[failing]["name"] = nil // NOT NULL
			rows[failing]["code"] = fmt.Sprintf("c%d", failing)
			_, err = s.Insert(ctx, "acme", "items", rows)
			is.Equal(projectdata.ErrorCode(err), projectdata.ErrNotNullViolation)
			is.True(strings.HasPrefix(err.Error(), fmt.Sprintf("row %d: ", failing)))
			is.Equal(total(t, s, "items"), int64(0))
		})
	}
}
