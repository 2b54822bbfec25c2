package projectdata_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestUpdateRecord(t *testing.T) {
	t.Run("ReturnsTheUpdatedRow", func(t *testing.T) {
		is := is.New(t)
		s := peopleStore(t)
		row, err := s.UpdateRecord(ctx, "acme", "people", "2", projectdata.Row{"age": "41", "TAG": "x"})
		is.NoErr(err)
		is.Equal(row, projectdata.Row{"id": int64(2), "name": "bob", "age": int64(41), "score": nil, "code": "7", "tag": "x"})
		got, err := s.GetRecord(ctx, "acme", "people", 2)
		is.NoErr(err)
		is.Equal(got, row)
		other, err := s.GetRecord(ctx, "acme", "people", 1)
		is.NoErr(err)
		is.Equal(other["tag"], nil) // one row only
	})
	t.Run("CanSetNull", func(t *testing.T) {
		is := is.New(t)
		s := peopleStore(t)
		row, err := s.UpdateRecord(ctx, "acme", "people", 1, projectdata.Row{"score": nil})
		is.NoErr(err)
		is.Equal(row["score"], nil)
	})
	cases := []struct {
		name string
		id   any
		data projectdata.Row
		code projectdata.Code
	}{
		{"UnknownID", 99, projectdata.Row{"age": 1}, projectdata.ErrRecordNotFound},
		{"IDNotAKey", "abc", projectdata.Row{"age": 1}, projectdata.ErrRecordNotFound},
		{"EmptyData", 1, projectdata.Row{}, projectdata.ErrInvalidRequest},
		{"NilData", 1, nil, projectdata.ErrInvalidRequest},
		{"ValueNotFittingItsColumn", 1, projectdata.Row{"age": "abc"}, projectdata.ErrInvalidColumnValue},
		{"FractionIntoInteger", 1, projectdata.Row{"age": 1.5}, projectdata.ErrInvalidColumnValue},
		{"NestedValue", 1, projectdata.Row{"tag": []any{"a"}}, projectdata.ErrInvalidColumnValue},
		{"UnknownColumn", 1, projectdata.Row{"colour": "red"}, projectdata.ErrColumnNotFound},
		{"ColumnTwice", 1, projectdata.Row{"age": 1, "AGE": 2}, projectdata.ErrInvalidRequest},
		{"NullIntoNotNull", 1, projectdata.Row{"name": nil}, projectdata.ErrNotNullViolation},
		{"DuplicateKey", 1, projectdata.Row{"id": 2}, projectdata.ErrUniqueViolation},
		{"NullKey", 1, projectdata.Row{"id": nil}, projectdata.ErrNotNullViolation}, // an INTEGER key: SQLite says mismatch
	}
	for _, c := range cases {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s := peopleStore(t)
			before, err := s.GetRecord(ctx, "acme", "people", 1)
			is.NoErr(err)
			_, err = s.UpdateRecord(ctx, "acme", "people", c.id, c.data)
			pdtest.Code(t, err, c.code)
			after, err := s.GetRecord(ctx, "acme", "people", 1)
			is.NoErr(err)
			is.Equal(after, before) // nothing written
		})
	}
	t.Run("UnknownTable", func(t *testing.T) {
		s := peopleStore(t)
		_, err := s.UpdateRecord(ctx, "acme", "nope", 1, projectdata.Row{"age": 1})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
	t.Run("NeedsTheWriteRole", func(t *testing.T) {
		s := peopleStore(t)
		_, err := s.UpdateRecord(pdtest.As(t, s, projectdata.RoleRead), "acme", "people", 1, projectdata.Row{"age": 1})
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	})
}

// TestUpdateRecordErrorsKeepTheirCause: a constraint failure is wrapped
// with the table's name, not re-formatted: the cause stays reachable.
func TestUpdateRecordErrorsKeepTheirCause(t *testing.T) {
	is := is.New(t)
	s := peopleStore(t)
	_, err := s.UpdateRecord(ctx, "acme", "people", 1, projectdata.Row{"id": 2})
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	is.True(strings.HasPrefix(err.Error(), `table "people": `))
	var cause *projectdata.Error
	is.True(errors.As(err, &cause))
	is.True(!strings.Contains(cause.Message, "people")) // the cause, unchanged
}

// TestUpdateNamesTheNotNullColumn: NULL for a NOT NULL column is refused
// with a message that names the column and the table, as an insert's
// refusal does, by a single update and by a bulk one, even one whose where
// matches no row.
func TestUpdateNamesTheNotNullColumn(t *testing.T) {
	is := is.New(t)
	s := peopleStore(t)
	want := `column "name" of table "people" must not be NULL`
	_, err := s.UpdateRecord(ctx, "acme", "people", 1, projectdata.Row{"age": 31, "NAME": nil})
	pdtest.Code(t, err, projectdata.ErrNotNullViolation)
	is.Equal(err.Error(), want)
	for _, key := range []int{1, 99} {
		_, err = s.UpdateRecords(ctx, "acme", "people", projectdata.BulkUpdate{
			Data: projectdata.Row{"name": nil}, Where: projectdata.Where{{Column: "id", Op: "=", Value: key}}})
		pdtest.Code(t, err, projectdata.ErrNotNullViolation)
		is.Equal(err.Error(), want)
	}
	row, err := s.GetRecord(ctx, "acme", "people", 1)
	is.NoErr(err)
	is.Equal(row["name"], "ann")
	is.Equal(row["age"], int64(30)) // nothing written
}
