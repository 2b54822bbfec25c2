package projectdata_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestCreateTable(t *testing.T) {
	t.Run("AddsAutomaticPrimaryKey", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		tbl, cols, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "note"}}})
		is.NoErr(err)
		is.Equal(tbl.Name, "orders")
		is.True(tbl.DisplayName == nil)
		is.Equal(len(cols), 2)
		is.Equal(cols[0].Name, "id")
		is.Equal(cols[0].Type, projectdata.TypeInteger)
		is.True(bool(cols[0].IsPrimary))
		is.True(bool(cols[0].IsUnique))
		is.True(!bool(cols[0].IsNullable))
		is.Equal(cols[1].Name, "note")
		is.Equal(cols[1].Type, projectdata.TypeText)
		is.True(bool(cols[1].IsNullable))
		is.True(!bool(cols[1].IsUnique))
		is.Equal(cols[1].TableName, "orders")
	})
	t.Run("KeepsGivenPrimaryKeyAndTypes", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		def := projectdata.TableDef{Name: "items", DisplayName: ptr("Items"), Columns: []projectdata.ColumnDef{
			{Name: "sku", Type: "text", Primary: true},
			{Name: "qty", Type: "Integer", NotNull: true, Default: 1},
			{Name: "price", Type: "REAL", Default: json.Number("2.5")},
			{Name: "weight", Type: "numeric"},
			{Name: "active", Type: "boolean", Default: true},
			{Name: "seen", Type: "datetime", Default: "2026-01-01T00:00:00Z"},
			{Name: "code", Unique: true},
		}}
		tbl, cols, err := s.CreateTable(ctx, "acme", def)
		is.NoErr(err)
		is.Equal(*tbl.DisplayName, "Items")
		is.Equal(len(cols), 7)
		is.Equal(cols[0].Name, "sku")
		is.True(bool(cols[0].IsPrimary))
		is.True(!bool(cols[0].IsNullable))
		types := []projectdata.ColumnType{"TEXT", "INTEGER", "REAL", "NUMERIC", "BOOLEAN", "DATETIME", "TEXT"}
		for i, c := range cols {
			is.Equal(c.Type, types[i])
		}
		is.True(!bool(cols[1].IsNullable))
		b, err := json.Marshal(cols[1:6])
		is.NoErr(err)
		var got []map[string]any
		is.NoErr(json.Unmarshal(b, &got))
		is.Equal(got[0]["default_value"], 1.0)
		is.Equal(got[0]["is_nullable"], 0.0)
		is.Equal(got[1]["default_value"], 2.5)
		is.Equal(got[2]["default_value"], nil)
		is.Equal(got[3]["default_value"], 1.0)                        // BOOLEAN stored 0/1
		is.Equal(got[4]["default_value"], "2026-01-01T00:00:00.000Z") // DATETIME canonical
		is.True(bool(cols[6].IsUnique))
		again, err := s.GetTable(ctx, "acme", "items")
		is.NoErr(err)
		is.Equal(again, tbl)
	})
	refusals := []struct {
		name string
		def  projectdata.TableDef
		code projectdata.Code
	}{
		{"EmptyName", projectdata.TableDef{Name: ""}, projectdata.ErrInvalidTableName},
		{"QuoteInName", projectdata.TableDef{Name: `a"b`}, projectdata.ErrInvalidTableName},
		{"SpaceInName", projectdata.TableDef{Name: "a b"}, projectdata.ErrInvalidTableName},
		{"SemicolonInName", projectdata.TableDef{Name: "a;DROP TABLE _pd_tokens"}, projectdata.ErrInvalidTableName},
		{"LeadingDigit", projectdata.TableDef{Name: "1a"}, projectdata.ErrInvalidTableName},
		{"TooLong", projectdata.TableDef{Name: strings.Repeat("a", 64)}, projectdata.ErrInvalidTableName},
		{"ReservedPrefix", projectdata.TableDef{Name: "_PD_tokens"}, projectdata.ErrInvalidTableName},
		{"SQLitePrefix", projectdata.TableDef{Name: "SQLITE_x"}, projectdata.ErrInvalidTableName},
		{"QuoteInColumn", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a'b"}}}, projectdata.ErrInvalidColumnName},
		{"SemicolonInColumn", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a;b"}}}, projectdata.ErrInvalidColumnName},
		{"ReservedColumn", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "_pd_x"}}}, projectdata.ErrInvalidColumnName},
		{"UnknownType", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a", Type: "VARCHAR(10)"}}}, projectdata.ErrInvalidColumnType},
		{"DuplicateColumn", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a"}, {Name: "A"}}}, projectdata.ErrColumnExists},
		{"TwoPrimaryKeys", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a", Primary: true}, {Name: "b", Primary: true}}}, projectdata.ErrInvalidRequest},
		{"IDWithoutPrimaryKey", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "id"}}}, projectdata.ErrInvalidRequest},
		{"DefaultNotFitting", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "n", Type: "INTEGER", Default: "abc"}}}, projectdata.ErrInvalidColumnValue},
		{"NestedDefault", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "n", Default: map[string]any{"a": 1}}}}, projectdata.ErrInvalidColumnValue},
		{"BadDatetimeDefault", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "d", Type: "DATETIME", Default: "yesterday"}}}, projectdata.ErrInvalidColumnValue},
		{"DisplayNameTooLong", projectdata.TableDef{Name: "t", DisplayName: ptr(strings.Repeat("x", 201))}, projectdata.ErrInvalidRequest},
		{"DefaultTooLong", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "d", Default: strings.Repeat("x", 4097)}}}, projectdata.ErrInvalidColumnValue},
		// SQLite assigns an INTEGER PRIMARY KEY itself, whatever its DEFAULT.
		{"DefaultOfRowidKey", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "k", Type: "INTEGER", Primary: true, Default: 5}}}, projectdata.ErrInvalidColumnValue},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s, _ := pdtest.NewProject(t, nil)
			_, _, err := s.CreateTable(ctx, "acme", c.def)
			pdtest.Code(t, err, c.code)
			tables, err := s.ListTables(ctx, "acme")
			is.NoErr(err)
			is.Equal(len(tables), 0)
		})
	}
	t.Run("NamesDifferingInCaseAreOneTable", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "Orders"})
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "ORDERS"})
		pdtest.Code(t, err, projectdata.ErrTableExists)
		got, err := s.GetTable(ctx, "acme", "orders")
		is.NoErr(err)
		is.Equal(got.Name, "Orders")
	})
	t.Run("NameOfAnIndexIsTaken", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{{Name: "a", Unique: true}}})
		is.NoErr(err)
		_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "sqlite_autoindex_t_1"})
		pdtest.Code(t, err, projectdata.ErrInvalidTableName)
	})
}

