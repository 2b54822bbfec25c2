package projectdata_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// checkBulkChanges runs a bulk update of the rows with n = 1 and a bulk
// delete of those with n = 0 on a table of rows with n 0, 1 or 2 (key
// column key), and checks against the rows before: the counts, every row
// after, and that replaying the log's changes gives the same rows.
func checkBulkChanges(t *testing.T, s *projectdata.Store, table, key string) {
	t.Helper()
	is := is.New(t)
	byKey := map[any]projectdata.Row{}
	for row, err := range s.Rows(ctx, "acme", table, projectdata.ListOptions{Limit: 1000}) {
		is.NoErr(err)
		byKey[row[key]] = row
	}
	var ones, zeros int64
	for _, row := range byKey {
		switch row["n"] {
		case int64(1):
			ones++
		case int64(0):
			zeros++
		}
	}
	is.True(ones > 0 && zeros > 0)
	from, err := s.LastChangeID(ctx, "acme")
	is.NoErr(err)

	upd, err := s.UpdateRecords(ctx, "acme", table, projectdata.BulkUpdate{Data: projectdata.Row{"m": "updated"}, Where: projectdata.Where{{Column: "n", Op: "=", Value: 1}}})
	is.NoErr(err)
	is.Equal(upd.AffectedRows, ones) // each row with n = 1, once, and no other
	del, err := s.DeleteRecords(ctx, "acme", table, projectdata.BulkDelete{Where: projectdata.Where{{Column: "n", Op: "=", Value: 0}}})
	is.NoErr(err)
	is.Equal(del.AffectedRows, zeros)

	want := map[any]projectdata.Row{}
	for k, row := range byKey {
		switch row["n"] {
		case int64(1):
			row["m"] = "updated"
			want[k] = row
		case int64(2):
			want[k] = row
		}
	}
	got := map[any]projectdata.Row{}
	for row, err := range s.Rows(ctx, "acme", table, projectdata.ListOptions{Limit: 1000}) {
		is.NoErr(err)
		got[row[key]] = row
	}
	is.Equal(got, want)

	replay := byKey
	for c, err := range s.FollowChanges(ctx, "acme", projectdata.ChangeQuery{After: from}) {
		is.NoErr(err)
		switch c.Op {
		case projectdata.ChangeUpdate:
			replay[c.Key] = c.Row
		case projectdata.ChangeDelete:
			delete(replay, c.Key)
		}
		if c.ID == from+ones+zeros {
			break
		}
	}
	is.Equal(replay, want)
}

// TestBulkChangesReachKeysBelowOne: bulk updates and deletes, which work
// in chunks of rows in rowid order, reach the rows whose INTEGER PRIMARY
// KEY (their rowid) is zero or negative, the smallest int64 included.
func TestBulkChangesReachKeysBelowOne(t *testing.T) {
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "t", projectdata.ColumnDef{Name: "n", Type: "INTEGER"}, projectdata.ColumnDef{Name: "m"})
	var rows []projectdata.Row
	for i := range 2500 { // more than one chunk on either side of zero
		rows = append(rows, projectdata.Row{"id": int64(i - 1500), "n": i % 3})
	}
	rows = append(rows, projectdata.Row{"id": int64(math.MinInt64), "n": 1}, projectdata.Row{"id": int64(math.MinInt64 + 1), "n": 0}, projectdata.Row{"id": int64(math.MaxInt64), "n": 1})
	if _, err := s.Insert(ctx, "acme", "t", rows); err != nil {
		t.Fatal(err)
	}
	checkBulkChanges(t, s, "t", "id")
}

// TestBulkChangesWithAColumnNamedRowid: a column named rowid, oid or
// _rowid_ hides the rowid by that name; bulk updates and deletes still
// change exactly the rows their where selects.
func TestBulkChangesWithAColumnNamedRowid(t *testing.T) {
	cases := []struct {
		name    string
		key     projectdata.ColumnDef
		hidden  []string
		keyName string
	}{
		{"Rowid", projectdata.ColumnDef{Name: "k", Primary: true}, []string{"rowid"}, "k"},
		{"RowidAndOid", projectdata.ColumnDef{Name: "k", Primary: true}, []string{"ROWID", "oid"}, "k"},
		{"AllThreeTextKey", projectdata.ColumnDef{Name: "k", Primary: true}, []string{"rowid", "oid", "_rowid_"}, "k"},
		{"AllThreeIntegerKey", projectdata.ColumnDef{Name: "k", Type: "INTEGER", Primary: true}, []string{"rowid", "oid", "_rowid_"}, "k"},
		{"RowidBesideTheDefaultKey", projectdata.ColumnDef{Name: "n2"}, []string{"rowid"}, "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := pdtest.NewProject(t, nil)
			cols := []projectdata.ColumnDef{c.key, {Name: "n", Type: "INTEGER"}, {Name: "m"}}
			for _, name := range c.hidden {
				cols = append(cols, projectdata.ColumnDef{Name: name, Type: "INTEGER"})
			}
			createTable(t, s, "t", cols...)
			var rows []projectdata.Row
			for i := range 2500 {
				row := projectdata.Row{"n": i % 3}
				if c.keyName == "k" {
					row["k"] = fmt.Sprintf("%05d", 3000-i) // keys in the other order than rowids
					if c.key.Type == "INTEGER" {
						row["k"] = 3000 - i
					}
				}
				for _, name := range c.hidden {
					row[name] = 7 // the same value in every row
				}
				rows = append(rows, row)
			}
			if _, err := s.Insert(ctx, "acme", "t", rows); err != nil {
				t.Fatal(err)
			}
			checkBulkChanges(t, s, "t", c.keyName)
		})
	}
}
