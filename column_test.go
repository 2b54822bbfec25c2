package projectdata_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// newPeople is a project with table people (id INTEGER PRIMARY KEY, name
// TEXT, n INTEGER, note TEXT) holding four rows: name has a NULL, n has a
// duplicate and a NULL, note is NULL everywhere.
func newPeople(t testing.TB, opts *projectdata.Options) (*rawProject, []projectdata.Column) {
	t.Helper()
	r := newRawProject(t, opts)
	cols := r.createTable(t, projectdata.TableDef{Name: "people", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "n", Type: "INTEGER"}, {Name: "note"},
	}})
	r.insert(t, "people", []string{"id", "name", "n", "note"},
		[]any{1, "ann", 1, nil},
		[]any{2, "bob", 1, nil},
		[]any{3, nil, 2, nil},
		[]any{4, "dan", nil, nil},
	)
	return r, cols
}

func id(c projectdata.Column) string { return strconv.FormatInt(c.ID, 10) }

func TestAddColumn(t *testing.T) {
	t.Run("DefaultsToNullableTextAtTheEnd", func(t *testing.T) {
		is := is.New(t)
		r, before := newPeople(t, nil)
		col, err := r.s.AddColumn(ctx, "acme", "PEOPLE", projectdata.ColumnDef{Name: "email"})
		is.NoErr(err)
		is.Equal(col.Name, "email")
		is.Equal(col.TableName, "people")
		is.Equal(col.Type, projectdata.TypeText)
		is.True(bool(col.IsNullable))
		is.True(!bool(col.IsUnique))
		is.True(!bool(col.IsPrimary))
		is.Equal(col.DefaultValue, nil)
		_, cols, err := r.s.ListColumns(ctx, "acme", "people")
		is.NoErr(err)
		is.Equal(cols, append(before, col))
		is.Equal(r.rows(t, "people")[0], "INTEGER:1|TEXT:ann|INTEGER:1|NULL:|NULL:")
		next, err := r.s.AddColumn(ctx, "acme", "people", projectdata.ColumnDef{Name: "phone"})
		is.NoErr(err)
		_, cols, err = r.s.ListColumns(ctx, "acme", "people")
		is.NoErr(err)
		is.Equal(cols[len(cols)-1], next)
	})
	t.Run("ExistingRowsGetTheDefault", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		col, err := r.s.AddColumn(ctx, "acme", "people", projectdata.ColumnDef{Name: "qty", Type: "integer", NotNull: true, Default: "5"})
		is.NoErr(err)
		is.Equal(col.Type, projectdata.TypeInteger)
		is.True(!bool(col.IsNullable))
		is.Equal(col.DefaultValue, json.Number("5"))
		for _, row := range r.rows(t, "people") {
			is.True(strings.HasSuffix(row, "|INTEGER:5"))
		}
		is.True(r.tryInsert("people", []string{"qty"}, []any{nil}) != nil) // NOT NULL holds
	})
	t.Run("UniqueColumnRebuildsAndIsEnforced", func(t *testing.T) {
		is := is.New(t)
		r, before := newPeople(t, nil)
		rows := r.rows(t, "people")
		col, err := r.s.AddColumn(ctx, "acme", "people", projectdata.ColumnDef{Name: "code", Unique: true})
		is.NoErr(err)
		is.True(bool(col.IsUnique))
		for i, row := range r.rows(t, "people") {
			is.Equal(row, rows[i]+"|NULL:")
		}
		_, cols, err := r.s.ListColumns(ctx, "acme", "people")
		is.NoErr(err)
		is.Equal(cols[:len(before)], before) // ids and definitions kept
		r.insert(t, "people", []string{"code"}, []any{"x"})
		err = r.tryInsert("people", []string{"code"}, []any{"x"})
		is.True(errors.Is(err, sqlite3.CONSTRAINT_UNIQUE))
	})
	t.Run("NotNullWithoutDefaultOnEmptyTable", func(t *testing.T) {
		is := is.New(t)
		r := newRawProject(t, nil)
		r.createTable(t, projectdata.TableDef{Name: "empty"})
		col, err := r.s.AddColumn(ctx, "acme", "empty", projectdata.ColumnDef{Name: "must", NotNull: true})
		is.NoErr(err)
		is.True(!bool(col.IsNullable))
		err = r.tryInsert("empty", []string{"must"}, []any{nil})
		is.True(errors.Is(err, sqlite3.CONSTRAINT_NOTNULL))
	})
	t.Run("UniqueWithDefaultOnOneRow", func(t *testing.T) {
		is := is.New(t)
		r := newRawProject(t, nil)
		r.createTable(t, projectdata.TableDef{Name: "one"})
		r.insert(t, "one", []string{"id"}, []any{1})
		_, err := r.s.AddColumn(ctx, "acme", "one", projectdata.ColumnDef{Name: "code", Unique: true, Default: "a"})
		is.NoErr(err)
		is.Equal(r.rows(t, "one"), []string{"INTEGER:1|TEXT:a"})
	})
	t.Run("ReadRoleIsDenied", func(t *testing.T) {
		r, _ := newPeople(t, nil)
		_, err := r.s.AddColumn(pdtest.As(t, r.s, projectdata.RoleRead), "acme", "people", projectdata.ColumnDef{Name: "x"})
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	})
}

