package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// fuzzRoutes are the routes that take a JSON body, against a project with a
// table "t" (id, name TEXT UNIQUE, n INTEGER, flag BOOLEAN, at DATETIME).
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/projects/acme/records/t"},
	{"PATCH", "/projects/acme/records/t"},
	{"DELETE", "/projects/acme/records/t"},
	{"POST", "/projects/acme/query"},
	{"POST", "/projects/acme/column/t"},
	{"PATCH", "/projects/acme/column/t/n"},
	{"POST", "/projects/acme/table"},
	{"PATCH", "/projects/acme/table/t"},
	{"POST", "/projects/acme/indexes/t"},
	{"POST", "/projects/acme/auth/tokens"},
	{"POST", "/projects/acme/exports"},
	{"PATCH", "/projects/acme"},
}

var fuzzSeeds = []struct {
	route int
	body  string
}{
	{0, `{"name":"a","n":1,"flag":true,"at":"2026-01-01T00:00:00Z"}`},
	{0, `[{"name":"b","n":"2"},{},{"n":9007199254740993}]`},
	{0, `{"n":{"x":1}}`},
	{0, `[[1]]`},
	{1, `{"data":{"n":5},"where":{"name":"a"}}`},
	{1, `{"data":{"n":5},"where":[{"column":"n","op":"in","value":[1,2]}]}`},
	{1, `{"data":{"n":5},"allow_all":true}`},
	{2, `{"where":[{"column":"n","op":"is_null"}]}`},
	{2, `{"where":[{"column":"name","op":"like","value":"a%"}]}`},
	{2, `{"where":{"n":null}}`},
	{3, `{"sql":"SELECT * FROM t WHERE n = ?","params":[1]}`},
	{3, `{"query":"SELECT :a","params":{"a":"x"},"limit":5}`},
	{4, `{"column_name":"extra","column_type":"REAL","default_value":1.5}`},
	{4, `{"column_name":"u","is_unique":true,"is_nullable":false,"default_value":"x"}`},
	{5, `{"new_column_name":"m"}`},
	{5, `{"column_type":"TEXT","is_nullable":false,"default_value":null,"is_unique":true}`},
	{6, `{"table_name":"x","columns":[{"column_name":"k","is_primary":true,"column_type":"TEXT"}]}`},
	{7, `{"display_name":"T"}`},
	{8, `{"columns":["n","name"],"unique":false,"index_name":"i1"}`},
	{9, `{"token_name":"x","role":"read","expires_at":"2030-01-01T00:00:00Z"}`},
	{10, `{"table":"t","format":"csv"}`},
	{11, `{"project_name":"P"}`},
}

// FuzzJSONBodies sends arbitrary bodies to every route that takes one: no
// input may yield a 500, a panic, or a response that is not the envelope.
func FuzzJSONBodies(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(uint8(s.route), s.body)
	}
	store, admin := pdtest.NewProject(f, nil)
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t", Columns: []projectdata.ColumnDef{
		{Name: "name", Unique: true}, {Name: "n", Type: "INTEGER"}, {Name: "flag", Type: "BOOLEAN"}, {Name: "at", Type: "DATETIME"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(store, nil)
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkEnvelope(t, r.method+" "+r.path, body, rec)
	})
}

// FuzzIdentifiers sends arbitrary table, column and index names: each is
// refused with a 4xx code or accepted and then usable, never a 500.
func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{"orders", "a b", `a"b`, "a;b", "_pd_tokens", "sqlite_x", "Ünïcode", "", "x\x00y", "[t]", "`t`", "ORDERS", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	store, admin := pdtest.NewProject(f, nil)
	if _, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "t0", Columns: []projectdata.ColumnDef{{Name: "v"}}}); err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(store, nil)
	f.Fuzz(func(t *testing.T, name string) {
		quoted, _ := json.Marshal(name)
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/projects/acme/table", `{"table_name":` + string(quoted) + `,"columns":[{"column_name":` + string(quoted) + `}]}`},
			{"POST", "/projects/acme/column/t0", `{"column_name":` + string(quoted) + `}`},
			{"POST", "/projects/acme/indexes/t0", `{"columns":["v"],"index_name":` + string(quoted) + `}`},
			{"GET", "/projects/acme/column/" + urlSegment(name), ""},
			{"DELETE", "/projects/acme/table/" + urlSegment(name), ""},
		} {
			req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			checkEnvelope(t, r.method+" "+r.path, r.body, rec)
		}
	})
}

// urlSegment escapes a name for a path segment, keeping the request valid.
func urlSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

func checkEnvelope(t *testing.T, route, body string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s with %q: status %d: %s", route, body, rec.Code, rec.Body)
	}
	var env struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.OK == nil || env.RequestID == "" {
		t.Fatalf("%s with %q: not an envelope: %s", route, body, rec.Body)
	}
	if !*env.OK && (env.Error == nil || env.Error.Code == "" || env.Error.Code == "internal_error") {
		t.Fatalf("%s with %q: bad error: %s", route, body, rec.Body)
	}
}
