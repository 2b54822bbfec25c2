package httpapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// TestProjectExportRoutes takes a snapshot of the whole project over HTTP:
// admin only, to take and to download, and the download is the database.
func TestProjectExportRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"a"},{"name":"b"}]`), 201, "")

	a.must(a.do("POST", "/projects/acme/exports", a.write, `{"kind":"project_export"}`), 403, "permission_denied")
	a.must(a.do("POST", "/projects/acme/exports", a.read, `{"kind":"project_export"}`), 403, "permission_denied")
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"everything"}`), 400, "invalid_request")
	// A project export holds every table, as SQLite: a table or another
	// format is refused, not ignored.
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"project_export","table":"t"}`), 400, "invalid_request")
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"project_export","format":"csv"}`), 400, "invalid_export_format")
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"format":"csv"}`), 400, "invalid_request") // a table export needs its table
	// Its own format may be named, in any case, as a table export's may
	// (and the document takes both requests).
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"project_export","format":"SQLite"}`), 201, "")
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"table":"t","format":"CSV"}`), 201, "")
	res := a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"project_export"}`), 201, "")
	exp := res.data()["export"].(map[string]any)
	is.Equal(exp["kind"], "project_export")
	is.Equal(exp["format"], "sqlite")
	is.Equal(exp["content_type"], "application/vnd.sqlite3")
	is.Equal(exp["table_count"], json.Number("1"))
	is.Equal(exp["row_count"], json.Number("2"))
	table, ok := exp["table"]
	is.True(ok)
	is.Equal(table, nil)

	url := exp["download_url"].(string)
	a.must(a.do("GET", url, a.read, ""), 403, "permission_denied")
	a.must(a.do("GET", url, a.write, ""), 403, "permission_denied")
	dl := a.do("GET", url, a.admin, "")
	is.Equal(dl.Status, 200)
	is.Equal(dl.Header.Get("Content-Type"), "application/vnd.sqlite3")
	is.Equal(dl.Header.Get("ETag"), `"`+exp["sha256"].(string)+`"`)
	is.Equal(dl.Header.Get("Content-Length"), string(exp["size_bytes"].(json.Number)))
	is.Equal(string(dl.Body[:16]), "SQLite format 3\x00")

	// The download is a database holding the rows.
	path := filepath.Join(t.TempDir(), "snapshot.sqlite")
	is.NoErr(os.WriteFile(path, dl.Body, 0o644))
	db, err := sqlite3.Open(path)
	is.NoErr(err)
	defer db.Close()
	st, _, err := db.Prepare(`SELECT group_concat(name) FROM t`)
	is.NoErr(err)
	defer st.Close()
	is.True(st.Step())
	is.Equal(st.ColumnText(0), "a,b")
	// A table export in the same project still works for write and read.
	res = a.must(a.do("POST", "/projects/acme/exports", a.write, `{"kind":"table_export","table":"t"}`), 201, "")
	a.must(a.do("GET", res.data()["export"].(map[string]any)["download_url"].(string), a.read, ""), 200, "")
}