// TestAddColumnRefusals shows each refused column changes nothing: not the
// table's SQL, its rows, its indexes or its metadata.
func TestAddColumnRefusals(t *testing.T) {
	cases := []struct {
		name  string
		table string
		def   projectdata.ColumnDef
		code  projectdata.Code
		msg   string // part of the message, if checked
	}{
		{"PrimaryKey", "people", projectdata.ColumnDef{Name: "pk", Primary: true}, projectdata.ErrUnsupportedColumnChange, "a primary key column cannot be added to an existing table"},
		{"EmptyName", "people", projectdata.ColumnDef{Name: ""}, projectdata.ErrInvalidColumnName, ""},
		{"QuoteInName", "people", projectdata.ColumnDef{Name: `a"b`}, projectdata.ErrInvalidColumnName, ""},
		{"ApostropheInName", "people", projectdata.ColumnDef{Name: "a'b"}, projectdata.ErrInvalidColumnName, ""},
		{"SpaceInName", "people", projectdata.ColumnDef{Name: "a b"}, projectdata.ErrInvalidColumnName, ""},
		{"SemicolonInName", "people", projectdata.ColumnDef{Name: "x; DROP TABLE people"}, projectdata.ErrInvalidColumnName, ""},
		{"ReservedName", "people", projectdata.ColumnDef{Name: "_PD_x"}, projectdata.ErrInvalidColumnName, ""},
		{"NameTakenInOtherCase", "people", projectdata.ColumnDef{Name: "NAME"}, projectdata.ErrColumnExists, `column "name"`},
		{"NameOfPrimaryKey", "people", projectdata.ColumnDef{Name: "Id"}, projectdata.ErrColumnExists, ""},
		{"UnknownType", "people", projectdata.ColumnDef{Name: "x", Type: "BLOB"}, projectdata.ErrInvalidColumnType, ""},
		{"DefaultNotFitting", "people", projectdata.ColumnDef{Name: "x", Type: "INTEGER", Default: "abc"}, projectdata.ErrInvalidColumnValue, ""},
		{"NestedDefault", "people", projectdata.ColumnDef{Name: "x", Default: []any{1}}, projectdata.ErrInvalidColumnValue, ""},
		{"NotNullWithoutDefaultOverRows", "people", projectdata.ColumnDef{Name: "x", NotNull: true}, projectdata.ErrInvalidColumnChange, "has rows: a NOT NULL column \"x\" needs a default"},
		{"UniqueDefaultOverRows", "people", projectdata.ColumnDef{Name: "x", Unique: true, Default: "same"}, projectdata.ErrUniqueViolation, ""},
		{"UnknownTable", "nope", projectdata.ColumnDef{Name: "x"}, projectdata.ErrTableNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			r, _ := newPeople(t, nil)
			before := r.snapshot(t, "people")
			_, err := r.s.AddColumn(ctx, "acme", c.table, c.def)
			pdtest.Code(t, err, c.code)
			is.True(strings.Contains(err.Error(), c.msg))
			is.Equal(r.snapshot(t, "people"), before)
		})
	}
}

