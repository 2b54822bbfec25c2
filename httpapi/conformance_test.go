package httpapi_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// conformance is a live server with a token of each role, a table items
// (name TEXT, qty INTEGER) and a second project, empty, with its admin
// token.
type conformance struct {
	*live
	write, read, emptyAdmin string
}

func newConformance(t *testing.T) *conformance {
	t.Helper()
	c := &conformance{live: newLive(t, &httpapi.Options{AllowedOrigins: []string{"https://app.example"}}, nil)}
	for _, r := range []struct {
		role projectdata.Role
		dst  *string
	}{{projectdata.RoleWrite, &c.write}, {projectdata.RoleRead, &c.read}} {
		tok, err := c.store.CreateToken(ctx, "acme", projectdata.NewToken{Role: r.role})
		if err != nil {
			t.Fatal(err)
		}
		*r.dst = tok.Token
	}
	_, tok, err := c.store.CreateProject(ctx, "empty", "")
	if err != nil {
		t.Fatal(err)
	}
	c.emptyAdmin = tok.Token
	_, _, err = c.store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// token returns the secret of a role's token of project acme ("" for none).
func (c *conformance) token(role string) string {
	return map[string]string{"admin": c.admin, "write": c.write, "read": c.read, "empty": c.emptyAdmin}[role]
}

// send sends a request as the role's token, the body as JSON unless the
// headers say otherwise (a Content-Type of "-" sends none).
func (c *conformance) send(method, path, role, body string, headers ...string) liveResponse {
	c.t.Helper()
	var h []string
	if tok := c.token(role); tok != "" {
		h = append(h, "Authorization", "Bearer "+tok)
	}
	if body != "" {
		h = append(h, "Content-Type", "application/json")
	}
	h = append(h, headers...)
	return c.call(method, path, body, h...)
}

// env decodes the answer as the envelope, numbers as json.Number.
func (r liveResponse) env(t *testing.T) (env struct {
	OK    bool           `json:"ok"`
	Data  map[string]any `json:"data"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(r.body))
	d.UseNumber()
	if err := d.Decode(&env); err != nil {
		t.Fatalf("not an envelope: %v\n%s", err, r.body)
	}
	return env
}

// TestConformance checks, route by route, what an external test suite of
// the specification and the contract checks and the other tests of this
// package do not: the order of the checks when several fail, Content-Type
// handling, null and absent fields, clamped limits, the row and parameter
// limits decided while the body streams, empty lists and the operation
// fields. Each case gives the status and code wanted and, when it says
// more, checks the data.
func TestConformance(t *testing.T) {
	c := newConformance(t)
	rows := func(n int, tail string) string { return "[" + strings.Repeat(`{},`, n) + tail }
	type check func(is *is.I, data map[string]any, raw []byte)
	dataIs := func(key string, want any) check {
		return func(is *is.I, data map[string]any, _ []byte) { is.Equal(data[key], want) }
	}
	cases := []struct {
		name, method, path, role, body string
		headers                        []string
		status                         int
		code                           string
		check                          check
	}{
		// Empty lists are [] (never null or absent).
		{name: "EmptyTableListIsArray", method: "GET", path: "/projects/empty/table", role: "empty", status: 200, check: dataIs("tables", []any{})},
		{name: "EmptyExportListIsArray", method: "GET", path: "/projects/empty/exports", role: "empty", status: 200, check: dataIs("exports", []any{})},
		{name: "EmptyIndexListIsArray", method: "GET", path: "/projects/acme/indexes/items", role: "read", status: 200, check: dataIs("indexes", []any{})},
		{name: "EmptyQueryRowsIsArray", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT * FROM items WHERE 0"}`, status: 200, check: dataIs("rows", []any{})},
		{name: "EmptyRecordListIsArray", method: "GET", path: "/projects/acme/records/items?where=%7B%22qty%22%3A-1%7D", role: "read", status: 200, check: dataIs("rows", []any{})},
		{name: "EmptyInsertIdsIsArray", method: "POST", path: "/projects/acme/records/items", role: "write", body: `[]`, status: 201, check: dataIs("inserted_ids", []any{})},

		// The order of checks: route, project, token, role, operation
		// headers, body (media type, JSON, size), operation.
		{name: "WrongMethodBeforeUnknownProject", method: "PUT", path: "/projects/nope", status: 405, code: "method_not_allowed"},
		{name: "UnknownProjectBeforeRunIDHeader", method: "GET", path: "/projects/nope", headers: []string{"X-Operation-Run-Id", "bad"}, status: 404, code: "project_not_found"},
		{name: "RoleBeforeUnknownTable", method: "DELETE", path: "/projects/acme/table/nope", role: "read", status: 403, code: "permission_denied"},
		{name: "RoleBeforeMediaType", method: "PATCH", path: "/projects/acme", role: "read", body: `{"project_name":"x"}`, headers: []string{"Content-Type", "text/plain"}, status: 403, code: "permission_denied"},
		{name: "RunIDHeaderBeforeBody", method: "PATCH", path: "/projects/acme/table/nope", role: "admin", body: `{bad`, headers: []string{"X-Operation-Run-Id", "bad"}, status: 400, code: "invalid_operation_run_id"},
		{name: "MediaTypeBeforeUnknownTable", method: "POST", path: "/projects/acme/records/nope", role: "write", body: `{}`, headers: []string{"Content-Type", "text/plain"}, status: 415, code: "unsupported_media_type"},
		{name: "BadJSONBeforeUnknownTable", method: "POST", path: "/projects/acme/records/nope", role: "write", body: `{bad`, status: 400, code: "invalid_json"},
		{name: "TooManyRowsBeforeUnknownTable", method: "POST", path: "/projects/acme/records/nope", role: "write", body: rows(10000, `{}]`), status: 413, code: "too_many_rows"},

		// Content-Type: JSON in UTF-8, however spelled; no Content-Type is
		// taken as JSON; an empty body needs none. No content coding.
		{name: "ContentTypeCharsetWithoutSpace", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "application/json;charset=UTF-8"}, status: 200},
		{name: "ContentTypeCaseInsensitive", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "Application/JSON"}, status: 200},
		{name: "ContentTypeStructuredJSON", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "application/merge-patch+json"}, status: 200},
		{name: "ContentTypeMissing", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", ""}, status: 200},
		{name: "ContentTypeOtherCharset", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "application/json; charset=iso-8859-1"}, status: 415, code: "unsupported_media_type"},
		{name: "ContentTypeTextJSON", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "text/json"}, status: 415, code: "unsupported_media_type"},
		{name: "ContentTypeMalformed", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Type", "application/json; charset"}, status: 415, code: "unsupported_media_type"},
		{name: "ContentEncodingGzip", method: "PATCH", path: "/projects/acme", role: "admin", body: "\x1f\x8b\x08\x00", headers: []string{"Content-Encoding", "gzip"}, status: 415, code: "unsupported_media_type"},
		{name: "ContentEncodingIdentity", method: "PATCH", path: "/projects/acme", role: "admin", body: `{"project_name":"Acme"}`, headers: []string{"Content-Encoding", "identity"}, status: 200},
		{name: "ContentTypeOfAnEmptyBody", method: "POST", path: "/projects/acme/auth/tokens", role: "admin", headers: []string{"Content-Type", "text/plain"}, status: 201},

		// Body limits, decided while the body streams (CONTRACT §10).
		{name: "RowTenThousandAndOneRefusedBeforeTheRest", method: "POST", path: "/projects/acme/records/items", role: "write", body: rows(10000, `{} garbage`), status: 413, code: "too_many_rows"},
		{name: "TenThousandRowsInsert", method: "POST", path: "/projects/acme/records/items", role: "write", body: rows(9999, `{}]`), status: 201, check: dataIs("inserted_count", json.Number("10000"))},
		{name: "ParamsBeyondSQLiteRefusedBeforeTheRest", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","params":[` + strings.Repeat(`1,`, 32767) + `garbage`, status: 400, code: "invalid_request"},

		// Query body: limit clamped to 1..1000 (default 500), an integer.
		{name: "QueryLimitNegativeClamped", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":-5}`, status: 200, check: dataIs("limit", json.Number("1"))},
		{name: "QueryLimitAboveClamped", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":5000}`, status: 200, check: dataIs("limit", json.Number("1000"))},
		{name: "QueryLimitNullIsDefault", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":null}`, status: 200, check: dataIs("limit", json.Number("500"))},
		{name: "QueryLimitIntegralFloat", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":2.0}`, status: 200, check: dataIs("limit", json.Number("2"))},
		{name: "QueryLimitFraction", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":2.5}`, status: 400, code: "invalid_request"},
		{name: "QueryLimitString", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","limit":"5"}`, status: 400, code: "invalid_request"},
		{name: "QuerySQLAndQuery", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":"SELECT 1","query":"SELECT 2"}`, status: 400, code: "invalid_request"},
		{name: "QueryNullSQLWithQuery", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":null,"query":"SELECT 2 AS n"}`, status: 200, check: dataIs("rows", []any{map[string]any{"n": json.Number("2")}})},
		{name: "QuerySQLNotString", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":5}`, status: 400, code: "invalid_request"},
		{name: "QueryEmptySQL", method: "POST", path: "/projects/acme/query", role: "read", body: `{"sql":""}`, status: 400, code: "invalid_request"},

		// Export list: limit clamped to 1..500; no query on the
		// not-found deletion.
		{name: "ExportLimitAboveClamped", method: "GET", path: "/projects/acme/exports?limit=1000", role: "read", status: 200, check: dataIs("limit", json.Number("500"))},
		{name: "DeleteNotFoundExportsTakesNoQuery", method: "DELETE", path: "/projects/acme/exports/not-found?status=ready", role: "admin", status: 400, code: "invalid_request"},

		// Null and absent fields.
		{name: "AddColumnNullableNullIsDefault", method: "POST", path: "/projects/acme/column/items", role: "admin", body: `{"column_name":"note","is_nullable":null,"column_type":null}`, status: 201, check: func(is *is.I, data map[string]any, _ []byte) {
			col := data["column"].(map[string]any)
			is.Equal(col["is_nullable"], json.Number("1"))
			is.Equal(col["column_type"], "TEXT")
		}},
		{name: "AddColumnNullableNotBoolean", method: "POST", path: "/projects/acme/column/items", role: "admin", body: `{"column_name":"note2","is_nullable":1}`, status: 400, code: "invalid_request"},
		{name: "AddColumnNameMissing", method: "POST", path: "/projects/acme/column/items", role: "admin", body: `{}`, status: 400, code: "invalid_column_name"},
		{name: "TokenTypeNullIsDefault", method: "POST", path: "/projects/acme/auth/tokens", role: "admin", body: `{"token_type":null,"token_name":null}`, status: 201},
		{name: "TokenNameNotString", method: "POST", path: "/projects/acme/auth/tokens", role: "admin", body: `{"token_name":5}`, status: 400, code: "invalid_request"},
		{name: "BulkWhereNullIsAbsent", method: "PATCH", path: "/projects/acme/records/items", role: "write", body: `{"data":{"qty":1},"where":null}`, status: 400, code: "where_required"},
		{name: "BulkWhereEmptyArray", method: "DELETE", path: "/projects/acme/records/items", role: "write", body: `{"where":[]}`, status: 400, code: "where_required"},
		{name: "BulkAllowAllNotBoolean", method: "DELETE", path: "/projects/acme/records/items", role: "admin", body: `{"allow_all":"yes"}`, status: 400, code: "invalid_request"},
		{name: "BulkDataNull", method: "PATCH", path: "/projects/acme/records/items", role: "write", body: `{"data":null,"where":{"id":1}}`, status: 400, code: "invalid_request"},
		{name: "BulkWhereScalar", method: "PATCH", path: "/projects/acme/records/items", role: "write", body: `{"data":{"qty":1},"where":5}`, status: 400, code: "invalid_where"},
		{name: "InsertNull", method: "POST", path: "/projects/acme/records/items", role: "write", body: `null`, status: 400, code: "invalid_request"},
		{name: "InsertRowNotObject", method: "POST", path: "/projects/acme/records/items", role: "write", body: `[{},5]`, status: 400, code: "invalid_request"},
		{name: "InsertArrayValue", method: "POST", path: "/projects/acme/records/items", role: "write", body: `[{"name":[1]}]`, status: 400, code: "invalid_column_value"},
		{name: "IndexColumnsNotArray", method: "POST", path: "/projects/acme/indexes/items", role: "admin", body: `{"columns":"name"}`, status: 400, code: "invalid_request"},
		{name: "IndexUniqueNotBoolean", method: "POST", path: "/projects/acme/indexes/items", role: "admin", body: `{"columns":["name"],"unique":"yes"}`, status: 400, code: "invalid_request"},
		{name: "TableDisplayNameNotString", method: "PATCH", path: "/projects/acme/table/items", role: "admin", body: `{"display_name":5}`, status: 400, code: "invalid_request"},

		// Operation headers: sent, the three fields are echoed.
		{name: "RunIDAloneEchoesTheThreeFields", method: "GET", path: "/projects/acme", role: "read", headers: []string{"X-Operation-Run-Id", "oprun_abc"}, status: 200, check: func(is *is.I, _ map[string]any, raw []byte) {
			var env map[string]any
			is.NoErr(json.Unmarshal(raw, &env))
			key, ok := env["operation_key"]
			is.True(ok) // operation_key is echoed when a run id alone was sent
			is.Equal(key, "")
			is.Equal(env["operation_run_id"], "oprun_abc")
			is.Equal(env["operation_grouping_status"], "accepted_provided_run")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			res := c.send(tc.method, tc.path, tc.role, tc.body, tc.headers...)
			env := res.env(t)
			code := ""
			if env.Error != nil {
				code = env.Error.Code
			}
			if res.status != tc.status || code != tc.code {
				t.Fatalf("got %d %q, want %d %q\n%.600s", res.status, code, tc.status, tc.code, res.body)
			}
			is.Equal(env.OK, tc.code == "")
			if tc.check != nil {
				tc.check(is, env.Data, res.body)
			}
		})
	}
}