// TestTablesHaveAtMost500Columns: the automatic primary key counts
// among a table's 500 columns, on create as on add.
func TestTablesHaveAtMost500Columns(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	columns := func(n int) []projectdata.ColumnDef {
		cols := make([]projectdata.ColumnDef, n)
		for i := range cols {
			cols[i].Name = "c" + strconv.Itoa(i)
		}
		return cols
	}
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "wide", Columns: columns(500)})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest) // and "id" would be the 501st
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "wide", Columns: columns(501)})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)

	_, cols, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "wide", Columns: columns(499)})
	is.NoErr(err)
	is.Equal(len(cols), 500)
	_, err = s.AddColumn(ctx, "acme", "wide", projectdata.ColumnDef{Name: "more"})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)

	keyed := columns(500)
	keyed[0].Primary = true
	_, cols, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "keyed", Columns: keyed})
	is.NoErr(err)
	is.Equal(len(cols), 500)
}

// TestNamesMatchInASCIICaseOnly: names match whatever the case of their
// ASCII letters, as in SQLite, and nothing else: the Kelvin sign, which
// Unicode lower-cases to "k", names no table or column.
func TestNamesMatchInASCIICaseOnly(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "kit", Columns: []projectdata.ColumnDef{{Name: "kind"}}})
	is.NoErr(err)
	const kelvin = "\u212a"

	_, err = s.GetTable(ctx, "acme", "KIT")
	is.NoErr(err)
	_, err = s.GetTable(ctx, "acme", kelvin+"it")
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
	_, err = s.GetColumn(ctx, "acme", "kit", "KIND")
	is.NoErr(err)
	_, err = s.GetColumn(ctx, "acme", "kit", kelvin+"ind")
	pdtest.Code(t, err, projectdata.ErrColumnNotFound)
	_, err = s.Insert(ctx, "acme", "kit", []projectdata.Row{{kelvin + "ind": "x"}})
	pdtest.Code(t, err, projectdata.ErrColumnNotFound)
	_, err = s.ListRecords(ctx, "acme", "kit", projectdata.ListOptions{Order: kelvin + "ind"})
	pdtest.Code(t, err, projectdata.ErrColumnNotFound)
	_, err = s.ListRecords(ctx, "acme", "kit", projectdata.ListOptions{Order: "-Kind"})
	is.NoErr(err)
}

