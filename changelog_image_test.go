package projectdata_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// The writer encodes insert images with what it kept from the inserts
// before (the record's head, the columns' defaults, where each column sits
// in a statement): every image must still be the row as stored when
// inserts alternate between tables and the schema changes between them.
func TestInsertImagesFollowSchemaChanges(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	for _, name := range []string{"a", "b"} {
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: name, Columns: []projectdata.ColumnDef{
			{Name: "name"}, {Name: "note", Default: "first"}, {Name: "qty", Type: "INTEGER", Default: 1},
		}})
		is.NoErr(err)
	}
	var last int64
	inserts := 0
	// insert inserts rows and checks each image against the row as stored
	// right after.
	insert := func(table string, rows ...projectdata.Row) {
		t.Helper()
		_, err := s.Insert(ctx, "acme", table, rows)
		is.NoErr(err)
		for _, c := range changesAfter(t, s, last) {
			last = c.ID
			if c.Op != projectdata.ChangeInsert {
				continue
			}
			inserts++
			row, err := s.GetRecord(ctx, "acme", c.Table, c.Key)
			is.NoErr(err)
			is.Equal(c.Row, row) // the image is the row as stored
		}
	}
	insert("a", projectdata.Row{"name": "x"}, projectdata.Row{"name": "y", "qty": 5})
	insert("b", projectdata.Row{"qty": 7}, projectdata.Row{"name": "z", "note": nil})
	insert("a", projectdata.Row{"name": "x2"}) // the same statement as before
	_, err := s.UpdateColumn(ctx, "acme", "a", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("second")})
	is.NoErr(err)
	insert("a", projectdata.Row{"name": "x3"}) // same statement, new default
	_, err = s.AddColumn(ctx, "acme", "a", projectdata.ColumnDef{Name: "extra", Type: "REAL", Default: 2.5})
	is.NoErr(err)
	insert("a", projectdata.Row{"name": "x4"}, projectdata.Row{"name": "x5", "extra": 1})
	_, err = s.UpdateColumn(ctx, "acme", "a", "note", projectdata.ColumnUpdate{Name: projectdata.SetTo("memo")})
	is.NoErr(err)
	insert("a", projectdata.Row{"name": "x6"}, projectdata.Row{"memo": "given"})
	insert("b", projectdata.Row{"name": "w"})

	is.Equal(inserts, 11)
}
