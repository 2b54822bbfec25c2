package projectdata_test

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// newIndexFixture is a project with tables orders(id, item, qty, code
// UNIQUE) and customers(id, name), seeded through the raw connection it
// returns: items are distinct, qty repeats.
func newIndexFixture(t *testing.T) (*projectdata.Store, *sqlite3.Conn) {
	t.Helper()
	s, dir := pdtest.Open(t, nil)
	if _, _, err := s.CreateProject(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	for _, def := range []projectdata.TableDef{
		{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "item"}, {Name: "qty", Type: "INTEGER"}, {Name: "code", Unique: true}}},
		{Name: "customers", Columns: []projectdata.ColumnDef{{Name: "name"}}},
	} {
		if _, _, err := s.CreateTable(ctx, "acme", def); err != nil {
			t.Fatal(err)
		}
	}
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `INSERT INTO orders (item, qty, code) SELECT 'item' || value, value % 3, 'c' || value FROM generate_series(1, 30)`)
	return s, raw
}

// rawCount runs a count(*) statement of the test's own on a raw connection.
func rawCount(t *testing.T, c *sqlite3.Conn, sql string) int {
	t.Helper()
	st, _, err := c.Prepare(sql)
	if err != nil {
		t.Fatalf("prepare %.60q: %v", sql, err)
	}
	defer st.Close()
	if !st.Step() {
		t.Fatalf("no row from %.60q: %v", sql, st.Err())
	}
	return st.ColumnInt(0)
}

