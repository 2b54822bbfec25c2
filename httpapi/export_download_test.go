package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestExportDownloadRangeHeader checks, through a real server, the Range
// headers http.ServeContent answers against RFC 9110 §14 and the download
// answers right: an unknown unit, a malformed set, too many ranges and
// overlapping ones are ignored (200, the whole file); a suffix of zero
// bytes is unsatisfiable (416, the envelope and Content-Range: bytes */N);
// conditional requests still come first; and ordinary ranges are 206.
func TestExportDownloadRangeHeader(t *testing.T) {
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	// 4 KiB: large enough that 2,000 one-byte ranges are less than the
	// file, which ServeContent would otherwise ignore by itself.
	pdtest.Exec(t, pdtest.Raw(t, a.dir, "acme"), `INSERT INTO t (name) SELECT printf('%.*c', 4096, 'x')`)
	exp := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t"}`), 201, "").data()["export"].(map[string]any)
	etag := `"` + exp["sha256"].(string) + `"`
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	get := func(t *testing.T, headers ...string) (*http.Response, []byte) {
		t.Helper()
		is := is.New(t)
		req, err := http.NewRequest("GET", srv.URL+exp["download_url"].(string), nil)
		is.NoErr(err)
		req.Header.Set("Authorization", "Bearer "+a.read)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		is.NoErr(err)
		return res, body
	}
	res, body := get(t)
	whole := string(body)
	size := strconv.Itoa(len(whole))
	if res.StatusCode != 200 || !strings.HasPrefix(whole, "id,name\n1,xxx") || json.Number(size) != exp["size_bytes"] {
		t.Fatalf("the whole file: %d, %d bytes, want 200 and %v", res.StatusCode, len(whole), exp["size_bytes"])
	}
	ranges := func(n int, spec func(i int) string) string {
		specs := make([]string, n)
		for i := range specs {
			specs[i] = spec(i)
		}
		return "bytes=" + strings.Join(specs, ",")
	}
	oneByte := func(i int) string { return fmt.Sprintf("%d-%d", i, i) }
	firstByte := func(int) string { return "0-0" }

	tests := []struct {
		name    string
		headers []string // Range first
		status  int
		parts   []string // a 206's parts, in order; else the body is the whole file (200) or none (304) or the envelope (416)
		cr      string   // Content-Range of a 206 with one part or of a 416
	}{
		{"SingleRangeIsPartial", []string{"Range", "bytes=8-15"}, 206, []string{whole[8:16]}, "bytes 8-15/" + size},
		{"TwoRangesAreMultipart", []string{"Range", "bytes=0-1,4-5"}, 206, []string{whole[0:2], whole[4:6]}, ""},
		{"SuffixRangeIsTheEnd", []string{"Range", "bytes=-3"}, 206, []string{whole[len(whole)-3:]}, fmt.Sprintf("bytes %d-%d/%s", len(whole)-3, len(whole)-1, size)},
		{"SuffixPastTheStartIsTheWholeFile", []string{"Range", fmt.Sprintf("bytes=-%d", len(whole)+100)}, 206, []string{whole}, fmt.Sprintf("bytes 0-%d/%s", len(whole)-1, size)},
		{"LastPastTheEndIsClamped", []string{"Range", "bytes=10-99999999999999999999"}, 206, []string{whole[10:]}, fmt.Sprintf("bytes 10-%d/%s", len(whole)-1, size)},
		{"UnitIsCaseInsensitive", []string{"Range", "Bytes=0-1"}, 206, []string{whole[0:2]}, "bytes 0-1/" + size},
		{"SixteenRangesArePartial", []string{"Range", ranges(16, oneByte)}, 206, strings.Split(whole[:16], ""), ""},
		{"OtherUnitIsIgnored", []string{"Range", "items=0-1"}, 200, nil, ""},
		{"MalformedIsIgnored", []string{"Range", "bytes=abc"}, 200, nil, ""},
		{"LastBeforeFirstIsIgnored", []string{"Range", "bytes=5-3"}, 200, nil, ""},
		{"SignedPositionIsIgnored", []string{"Range", "bytes=+0-1"}, 200, nil, ""},
		{"NoRangeIsIgnored", []string{"Range", "bytes=,"}, 200, nil, ""},
		{"SeventeenRangesAreIgnored", []string{"Range", ranges(17, oneByte)}, 200, nil, ""},
		{"TwoThousandOverlappingRangesAreIgnored", []string{"Range", ranges(2000, firstByte)}, 200, nil, ""},
		{"OverlappingRangesAreIgnored", []string{"Range", "bytes=0-5,3-8"}, 200, nil, ""},
		{"ZeroSuffixIsUnsatisfiable", []string{"Range", "bytes=-0"}, 416, nil, "bytes */" + size},
		{"StartPastTheEndIsUnsatisfiable", []string{"Range", "bytes=" + size + "-"}, 416, nil, "bytes */" + size},
		{"ZeroSuffixBesideARangeIsDropped", []string{"Range", "bytes=-0,0-1"}, 206, []string{whole[0:2]}, "bytes 0-1/" + size},
		{"ZeroSuffixWithStaleIfRangeIsWhole", []string{"Range", "bytes=-0", "If-Range", `"other"`}, 200, nil, ""},
		{"ZeroSuffixWithMatchingIfNoneMatchIsNotModified", []string{"Range", "bytes=-0", "If-None-Match", etag}, 304, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			res, body := get(t, tt.headers...)
			is.Equal(res.StatusCode, tt.status)
			switch tt.status {
			case 200:
				is.Equal(string(body), whole)
				is.Equal(res.Header.Get("Content-Range"), "")
			case 304:
				is.Equal(len(body), 0)
			case 416:
				var env struct {
					Error struct{ Code, Message string }
				}
				is.NoErr(json.Unmarshal(body, &env))
				is.Equal(env.Error.Code, "range_not_satisfiable")
				is.Equal(res.Header.Get("Content-Range"), tt.cr)
			case 206:
				if len(tt.parts) == 1 {
					is.Equal(string(body), tt.parts[0])
					is.Equal(res.Header.Get("Content-Range"), tt.cr)
					return
				}
				mt, params, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
				is.NoErr(err)
				is.Equal(mt, "multipart/byteranges")
				mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
				var got []string
				for {
					p, err := mr.NextPart()
					if err == io.EOF {
						break
					}
					is.NoErr(err)
					b, err := io.ReadAll(p)
					is.NoErr(err)
					got = append(got, string(b))
				}
				is.Equal(got, tt.parts)
			}
		})
	}
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

	status, body := slowRead(t, a, exp["download_url"].(string), a.read)
	is.Equal(status, 200)
	is.Equal(int64(len(body)), size)
}

// slowRead GETs path with token from a server of a.h whose WriteTimeout
// is 200 ms, and reads the answer 1 MiB every 50 ms: slower than the
// timeout in all, each part in time. It returns the status and the body as
// far as it came.
func slowRead(t *testing.T, a *api, path, token string) (int, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(a.h)
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body bytes.Buffer
	buf := make([]byte, 1<<20)
	for {
		time.Sleep(50 * time.Millisecond)
		n, err := io.ReadFull(res.Body, buf)
		body.Write(buf[:n])
		if err != nil {
			return res.StatusCode, body.Bytes()
		}
	}
}
