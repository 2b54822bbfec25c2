package httpapi_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

// TestEscapedSlashStaysInItsSegment: an encoded slash is part of the name
// it is in, so the name reaches the Store's checks instead of splitting
// the route.
func TestEscapedSlashStaysInItsSegment(t *testing.T) {
	a := newAPI(t, nil)
	if _, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "item"}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/projects/a%2Fb", 400, "invalid_project_slug"},
		{"GET", "/projects/acme/column/a%2Fb", 404, "table_not_found"},
		{"GET", "/projects/acme/column/orders/a%2Fb", 404, "column_not_found"},
		{"GET", "/projects/acme/records/orders/1%2F2", 404, "record_not_found"},
		{"DELETE", "/projects/acme/table/a%2Fb", 404, "table_not_found"},
		{"DELETE", "/projects/acme/indexes/orders/a%2Fb", 404, "index_not_found"},
		{"GET", "/projects/a%2Fb/changes", 400, "invalid_project_slug"},
		{"GET", "/projects/acme/export/download/a%2Fb", 404, "export_not_found"},
		{"GET", "/projects/acme/column/or%64ers", 200, ""}, // other escapes decode as before
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			a.t = t
			a.must(a.do(c.method, c.path, a.admin, ""), c.status, c.code)
		})
	}
	t.Run("PostedNameIsChecked", func(t *testing.T) {
		a.t = t
		a.must(a.do("POST", "/projects/acme/column/a%2Fb", a.admin, `{"column_name":"x"}`), 404, "table_not_found")
	})
	t.Run("PatchedRecordIsLookedUp", func(t *testing.T) {
		a.t = t
		a.must(a.do("PATCH", "/projects/acme/records/orders/1%2F2", a.admin, `{"item":"x"}`), 404, "record_not_found")
		a.must(a.do("PATCH", "/projects/acme/records/a%2Fb/1", a.admin, `{"item":"x"}`), 404, "table_not_found")
	})
}

// TestGetRecordNamesTheStoredTable: the answer names the table as stored,
// whatever spelling or id the path used.
func TestGetRecordNamesTheStoredTable(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	tbl, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "Orders", Columns: []projectdata.ColumnDef{{Name: "item"}}})
	is.NoErr(err)
	_, err = a.store.Insert(ctx, "acme", "Orders", []projectdata.Row{{"item": "fig"}})
	is.NoErr(err)
	for _, path := range []string{"/projects/acme/records/orders/1", "/projects/acme/records/ORDERS/1", "/projects/acme/records/" + itoa(tbl.ID) + "/1"} {
		res := a.must(a.do("GET", path, a.read, ""), 200, "")
		is.Equal(res.data()["table"], "Orders")
		res = a.must(a.do("PATCH", path, a.admin, `{"item":"kiwi"}`), 200, "")
		is.Equal(res.data()["table"], "Orders")
		is.Equal(res.data()["row"].(map[string]any)["item"], "kiwi")
	}
}

// TestListRoutesRefuseUnknownParameters: a misspelt or unsupported query
// parameter of a list route, or a known one given twice, is refused by
// name, never silently ignored.
func TestListRoutesRefuseUnknownParameters(t *testing.T) {
	a := newAPI(t, nil)
	if _, _, err := a.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "orders", Columns: []projectdata.ColumnDef{{Name: "item"}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, param string }{
		{"/projects/acme/records/orders?limt=5", "limt"},
		{"/projects/acme/changes?limt=5", "limt"},
		{"/projects/acme/changes?after=0&offset=10", "offset"},
		{"/projects/acme/exports?page=2", "page"},
		{"/projects/acme/table?limit=5", "limit"},
		{"/projects/acme/auth/tokens?all=1", "all"},
		{"/projects/acme/column/orders?x=1", "x"},
		{"/projects/acme/indexes/orders?x=1", "x"},
		// A known parameter given twice: which value would hold is anyone's guess.
		{`/projects/acme/records/orders?where={"item":"a"}&where={"item":"b"}`, "where"},
		{"/projects/acme/changes?after=5&after=0", "after"},
		{"/projects/acme/exports?status=ready&status=all", "status"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			is := is.New(t)
			a.t = t
			res := a.must(a.do("GET", c.path, a.admin, ""), 400, "invalid_request")
			is.True(strings.Contains(res.Env.Error.Message, `"`+c.param+`"`)) // names it
		})
	}
	t.Run("KnownParametersPass", func(t *testing.T) {
		a.t = t
		a.must(a.do("GET", "/projects/acme/changes?after=0&tables=orders&limit=5", a.admin, ""), 200, "")
		// Names of a list may have spaces around them, as order's may.
		a.must(a.do("GET", "/projects/acme/changes?tables=orders,%20Orders%20", a.admin, ""), 200, "")
		a.must(a.do("GET", "/projects/acme/records/orders?columns=item,%20id%20&order=%20item", a.admin, ""), 200, "")
	})
}