func TestCreateIndex(t *testing.T) {
	t.Run("DefaultNameAndShape", func(t *testing.T) {
		is := is.New(t)
		s, raw := newIndexFixture(t)
		ix, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty", "item"}})
		is.NoErr(err)
		is.Equal(ix, projectdata.Index{
			Name: "idx_orders_qty_item", Origin: "c", Columns: []string{"qty", "item"}, Managed: true,
			SQL: `CREATE INDEX "idx_orders_qty_item" ON "orders" ("qty", "item")`,
		})
		is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes WHERE name = 'idx_orders_qty_item'`), 1)

		b, err := json.Marshal(ix)
		is.NoErr(err)
		var fields map[string]any
		is.NoErr(json.Unmarshal(b, &fields))
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		is.Equal(keys, []string{"columns", "managed", "name", "origin", "partial", "sql", "unique"})
		is.Equal(fields["partial"], false)
		is.Equal(fields["managed"], true)
	})
	t.Run("DefaultNameUsesColumnNamesAsStored", func(t *testing.T) {
		is := is.New(t)
		s, _ := newIndexFixture(t)
		ix, err := s.CreateIndex(ctx, "acme", "ORDERS", projectdata.IndexRequest{Columns: []string{"QTY"}})
		is.NoErr(err)
		is.Equal(ix.Name, "idx_orders_qty")
		is.Equal(ix.Columns, []string{"qty"})
	})
	t.Run("GivenNameAndUnique", func(t *testing.T) {
		is := is.New(t)
		s, raw := newIndexFixture(t)
		ix, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item"}, IndexName: "By_Item", Unique: true})
		is.NoErr(err)
		is.Equal(ix.Name, "By_Item")
		is.True(ix.Unique)
		is.Equal(ix.SQL, `CREATE UNIQUE INDEX "By_Item" ON "orders" ("item")`)
		err = raw.Exec(`INSERT INTO orders (item) VALUES ('item1')`)
		is.True(err != nil) // the index is in force
	})
	t.Run("TableByID", func(t *testing.T) {
		is := is.New(t)
		s, _ := newIndexFixture(t)
		tbl, err := s.GetTable(ctx, "acme", "customers")
		is.NoErr(err)
		ix, err := s.CreateIndex(ctx, "acme", strconv.FormatInt(tbl.ID, 10), projectdata.IndexRequest{Columns: []string{"name"}})
		is.NoErr(err)
		is.Equal(ix.Name, "idx_customers_name")
	})

	refusals := []struct {
		name  string
		table string
		req   projectdata.IndexRequest
		code  projectdata.Code
	}{
		{"NoColumns", "orders", projectdata.IndexRequest{}, projectdata.ErrInvalidRequest},
		{"EmptyColumns", "orders", projectdata.IndexRequest{Columns: []string{}}, projectdata.ErrInvalidRequest},
		{"UnknownColumn", "orders", projectdata.IndexRequest{Columns: []string{"qty", "nope"}}, projectdata.ErrColumnNotFound},
		{"ColumnTwice", "orders", projectdata.IndexRequest{Columns: []string{"qty", "QTY"}}, projectdata.ErrInvalidRequest},
		{"UnknownTable", "nope", projectdata.IndexRequest{Columns: []string{"qty"}}, projectdata.ErrTableNotFound},
		{"ControlTable", "_pd_tokens", projectdata.IndexRequest{Columns: []string{"name"}}, projectdata.ErrTableNotFound},
		{"NameWithQuote", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: `a"b`}, projectdata.ErrInvalidRequest},
		{"NameWithSemicolon", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "a; DROP TABLE orders"}, projectdata.ErrInvalidRequest},
		{"NameTooLong", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: strings.Repeat("i", 64)}, projectdata.ErrInvalidRequest},
		{"ReservedName", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "_PD_x"}, projectdata.ErrInvalidRequest},
		{"SQLiteName", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "sqlite_autoindex_orders_1"}, projectdata.ErrInvalidRequest},
		{"NameOfATable", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "Customers"}, projectdata.ErrIndexExists},
		{"NameOfAView", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "big_orders"}, projectdata.ErrIndexExists},
		{"NameOfAnIndex", "orders", projectdata.IndexRequest{Columns: []string{"item"}, IndexName: "BY_QTY"}, projectdata.ErrIndexExists},
		{"DefaultNameTaken", "orders", projectdata.IndexRequest{Columns: []string{"qty"}}, projectdata.ErrIndexExists},
		{"UniqueOverDuplicates", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "u", Unique: true}, projectdata.ErrUniqueViolation},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s, raw := newIndexFixture(t)
			pdtest.Exec(t, raw, `CREATE VIEW big_orders AS SELECT * FROM orders WHERE qty > 1`)
			_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "by_qty"})
			is.NoErr(err)
			_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}})
			is.NoErr(err)
			before := rawCount(t, raw, `SELECT count(*) FROM sqlite_schema`)

			_, err = s.CreateIndex(ctx, "acme", c.table, c.req)
			pdtest.Code(t, err, c.code)
			is.Equal(rawCount(t, raw, `SELECT count(*) FROM sqlite_schema`), before) // nothing created
			is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes`), 2)
		})
	}
}

func TestDefaultIndexNamesDoNotCollide(t *testing.T) {
	is := is.New(t)
	s, _ := newIndexFixture(t)
	_, err := s.AddColumn(ctx, "acme", "orders", projectdata.ColumnDef{Name: "item_qty"})
	is.NoErr(err)
	name := func(cols ...string) string {
		t.Helper()
		ix, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: cols})
		is.NoErr(err)
		is.Equal(ix.Columns, cols)
		return ix.Name
	}
	is.Equal(name("item", "qty"), "idx_orders_item_qty")
	is.Equal(name("item_qty"), "idx_orders_item_qty_2") // the same default name, other columns
	for _, cols := range [][]string{{"item", "qty"}, {"item_qty"}} {
		_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: cols})
		is.True(errors.Is(err, projectdata.ErrIndexExists)) // the same index again
	}
	// Another object (here a table) with the name.
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "idx_orders_code"})
	is.NoErr(err)
	is.Equal(name("code"), "idx_orders_code_2")
	_, err = s.DropIndex(ctx, "acme", "orders", "idx_orders_item_qty_2")
	is.NoErr(err)
}

func TestListIndexes(t *testing.T) {
	is := is.New(t)
	s, raw := newIndexFixture(t)
	pdtest.Exec(t, raw, `CREATE INDEX by_hand ON orders (item)`)
	name, list, err := s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(name, "orders")
	is.Equal(list, []projectdata.Index{}) // neither the UNIQUE column's index nor the hand-made one

	a, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "zz"})
	is.NoErr(err)
	b, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"code", "item"}, IndexName: "aa", Unique: true})
	is.NoErr(err)
	_, err = s.CreateIndex(ctx, "acme", "customers", projectdata.IndexRequest{Columns: []string{"name"}})
	is.NoErr(err)
	name, list, err = s.ListIndexes(ctx, "acme", "Orders")
	is.NoErr(err)
	is.Equal(name, "orders")
	is.Equal(list, []projectdata.Index{a, b}) // oldest first, only this table's

	_, _, err = s.ListIndexes(ctx, "acme", "nope")
	pdtest.Code(t, err, projectdata.ErrTableNotFound)
}

func TestDropIndex(t *testing.T) {
	t.Run("DropsManagedIndex", func(t *testing.T) {
		is := is.New(t)
		s, raw := newIndexFixture(t)
		_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "By_Qty"})
		is.NoErr(err)
		name, err := s.DropIndex(ctx, "acme", "orders", "by_qty")
		is.NoErr(err)
		is.Equal(name, "By_Qty")
		_, list, err := s.ListIndexes(ctx, "acme", "orders")
		is.NoErr(err)
		is.Equal(len(list), 0)
		is.Equal(rawCount(t, raw, `SELECT count(*) FROM sqlite_schema WHERE name = 'By_Qty'`), 0)
		is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes`), 0)
		_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item"}, IndexName: "By_Qty"})
		is.NoErr(err) // the name is free again
	})

	refusals := []struct {
		name  string
		table string
		index string
		code  projectdata.Code
	}{
		{"AutoIndex", "orders", "sqlite_autoindex_orders_1", projectdata.ErrIndexNotManaged},
		{"HandMadeIndex", "orders", "by_hand", projectdata.ErrIndexNotManaged},
		{"UnknownIndex", "orders", "nope", projectdata.ErrIndexNotFound},
		{"IndexOfAnotherTable", "customers", "by_qty", projectdata.ErrIndexNotFound},
		{"TableName", "orders", "orders", projectdata.ErrIndexNotFound},
		{"UnknownTable", "nope", "by_qty", projectdata.ErrTableNotFound},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			is := is.New(t)
			s, raw := newIndexFixture(t)
			pdtest.Exec(t, raw, `CREATE INDEX by_hand ON orders (item)`)
			_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "by_qty"})
			is.NoErr(err)
			before := rawCount(t, raw, `SELECT count(*) FROM sqlite_schema`)

			_, err = s.DropIndex(ctx, "acme", c.table, c.index)
			pdtest.Code(t, err, c.code)
			is.Equal(rawCount(t, raw, `SELECT count(*) FROM sqlite_schema`), before) // nothing dropped
			is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes`), 1)
		})
	}
}

func TestIndexDroppedBehindTheStoresBack(t *testing.T) {
	is := is.New(t)
	s, raw := newIndexFixture(t)
	_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}, IndexName: "by_qty"})
	is.NoErr(err)
	pdtest.Exec(t, raw, `DROP INDEX by_qty`)

	_, list, err := s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(len(list), 0) // not listed without its SQLite index
	_, err = s.DropIndex(ctx, "acme", "orders", "by_qty")
	pdtest.Code(t, err, projectdata.ErrIndexNotFound)
	ix, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item"}, IndexName: "BY_QTY"})
	is.NoErr(err) // the stale record gives way
	_, list, err = s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(list, []projectdata.Index{ix})
	is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes`), 1)
}