func TestUpdateColumn(t *testing.T) {
	unchanged := []struct {
		name, column string
		upd          projectdata.ColumnUpdate
	}{
		{"NothingSent", "name", projectdata.ColumnUpdate{}},
		{"SameValues", "n", projectdata.ColumnUpdate{
			Name:     projectdata.SetTo("n"),
			Type:     projectdata.SetTo("integer"), // the column has values: not a change, so not locked
			Nullable: projectdata.SetTo(true),
			Unique:   projectdata.SetTo(false),
			Default:  projectdata.SetTo[any](nil),
		}},
		{"PrimaryKeyMadeUniqueAndNotNull", "id", projectdata.ColumnUpdate{
			Nullable: projectdata.SetTo(false), Unique: projectdata.SetTo(true),
		}},
	}
	for _, c := range unchanged {
		t.Run(c.name+"ChangesNothing", func(t *testing.T) {
			is := is.New(t)
			r, _ := newPeople(t, nil)
			want, err := r.s.GetColumn(ctx, "acme", "people", c.column)
			is.NoErr(err)
			before := r.snapshot(t, "people")
			got, err := r.s.UpdateColumn(ctx, "acme", "people", c.column, c.upd)
			is.NoErr(err)
			is.Equal(got, want)
			is.Equal(r.snapshot(t, "people"), before)
		})
	}
	t.Run("RenameKeepsIDRowsAndIndexes", func(t *testing.T) {
		is := is.New(t)
		r, cols := newPeople(t, nil)
		tbl, err := r.s.GetTable(ctx, "acme", "people")
		is.NoErr(err)
		r.addManagedIndex(t, tbl.ID, "idx_people_name_n", `CREATE INDEX idx_people_name_n ON people (name, n)`)
		rows, managed := r.rows(t, "people"), r.managedIndexes(t)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", id(cols[2]), projectdata.ColumnUpdate{Name: projectdata.SetTo("Qty")})
		is.NoErr(err)
		is.Equal(got.ID, cols[2].ID)
		is.Equal(got.Name, "Qty")
		is.Equal(r.rows(t, "people"), rows)
		is.Equal(r.indexColumns(t, "idx_people_name_n"), []string{"name", "Qty"})
		is.Equal(r.managedIndexes(t), managed)
		byName, err := r.s.GetColumn(ctx, "acme", "people", "qty")
		is.NoErr(err)
		is.Equal(byName, got)
		_, err = r.s.GetColumn(ctx, "acme", "people", "n")
		pdtest.Code(t, err, projectdata.ErrColumnNotFound)
	})
	t.Run("RenameInCaseOnly", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "NAME", projectdata.ColumnUpdate{Name: projectdata.SetTo("Name")})
		is.NoErr(err)
		is.Equal(got.Name, "Name")
		is.True(strings.Contains(r.schemaSQL(t, "people")[0], `"Name" TEXT`))
	})
	t.Run("RenamePrimaryKey", func(t *testing.T) {
		is := is.New(t)
		r, cols := newPeople(t, nil)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "id", projectdata.ColumnUpdate{Name: projectdata.SetTo("person_id")})
		is.NoErr(err)
		is.Equal(got.ID, cols[0].ID)
		is.True(bool(got.IsPrimary))
		is.Equal(r.rows(t, "people")[0], "INTEGER:1|TEXT:ann|INTEGER:1|NULL:")
	})
	t.Run("TypeChangesWhileColumnHoldsOnlyNulls", func(t *testing.T) {
		is := is.New(t)
		r, cols := newPeople(t, nil)
		rows := r.rows(t, "people")
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("real")})
		is.NoErr(err)
		is.Equal(got.ID, cols[3].ID)
		is.Equal(got.Type, projectdata.TypeReal)
		is.Equal(r.rows(t, "people"), rows)
		is.True(strings.Contains(r.schemaSQL(t, "people")[0], `"note" REAL`))
		r.insert(t, "people", []string{"note"}, []any{"2.5"}) // REAL affinity now
		is.Equal(r.rows(t, "people")[4], "INTEGER:5|NULL:|NULL:|FLOAT:2.5")
	})
	t.Run("TypeChangeConvertsTheDefault", func(t *testing.T) {
		is := is.New(t)
		r := newRawProject(t, nil)
		r.createTable(t, projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "v", Default: "42"}}})
		got, err := r.s.UpdateColumn(ctx, "acme", "t", "v", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")})
		is.NoErr(err)
		is.Equal(got.DefaultValue, json.Number("42"))
		r.insert(t, "t", []string{"id"}, []any{1})
		is.Equal(r.rows(t, "t"), []string{"INTEGER:1|INTEGER:42"})
	})
	t.Run("NullabilityBothWays", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{
			Nullable: projectdata.SetTo(false), Default: projectdata.SetTo[any]("none"),
		})
		pdtest.Code(t, err, projectdata.ErrInvalidColumnChange) // a default does not fill the rows' NULLs
		r.each(t, `UPDATE people SET note = 'x', name = coalesce(name, 'cy')`, nil, nil)
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "name", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(false)})
		is.NoErr(err)
		is.True(!bool(got.IsNullable))
		is.True(errors.Is(r.tryInsert("people", []string{"name"}, []any{nil}), sqlite3.CONSTRAINT_NOTNULL))
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "name", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(true)})
		is.NoErr(err)
		is.True(bool(got.IsNullable))
		r.insert(t, "people", []string{"name"}, []any{nil})
	})
	t.Run("UniquenessBothWays", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		r.insert(t, "people", []string{"name"}, []any{nil}) // two NULLs do not break uniqueness
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "name", projectdata.ColumnUpdate{Unique: projectdata.SetTo(true)})
		is.NoErr(err)
		is.True(bool(got.IsUnique))
		is.True(errors.Is(r.tryInsert("people", []string{"name"}, []any{"ann"}), sqlite3.CONSTRAINT_UNIQUE))
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "name", projectdata.ColumnUpdate{Unique: projectdata.SetTo(false)})
		is.NoErr(err)
		is.True(!bool(got.IsUnique))
		r.insert(t, "people", []string{"name"}, []any{"ann"})
	})
	t.Run("DefaultSetAndCleared", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "n", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](json.Number("7"))})
		is.NoErr(err)
		is.Equal(got.DefaultValue, json.Number("7"))
		r.insert(t, "people", []string{"id"}, []any{10})
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "n", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](nil)})
		is.NoErr(err)
		is.Equal(got.DefaultValue, nil)
		r.insert(t, "people", []string{"id"}, []any{11})
		rows := r.rows(t, "people")
		is.Equal(rows[4:], []string{"INTEGER:10|NULL:|INTEGER:7|NULL:", "INTEGER:11|NULL:|NULL:|NULL:"})
	})
	t.Run("UpdatedAtMovesOnlyOnChange", func(t *testing.T) {
		is := is.New(t)
		clock := pdtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		r, cols := newPeople(t, &projectdata.Options{Now: clock.Now})
		clock.Advance(time.Hour)
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(true)})
		is.NoErr(err)
		is.Equal(got.UpdatedAt, cols[3].UpdatedAt)
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("-")})
		is.NoErr(err)
		is.Equal(got.UpdatedAt.Time, clock.Now())
		is.Equal(got.CreatedAt, cols[3].CreatedAt)
		clock.Advance(time.Hour)
		got, err = r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Name: projectdata.SetTo("remark")})
		is.NoErr(err)
		is.Equal(got.UpdatedAt.Time, clock.Now())
	})
	t.Run("ReadRoleIsDenied", func(t *testing.T) {
		r, _ := newPeople(t, nil)
		_, err := r.s.UpdateColumn(pdtest.As(t, r.s, projectdata.RoleRead), "acme", "people", "name", projectdata.ColumnUpdate{Name: projectdata.SetTo("x")})
		pdtest.Code(t, err, projectdata.ErrPermissionDenied)
	})
}