func TestListAndGetTables(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	a, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a"})
	is.NoErr(err)
	b, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "b"})
	is.NoErr(err)
	tables, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(tables, []projectdata.Table{a, b})
	byID, err := s.GetTable(ctx, "acme", strconv.FormatInt(b.ID, 10))
	is.NoErr(err)
	is.Equal(byID, b)
	_, err = s.GetTable(ctx, "acme", "999")
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
	_, err = s.GetTable(ctx, "acme", "_pd_tokens")
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
}

func TestUpdateTable(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	tbl, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a"})
	is.NoErr(err)
	id := strconv.FormatInt(tbl.ID, 10)

	got, err := s.UpdateTable(ctx, "acme", id, projectdata.TableUpdate{DisplayName: projectdata.SetTo(ptr("Alpha"))})
	is.NoErr(err)
	is.Equal(*got.DisplayName, "Alpha")
	got, err = s.UpdateTable(ctx, "acme", "A", projectdata.TableUpdate{}) // nothing sent: unchanged
	is.NoErr(err)
	is.Equal(*got.DisplayName, "Alpha")
	listed, err := s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.Equal(*listed[0].DisplayName, "Alpha")

	var upd projectdata.TableUpdate
	is.NoErr(json.Unmarshal([]byte(`{"display_name": null}`), &upd))
	got, err = s.UpdateTable(ctx, "acme", "a", upd)
	is.NoErr(err)
	is.True(got.DisplayName == nil)
	listed, err = s.ListTables(ctx, "acme")
	is.NoErr(err)
	is.True(listed[0].DisplayName == nil)

	_, err = s.UpdateTable(ctx, "acme", "nope", upd)
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
	_, err = s.UpdateTable(ctx, "acme", "a", projectdata.TableUpdate{DisplayName: projectdata.SetTo(ptr(strings.Repeat("x", 201)))})
	pdtest.Code(t, err, projectdata.ErrInvalidRequest)
}

func TestDeleteTable(t *testing.T) {
	t.Run("RemovesTableAndMetadata", func(t *testing.T) {
		is := is.New(t)
		s, _ := pdtest.NewProject(t, nil)
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a", Columns: []projectdata.ColumnDef{{Name: "x", Type: "INTEGER"}}})
		is.NoErr(err)
		name, err := s.DeleteTable(ctx, "acme", "A")
		is.NoErr(err)
		is.Equal(name, "a")
		_, _, err = s.ListColumns(ctx, "acme", "a")
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
		_, err = s.DeleteTable(ctx, "acme", "a")
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
		// The name is free again, with fresh metadata.
		_, cols, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a", Columns: []projectdata.ColumnDef{{Name: "y"}}})
		is.NoErr(err)
		is.Equal(len(cols), 2)
		is.Equal(cols[1].Name, "y")
	})
	for _, name := range []string{"_pd_tokens", "_PD_TABLES", "sqlite_master", "sqlite_schema", "sqlite_sequence"} {
		t.Run("Forbids"+name, func(t *testing.T) {
			is := is.New(t)
			s, admin := pdtest.NewProject(t, nil)
			_, err := s.DeleteTable(ctx, "acme", name)
			pdtest.Code(t, err, projectdata.ErrForbidden)
			_, err = s.Authenticate(ctx, "acme", admin)
			is.NoErr(err)
		})
	}
}

func TestColumnsListAndGet(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, cols, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "a", Columns: []projectdata.ColumnDef{{Name: "Title"}}})
	is.NoErr(err)
	name, listed, err := s.ListColumns(ctx, "acme", "A")
	is.NoErr(err)
	is.Equal(name, "a")
	is.Equal(listed, cols)
	c, err := s.GetColumn(ctx, "acme", "a", "title")
	is.NoErr(err)
	is.Equal(c, cols[1])
	c, err = s.GetColumn(ctx, "acme", "a", strconv.FormatInt(cols[1].ID, 10))
	is.NoErr(err)
	is.Equal(c, cols[1])
	_, err = s.GetColumn(ctx, "acme", "a", "nope")
	pdtest.Code(t, err, projectdata.ErrColumnNotFound)
	_, err = s.GetColumn(ctx, "acme", "nope", "title")
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
}