func TestIndexSurvivesColumnRename(t *testing.T) {
	is := is.New(t)
	s, raw := newIndexFixture(t)
	_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item", "qty"}, IndexName: "by_item_qty"})
	is.NoErr(err)
	// What renaming a column through the Store does: SQLite's rename, which
	// rewrites the index, and the registry's.
	pdtest.Exec(t, raw, `ALTER TABLE orders RENAME COLUMN qty TO quantity;
		UPDATE _pd_columns SET name = 'quantity' WHERE name = 'qty' AND table_id = (SELECT id FROM _pd_tables WHERE name = 'orders')`)

	_, list, err := s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(len(list), 1)
	is.Equal(list[0].Columns, []string{"item", "quantity"})
	is.Equal(list[0].SQL, `CREATE INDEX "by_item_qty" ON "orders" ("item", "quantity")`)

	ix, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"quantity"}})
	is.NoErr(err)
	is.Equal(ix.Name, "idx_orders_quantity")
	name, err := s.DropIndex(ctx, "acme", "orders", "by_item_qty")
	is.NoErr(err)
	is.Equal(name, "by_item_qty")
	_, list, err = s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(list, []projectdata.Index{ix})
}

func TestDeleteTableRemovesItsIndexes(t *testing.T) {
	is := is.New(t)
	s, raw := newIndexFixture(t)
	_, err := s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}})
	is.NoErr(err)
	_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"item"}, IndexName: "by_item"})
	is.NoErr(err)
	kept, err := s.CreateIndex(ctx, "acme", "customers", projectdata.IndexRequest{Columns: []string{"name"}})
	is.NoErr(err)

	_, err = s.DeleteTable(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(rawCount(t, raw, `SELECT count(*) FROM _pd_indexes`), 1) // only customers' index is left
	is.Equal(rawCount(t, raw, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN ('idx_orders_qty', 'by_item')`), 0)
	_, list, err := s.ListIndexes(ctx, "acme", "customers")
	is.NoErr(err)
	is.Equal(list, []projectdata.Index{kept})

	// A new table of the same name starts with no indexes, and the names
	// are free again.
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}}})
	is.NoErr(err)
	_, list, err = s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(len(list), 0)
	_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty"}})
	is.NoErr(err)
}

func TestManagedIndexSurvivesStoreRenameAndRebuild(t *testing.T) {
	is := is.New(t)
	s, _ := pdtest.NewProject(t, nil)
	_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "qty", Type: "INTEGER"}, {Name: "note"}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "orders", []projectdata.Row{{"qty": 1}, {"qty": 2, "note": "x"}})
	is.NoErr(err)
	_, err = s.CreateIndex(ctx, "acme", "orders", projectdata.IndexRequest{Columns: []string{"qty", "note"}, IndexName: "by_qty"})
	is.NoErr(err)

	_, err = s.UpdateColumn(ctx, "acme", "orders", "qty", projectdata.ColumnUpdate{Name: projectdata.SetTo("quantity")}) // ALTER TABLE RENAME COLUMN
	is.NoErr(err)
	_, err = s.UpdateColumn(ctx, "acme", "orders", "note", projectdata.ColumnUpdate{Default: projectdata.SetTo[any]("-")}) // rebuild
	is.NoErr(err)
	_, err = s.AddColumn(ctx, "acme", "orders", projectdata.ColumnDef{Name: "code", Unique: true}) // rebuild
	is.NoErr(err)

	_, idx, err := s.ListIndexes(ctx, "acme", "orders")
	is.NoErr(err)
	is.Equal(len(idx), 1)
	is.Equal(idx[0].Name, "by_qty")
	is.Equal(idx[0].Columns, []string{"quantity", "note"})
	res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `EXPLAIN QUERY PLAN SELECT * FROM orders WHERE quantity = 2`})
	is.NoErr(err)
	is.True(strings.Contains(res.Rows[0]["detail"].(string), "by_qty")) // still used
	row, err := s.GetRecord(ctx, "acme", "orders", 2)
	is.NoErr(err)
	is.Equal(row["quantity"], int64(2))
	is.Equal(row["note"], "x")
	_, err = s.DropIndex(ctx, "acme", "orders", "by_qty")
	is.NoErr(err)
}