// TestUpdateColumnRefusals shows each refused change changes nothing: not
// the table's SQL, its rows, its indexes or its metadata.
func TestUpdateColumnRefusals(t *testing.T) {
	cases := []struct {
		name          string
		table, column string
		upd           projectdata.ColumnUpdate
		code          projectdata.Code
		msg           string // part of the message, if checked
	}{
		{"NotNullOverNulls", "people", "name", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(false)}, projectdata.ErrInvalidColumnChange, `column "name" holds NULL`},
		{"UniqueOverDuplicates", "people", "n", projectdata.ColumnUpdate{Unique: projectdata.SetTo(true)}, projectdata.ErrUniqueViolation, `column "n"`},
		{"TypeOfColumnWithValues", "people", "n", projectdata.ColumnUpdate{Type: projectdata.SetTo("TEXT")}, projectdata.ErrColumnTypeLocked, `column "n" holds values`},
		{"UnknownType", "people", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("VARCHAR(5)")}, projectdata.ErrInvalidColumnType, ""},
		{"EmptyType", "people", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("")}, projectdata.ErrInvalidColumnType, ""},
		{"DefaultNotFitting", "people", "n", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("abc")}, projectdata.ErrInvalidColumnValue, ""},
		{"NestedDefault", "people", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](map[string]any{"a": 1})}, projectdata.ErrInvalidColumnValue, ""},
		{"DefaultTooLong", "people", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](strings.Repeat("x", 4097))}, projectdata.ErrInvalidColumnValue, "at most 4096 bytes"},
		{"DefaultNotFittingNewType", "dflt", "v", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")}, projectdata.ErrInvalidColumnValue, ""},
		{"PrimaryKeyTypeWithRows", "people", "id", projectdata.ColumnUpdate{Type: projectdata.SetTo("TEXT")}, projectdata.ErrColumnTypeLocked, `column "id" holds values`},
		{"DefaultOfRowidKey", "people", "id", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](5)}, projectdata.ErrInvalidColumnValue, `assigns it`},
		{"PrimaryKeyNullable", "people", "id", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(true)}, projectdata.ErrUnsupportedColumnChange, ""},
		{"PrimaryKeyNotUnique", "people", "id", projectdata.ColumnUpdate{Unique: projectdata.SetTo(false)}, projectdata.ErrUnsupportedColumnChange, ""},
		{"RenameToTakenName", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("NOTE")}, projectdata.ErrColumnExists, `column "note"`},
		{"RenameToQuote", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo(`n"`)}, projectdata.ErrInvalidColumnName, ""},
		{"RenameToSpace", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("n n")}, projectdata.ErrInvalidColumnName, ""},
		{"RenameToSemicolon", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("n;DROP TABLE people")}, projectdata.ErrInvalidColumnName, ""},
		{"RenameToEmpty", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("")}, projectdata.ErrInvalidColumnName, ""},
		{"RenameToReserved", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("sqlite_n")}, projectdata.ErrInvalidColumnName, ""},
		{"RenameFailsWithOtherChange", "people", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("m"), Nullable: projectdata.SetTo(false)}, projectdata.ErrInvalidColumnChange, ""},
		{"UnknownColumn", "people", "nope", projectdata.ColumnUpdate{Name: projectdata.SetTo("x")}, projectdata.ErrColumnNotFound, ""},
		{"UnknownColumnID", "people", "999", projectdata.ColumnUpdate{Name: projectdata.SetTo("x")}, projectdata.ErrColumnNotFound, ""},
		{"UnknownTable", "nope", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("x")}, projectdata.ErrTableNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			r, _ := newPeople(t, nil)
			r.createTable(t, projectdata.TableDef{Name: "dflt", Columns: []projectdata.ColumnDef{{Name: "v", Default: "abc"}}})
			tbl, err := r.s.GetTable(ctx, "acme", "people")
			is.NoErr(err)
			r.addManagedIndex(t, tbl.ID, "idx_people_n", `CREATE INDEX idx_people_n ON people (n DESC, name)`)
			before, other := r.snapshot(t, "people"), r.snapshot(t, "dflt")
			_, err = r.s.UpdateColumn(ctx, "acme", c.table, c.column, c.upd)
			pdtest.Code(t, err, c.code)
			is.True(strings.Contains(err.Error(), c.msg))
			is.Equal(r.snapshot(t, "people"), before)
			is.Equal(r.snapshot(t, "dflt"), other)
		})
	}
}

