package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestExportDownloadConditionalAndRanges checks the download's HEAD, range
// and conditional answers against the file and the OpenAPI document (a
// refused range is an envelope, as every answer with a body), and that a
// file truncated or replaced by a link after it was made is 404
// export_not_found.
func TestExportDownloadConditionalAndRanges(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"alpha"},{"name":"beta"}]`), 201, "")
	mk := func() (url, etag, path string) {
		exp := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "").data()["export"].(map[string]any)
		return exp["download_url"].(string), `"` + exp["sha256"].(string) + `"`, filepath.Join(a.dir, "acme", "exports", exp["id"].(string)+".csv")
	}
	url, etag, path := mk()
	whole := "id,name\n1,alpha\n2,beta\n"

	head := a.do("HEAD", url, a.read, "")
	is.Equal(head.Status, 200)
	is.Equal(len(head.Body), 0)
	is.Equal(head.Header.Get("ETag"), etag)

	part := a.do("GET", url, a.read, "", "Range", "bytes=8-15")
	is.Equal(part.Status, 206)
	is.Equal(string(part.Body), whole[8:16])
	is.Equal(part.Header.Get("Content-Range"), "bytes 8-15/23")
	refused := a.must(a.do("GET", url, a.read, "", "Range", "bytes=100-"), 416, "range_not_satisfiable") // an envelope, as every answer with a body
	is.Equal(refused.Header.Get("Content-Range"), "bytes */23")
	is.Equal(a.do("GET", url, a.read, "", "If-Match", `"other"`).Status, 412)
	is.Equal(a.do("GET", url, a.read, "", "If-None-Match", etag).Status, 304)
	is.Equal(string(a.do("GET", url, a.read, "", "Range", "bytes=0-3", "If-Range", `"other"`).Body), whole)

	is.NoErr(os.Truncate(path, 3))
	a.must(a.do("GET", url, a.read, "", "Range", "bytes=0-1"), 404, "export_not_found")
	res := a.must(a.do("GET", "/projects/acme/exports?status=not_found", a.read, ""), 200, "")
	is.Equal(res.data()["exports"].([]any)[0].(map[string]any)["status_reason"], "file_changed")

	url, _, path = mk()
	is.NoErr(os.Rename(path, path+".moved"))
	is.NoErr(os.Symlink(path+".moved", path))
	a.must(a.do("GET", url, a.read, ""), 404, "export_not_found")
}

// TestExportListDocumentedDefault: the status the OpenAPI document gives
// as the export list's default lists what leaving status out lists.
func TestExportListDocumentedDefault(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Default string `json:"default"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	is.NoErr(json.Unmarshal(a.do("GET", "/openapi.json", "", "").Body, &doc))
	def := ""
	for _, p := range doc.Paths["/projects/{project}/exports"]["get"].Parameters {
		if p.Name == "status" {
			def = p.Schema.Default
		}
	}
	is.True(def != "") // the document says which status is the default

	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	for range 2 {
		a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "")
	}
	gone := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "").data()["export"].(map[string]any)
	is.NoErr(os.Remove(filepath.Join(a.dir, "acme", "exports", gone["id"].(string)+".csv")))
	omitted := a.must(a.do("GET", "/projects/acme/exports", a.read, ""), 200, "").data()
	is.Equal(omitted["total"], json.Number("3")) // ready and not_found alike
	documented := a.must(a.do("GET", "/projects/acme/exports?status="+def, a.read, ""), 200, "").data()
	is.Equal(documented["total"], omitted["total"])
}

// TestExportDownloadOutlastsServerWriteTimeout: a download that takes
// longer than the server's WriteTimeout, from a client that takes every
// part in time, arrives whole: the timeout bounds each write of the file,
// as it does a change stream's, not the whole file.
func TestExportDownloadOutlastsServerWriteTimeout(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	pdtest.Exec(t, pdtest.Raw(t, a.dir, "acme"), `INSERT INTO t (name) SELECT printf('%.*c', 1048576, 'x') FROM generate_series(1, 24)`)
	exp := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "").data()["export"].(map[string]any)
	size, err := exp["size_bytes"].(json.Number).Int64()
	is.NoErr(err)

	srv := httptest.NewUnstartedServer(a.h)
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+exp["download_url"].(string), nil)
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+a.read)
	res, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, 200)
	got := int64(0)
	buf := make([]byte, 1<<20)
	for {
		time.Sleep(50 * time.Millisecond) // a reader slower than the timeout, in all
		n, err := io.ReadFull(res.Body, buf)
		got += int64(n)
		if err != nil {
			break
		}
	}
	is.Equal(got, size)
}
