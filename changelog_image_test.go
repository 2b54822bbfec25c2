package projectdata_test

import (
	"encoding/json"
	"math"
	"strings"
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

// TestImagesKeepOddValues: row images, of inserts and updates, carry every
// value as stored, whatever it takes to write it in JSON.
func TestImagesKeepOddValues(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "odd", Columns: []projectdata.ColumnDef{
		{Name: "text"}, {Name: "real", Type: "REAL"}, {Name: "n", Type: "INTEGER"},
	}})
	is.NoErr(err)
	odd := []string{`"quoted" \back\slash`, "<a href='x'>&amp;</a>", "\x01\b\f\n\r\t\x1f\x7f", "line\u2028sep\u2029", "é日本🎉", ""}
	var rows []projectdata.Row
	for i, v := range odd {
		rows = append(rows, projectdata.Row{"text": v, "real": float64(i) + 0.5, "n": -9223372036854775808 + int64(i)})
	}
	res, err := s.Insert(ctx, "acme", "odd", rows)
	is.NoErr(err)
	_, err = s.UpdateRecord(ctx, "acme", "odd", res.InsertedIDs[0], projectdata.Row{"text": odd[1] + odd[2], "real": 1e21})
	is.NoErr(err)
	seen := 0
	for _, c := range changesAfter(t, s, 0) {
		if c.Table != "odd" || c.Row == nil {
			continue
		}
		row, err := s.GetRecord(ctx, "acme", "odd", c.Key)
		is.NoErr(err)
		if c.Op == projectdata.ChangeInsert {
			i := seen
			is.Equal(c.Row["text"], odd[i])
			is.Equal(c.Row["real"], float64(i)+0.5)
			is.Equal(c.Row["n"], int64(-9223372036854775808+int64(i)))
		} else {
			is.Equal(c.Row, row) // the update's image is the row now
		}
		seen++
	}
	is.Equal(seen, len(odd)+1)
}

// TestImagesOfNegativeZero: SQLite stores a REAL zero as 0.0 whatever its
// sign, so an insert image of -0 (given, or a column's default) is 0.0 too,
// as the row reads; a follower would keep -0.0 otherwise.
func TestImagesOfNegativeZero(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "z", Columns: []projectdata.ColumnDef{
		{Name: "r", Type: "REAL"}, {Name: "n", Type: "NUMERIC"}, {Name: "d", Type: "REAL", Default: json.Number("-0.0")},
	}})
	is.NoErr(err)
	_, err = s.InsertJSON(ctx, "acme", "z", strings.NewReader(`[{"r":-0.0,"n":-0.0},{"r":-0,"n":-0e5},{"r":"-0.0","n":"-0.0"},{"r":-0.000000000000000000000e-3}]`))
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "z", []projectdata.Row{{"r": math.Copysign(0, -1), "n": math.Copysign(0, -1), "d": json.Number("-0")}})
	is.NoErr(err)
	images := 0
	for _, c := range changesAfter(t, s, 0) {
		if c.Op != projectdata.ChangeInsert {
			continue
		}
		images++
		row, err := s.GetRecord(ctx, "acme", "z", c.Key)
		is.NoErr(err)
		image, err := json.Marshal(c.Row)
		is.NoErr(err)
		stored, err := json.Marshal(row)
		is.NoErr(err)
		is.Equal(string(image), string(stored)) // the image is the row as stored
	}
	is.Equal(images, 5)
}