// TestColumnTypeChangeRules: a column that holds values keeps its type
// (column_type_locked), even when its default fits only the new type; a
// column without values takes a new type, the primary key of an empty
// table included (spec, column rule 1).
func TestColumnTypeChangeRules(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	createTable(t, s, "lk", projectdata.ColumnDef{Name: "note", Default: "n/a"})
	_, err := s.Insert(ctx, "acme", "lk", []projectdata.Row{{"note": "hello"}})
	is.NoErr(err)
	_, err = s.UpdateColumn(ctx, "acme", "lk", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")})
	pdtest.Code(t, err, projectdata.ErrColumnTypeLocked)

	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "tpk", Columns: []projectdata.ColumnDef{{Name: "pk", Primary: true}, {Name: "v"}}})
	is.NoErr(err)
	col, err := s.UpdateColumn(ctx, "acme", "tpk", "pk", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")})
	is.NoErr(err)
	is.Equal(col.Type, projectdata.TypeInteger)
	is.Equal(bool(col.IsPrimary), true)
	res, err := s.Insert(ctx, "acme", "tpk", []projectdata.Row{{"v": "a"}, {"v": "b"}}) // an INTEGER key is assigned
	is.NoErr(err)
	is.Equal(res.InsertedIDs, []any{int64(1), int64(2)})
	_, err = s.UpdateColumn(ctx, "acme", "tpk", "pk", projectdata.ColumnUpdate{Type: projectdata.SetTo("TEXT")})
	pdtest.Code(t, err, projectdata.ErrColumnTypeLocked)

	// A TEXT key's default would become one SQLite ignores, as the key
	// turns INTEGER: the change is refused unless it drops the default.
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "dpk", Columns: []projectdata.ColumnDef{{Name: "pk", Primary: true, Default: "7"}, {Name: "v"}}})
	is.NoErr(err)
	_, err = s.UpdateColumn(ctx, "acme", "dpk", "pk", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER")})
	pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
	col, err = s.UpdateColumn(ctx, "acme", "dpk", "pk", projectdata.ColumnUpdate{Type: projectdata.SetTo("INTEGER"), Default: projectdata.SetTo[any](nil)})
	is.NoErr(err)
	is.Equal(col.DefaultValue, nil)
}

// TestFailureInsideRebuildRollsBack makes a rebuild fail after it has
// dropped the old table (a view on the table, which the API never
// creates, stops the rename of the new one) and shows the table, rows,
// indexes and metadata are as they were.
func TestFailureInsideRebuildRollsBack(t *testing.T) {
	is := is.New(t)
	r, _ := newPeople(t, nil)
	tbl, err := r.s.GetTable(ctx, "acme", "people")
	is.NoErr(err)
	r.addManagedIndex(t, tbl.ID, "idx_people_n", `CREATE INDEX idx_people_n ON people (n)`)
	is.NoErr(r.db.Exec(`CREATE VIEW people_view AS SELECT name FROM people`))
	before := r.snapshot(t, "people")
	_, err = r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("x")})
	pdtest.Code(t, err, projectdata.ErrInternal)
	is.Equal(r.snapshot(t, "people"), before)
	// The Store still works on the table once the obstacle is gone.
	is.NoErr(r.db.Exec(`DROP VIEW people_view`))
	_, err = r.s.UpdateColumn(ctx, "acme", "people", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("x")})
	is.NoErr(err)
}

func TestColumnUpdateJSON(t *testing.T) {
	t.Run("EveryFieldSet", func(t *testing.T) {
		is := is.New(t)
		var upd projectdata.ColumnUpdate
		is.NoErr(json.Unmarshal([]byte(`{"new_column_name": "b", "column_type": "integer", "is_nullable": false,
			"default_value": 9007199254740993, "is_unique": true}`), &upd))
		is.Equal(upd.Name, projectdata.SetTo("b"))
		is.Equal(upd.Type, projectdata.SetTo("integer"))
		is.Equal(upd.Nullable, projectdata.SetTo(false))
		is.Equal(upd.Default, projectdata.SetTo[any](json.Number("9007199254740993"))) // exact, not a float
		is.Equal(upd.Unique, projectdata.SetTo(true))
	})
	t.Run("NullDefaultClearsIt", func(t *testing.T) {
		is := is.New(t)
		var upd projectdata.ColumnUpdate
		is.NoErr(json.Unmarshal([]byte(`{"default_value": null}`), &upd))
		is.Equal(upd, projectdata.ColumnUpdate{Default: projectdata.SetTo[any](nil)})
	})
	for _, field := range []string{"new_column_name", "column_type", "is_nullable", "is_unique"} {
		t.Run("NullRefusedFor_"+field, func(t *testing.T) {
			var upd projectdata.ColumnUpdate
			err := json.Unmarshal([]byte(`{"`+field+`": null}`), &upd)
			pdtest.Code(t, err, projectdata.ErrInvalidRequest)
		})
	}
	t.Run("ExactIntegerDefaultIsStored", func(t *testing.T) {
		is := is.New(t)
		r, _ := newPeople(t, nil)
		var upd projectdata.ColumnUpdate
		is.NoErr(json.Unmarshal([]byte(`{"default_value": 9007199254740993}`), &upd))
		got, err := r.s.UpdateColumn(ctx, "acme", "people", "n", upd)
		is.NoErr(err)
		is.Equal(got.DefaultValue, json.Number("9007199254740993"))
	})
}

// newItems is a project with table items of n rows of every type, NULLs
// included, a UNIQUE column and two managed indexes (one partial and
// descending), and the rows' columns in order.
func newItems(t testing.TB, n int) (*rawProject, []string) {
	t.Helper()
	r := newRawProject(t, nil)
	r.createTable(t, projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"},
		{Name: "n", Type: "INTEGER"},
		{Name: "r", Type: "REAL"},
		{Name: "flag", Type: "BOOLEAN"},
		{Name: "at", Type: "DATETIME"},
		{Name: "code", Unique: true},
		{Name: "note"},
	}})
	cols := []string{"id", "name", "n", "r", "flag", "at", "code", "note"}
	rows := make([][]any, n)
	for i := range rows {
		var name, num any = "item-" + strconv.Itoa(i), i * 3
		if i%7 == 0 {
			name = nil
		}
		if i%11 == 0 {
			num = nil
		}
		rows[i] = []any{i + 1, name, num, float64(i) / 4, i % 2, "2026-01-02T03:04:05Z", "c" + strconv.Itoa(i), nil}
	}
	r.insert(t, "items", cols, rows...)
	tbl, err := r.s.GetTable(ctx, "acme", "items")
	if err != nil {
		t.Fatal(err)
	}
	r.addManagedIndex(t, tbl.ID, "idx_items_name_n", `CREATE INDEX idx_items_name_n ON items (name, n)`)
	r.addManagedIndex(t, tbl.ID, "idx_items_r", `CREATE INDEX idx_items_r ON items (r DESC) WHERE r > 10`)
	return r, cols
}

func TestRebuildKeepsRowsIndexesAndIDs(t *testing.T) {
	is := is.New(t)
	n := 10000
	if raceEnabled {
		n = 1000
	}
	r, _ := newItems(t, n)
	rows, managed := r.rows(t, "items"), r.managedIndexes(t)
	is.Equal(len(rows), n)
	indexSQL := func() []string {
		var out []string
		for _, s := range r.schemaSQL(t, "items") {
			if strings.HasPrefix(s, "index ") && !strings.HasSuffix(s, ": ") { // explicit indexes, not UNIQUE's own
				out = append(out, s)
			}
		}
		return out
	}
	indexes := indexSQL()
	is.Equal(len(indexes), 2)
	_, cols, err := r.s.ListColumns(ctx, "acme", "items")
	is.NoErr(err)

	checkKept := func(t *testing.T) {
		is := is.New(t)
		is.Equal(r.rows(t, "items"), rows)
		is.Equal(indexSQL(), indexes)
		is.Equal(r.indexColumns(t, "idx_items_name_n"), []string{"name", "n"})
		is.Equal(r.indexColumns(t, "idx_items_r"), []string{"r"})
		is.Equal(r.managedIndexes(t), managed)
		_, now, err := r.s.ListColumns(ctx, "acme", "items")
		is.NoErr(err)
		for i, c := range cols {
			is.Equal(now[i].ID, c.ID)
			is.Equal(now[i].Name, c.Name)
		}
		err = r.tryInsert("items", []string{"code", "at"}, []any{"c42", "2026-01-01"}) // the UNIQUE column stays unique
		is.True(errors.Is(err, sqlite3.CONSTRAINT_UNIQUE))
	}
	changes := []struct {
		name   string
		column string
		upd    projectdata.ColumnUpdate
	}{
		{"Default", "n", projectdata.ColumnUpdate{Default: projectdata.SetTo[any](5)}},
		{"NotNull", "at", projectdata.ColumnUpdate{Nullable: projectdata.SetTo(false)}},
		{"Unique", "r", projectdata.ColumnUpdate{Unique: projectdata.SetTo(true)}},
		{"NotUnique", "r", projectdata.ColumnUpdate{Unique: projectdata.SetTo(false)}},
		{"TypeOfEmptyColumn", "note", projectdata.ColumnUpdate{Type: projectdata.SetTo("NUMERIC")}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			before := r.schemaSQL(t, "items")[0]
			_, err := r.s.UpdateColumn(ctx, "acme", "items", c.column, c.upd)
			is.New(t).NoErr(err)
			is.New(t).True(r.schemaSQL(t, "items")[0] != before) // the table was rebuilt
			checkKept(t)
		})
	}
	t.Run("AddUniqueColumn", func(t *testing.T) {
		is := is.New(t)
		_, err := r.s.AddColumn(ctx, "acme", "items", projectdata.ColumnDef{Name: "extra", Unique: true})
		is.NoErr(err)
		for i := range rows {
			rows[i] += "|NULL:"
		}
		checkKept(t)
	})
	t.Run("RenameRewritesIndexes", func(t *testing.T) {
		is := is.New(t)
		_, err := r.s.UpdateColumn(ctx, "acme", "items", "n", projectdata.ColumnUpdate{Name: projectdata.SetTo("qty")})
		is.NoErr(err)
		is.Equal(r.rows(t, "items"), rows)
		is.Equal(r.indexColumns(t, "idx_items_name_n"), []string{"name", "qty"})
		is.Equal(r.indexColumns(t, "idx_items_r"), []string{"r"})
		is.Equal(r.managedIndexes(t), managed)
		got, err := r.s.GetColumn(ctx, "acme", "items", "QTY")
		is.NoErr(err)
		is.Equal(got.ID, cols[2].ID)
	})
}
