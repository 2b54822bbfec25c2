package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var ctx = context.Background()

// api is a Handler over a real Store with project "acme" and a token of
// each role.
type api struct {
	t                  *testing.T
	store              *projectdata.Store
	h                  *httpapi.Handler
	admin, write, read string
	clock              *pdtest.Clock
	dir                string // the Store's data folder
}

func newAPI(t *testing.T, opts *httpapi.Options) *api {
	t.Helper()
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC))
	store, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
	_, admin, err := store.CreateProject(ctx, "acme", "Acme")
	if err != nil {
		t.Fatal(err)
	}
	a := &api{t: t, store: store, admin: admin.Token, clock: clock, dir: dir}
	for _, r := range []struct {
		role projectdata.Role
		dst  *string
	}{{projectdata.RoleWrite, &a.write}, {projectdata.RoleRead, &a.read}} {
		tok, err := store.CreateToken(ctx, "acme", projectdata.NewToken{Role: r.role, Name: string(r.role)})
		if err != nil {
			t.Fatal(err)
		}
		*r.dst = tok.Token
	}
	if opts == nil {
		opts = &httpapi.Options{}
	}
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	a.h = httpapi.New(store, opts)
	return a
}

// response is a decoded answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	Env    struct {
		OK    bool            `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID               string `json:"request_id"`
		OperationKey            string `json:"operation_key"`
		OperationRunID          string `json:"operation_run_id"`
		OperationGroupingStatus string `json:"operation_grouping_status"`
		Meta                    struct {
			GeneratedAt string `json:"generated_at"`
		} `json:"meta"`
	}
}

// data decodes the envelope's data into a map.
func (r response) data() map[string]any {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(r.Env.Data))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		panic(err)
	}
	return m
}

func (r response) code() string {
	if r.Env.Error == nil {
		return ""
	}
	return r.Env.Error.Code
}

// do sends a request; headers are name/value pairs. A body of "" sends none.
func (a *api) do(method, path, token, body string, headers ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		checkExchange(a.t, req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes())
	}
	res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(res.Body, &res.Env); err != nil {
			a.t.Fatalf("%s %s: body is not an envelope: %v\n%s", method, path, err, res.Body)
		}
	}
	return res
}

// serveInBackground serves req in a goroutine of its own and sends its
// status on the channel it returns, for a request that stays in flight
// while the test goes on.
func (a *api) serveInBackground(req *http.Request) <-chan int {
	code := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		code <- rec.Code
	}()
	return code
}

// must fails the test unless the response has the status (and, on error,
// the code).
func (a *api) must(res response, status int, code string) response {
	a.t.Helper()
	if res.Status != status || res.code() != code {
		a.t.Fatalf("got %d %q, want %d %q\n%s", res.Status, res.code(), status, code, res.Body)
	}
	return res
}

func TestEnvelope(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	res := a.must(a.do("GET", "/projects/acme", a.read, ""), 200, "")
	is.True(res.Env.OK)
	is.True(res.Env.Error == nil)
	is.True(strings.HasPrefix(res.Env.RequestID, "req_"))
	is.Equal(res.Header.Get("X-Request-Id"), res.Env.RequestID)
	is.Equal(res.Env.Meta.GeneratedAt, "2026-11-21T14:05:09.123Z")
	is.Equal(res.Header.Get("Content-Type"), "application/json; charset=utf-8")
	var raw map[string]any
	is.NoErr(json.Unmarshal(res.Body, &raw))
	_, hasKey := raw["operation_key"]
	is.True(!hasKey) // absent without operation headers
	d := res.data()
	is.Equal(d["table_count"], json.Number("0"))
	proj := d["project"].(map[string]any)
	is.Equal(proj["project_slug"], "acme")
	is.Equal(proj["project_name"], "Acme")

	res = a.must(a.do("GET", "/projects/acme/table/x/y/z", a.read, ""), 404, "route_not_found")
	is.True(!res.Env.OK)
	is.Equal(string(res.Env.Data), "null")
	is.True(strings.HasPrefix(res.Env.RequestID, "req_"))
}

func TestHygiene(t *testing.T) {
	a := newAPI(t, &httpapi.Options{MaxBodyBytes: 1024})
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
	}{
		{"UnknownRoute", "GET", "/nope", "", nil, 404, "route_not_found"},
		{"TrailingSlash", "GET", "/projects/acme/", "", nil, 404, "route_not_found"},
		{"WrongMethod", "PUT", "/projects/acme", "", nil, 405, "method_not_allowed"},
		{"BadJSON", "PATCH", "/projects/acme", `{"project_name":`, nil, 400, "invalid_json"},
		{"TwoJSONValues", "PATCH", "/projects/acme", `{"project_name":"a"} {}`, nil, 400, "invalid_json"},
		{"WrongContentType", "PATCH", "/projects/acme", `{"project_name":"a"}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"FormContentType", "POST", "/projects/acme/table", `table_name=x`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"OversizedBody", "POST", "/projects/acme/table", `{"table_name":"` + strings.Repeat("x", 2000) + `"}`, nil, 413, "payload_too_large"},
		{"UnknownField", "POST", "/projects/acme/table", `{"table_name":"t","colums":[]}`, nil, 400, "invalid_request"},
		{"WrongFieldType", "POST", "/projects/acme/table", `{"table_name":5}`, nil, 400, "invalid_request"},
		{"MalformedRunID", "GET", "/projects/acme", "", []string{"X-Operation-Run-Id", "run-1"}, 400, "invalid_operation_run_id"},
		{"LongRunID", "GET", "/projects/acme", "", []string{"X-Operation-Run-Id", "oprun_" + strings.Repeat("a", 65)}, 400, "invalid_operation_run_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			res := a.must(a.do(c.method, c.path, a.admin, c.body, c.headers...), c.status, c.code)
			is.True(!res.Env.OK)
			is.True(res.Env.Error.Message != "")
		})
	}
}

func TestAuthOrder(t *testing.T) {
	a := newAPI(t, nil)
	t.Run("UnknownProjectBeforeToken", func(t *testing.T) {
		a.must(a.do("GET", "/projects/nope/table", "", ""), 404, "project_not_found")
		a.must(a.do("GET", "/projects/nope/table", "pat_bogus", ""), 404, "project_not_found")
		a.must(a.do("GET", "/projects/Bad_Slug/table", "", ""), 400, "invalid_project_slug")
	})
	t.Run("MissingTokenIs401WithChallenge", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/table", "", ""), 401, "invalid_token")
		is.True(strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer"))
		a.must(a.do("GET", "/projects/acme/table", "", "", "Authorization", "Basic YTpi"), 401, "invalid_token")
		a.must(a.do("GET", "/projects/acme/table", "pat_unknown", ""), 401, "invalid_token")
	})
	t.Run("RoleBeforeBody", func(t *testing.T) {
		a.must(a.do("PATCH", "/projects/acme", a.read, `{bad json`), 403, "permission_denied")
		a.must(a.do("PATCH", "/projects/acme", a.admin, `{bad json`), 400, "invalid_json")
	})
	t.Run("TokenBeforeRunIDHeader", func(t *testing.T) {
		a.must(a.do("GET", "/projects/acme", "", "", "X-Operation-Run-Id", "bad"), 401, "invalid_token")
	})
	t.Run("RevokedToken", func(t *testing.T) {
		tok, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{})
		if err != nil {
			t.Fatal(err)
		}
		a.must(a.do("GET", "/projects/acme", tok.Token, ""), 200, "")
		a.must(a.do("DELETE", "/projects/acme/auth/tokens/"+itoa(tok.TokenID), a.admin, ""), 200, "")
		a.must(a.do("GET", "/projects/acme", tok.Token, ""), 401, "invalid_token")
	})
	t.Run("ExpiredToken", func(t *testing.T) {
		exp := a.clock.Now().Add(time.Minute)
		tok, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{ExpiresAt: &exp})
		if err != nil {
			t.Fatal(err)
		}
		a.must(a.do("GET", "/projects/acme", tok.Token, ""), 200, "")
		a.clock.Advance(2 * time.Minute)
		a.must(a.do("GET", "/projects/acme", tok.Token, ""), 401, "invalid_token")
	})
	t.Run("TokenOfAnotherProject", func(t *testing.T) {
		_, other, err := a.store.CreateProject(ctx, "other", "")
		if err != nil {
			t.Fatal(err)
		}
		a.must(a.do("GET", "/projects/acme", other.Token, ""), 401, "invalid_token")
	})
}

func TestOperationHeaders(t *testing.T) {
	a := newAPI(t, nil)
	t.Run("ProvidedRunIsEchoed", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme", a.read, "", "X-Operation-Key", "nightly-sync", "X-Operation-Run-Id", "oprun_abc-1"), 200, "")
		is.Equal(res.Env.OperationKey, "nightly-sync")
		is.Equal(res.Env.OperationRunID, "oprun_abc-1")
		is.Equal(res.Env.OperationGroupingStatus, "accepted_provided_run")
	})
	t.Run("KeyAloneGetsGeneratedRun", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme", a.read, "", "X-Operation-Key", "k"), 200, "")
		is.Equal(res.Env.OperationKey, "k")
		is.True(strings.HasPrefix(res.Env.OperationRunID, "oprun_"))
		is.Equal(res.Env.OperationGroupingStatus, "generated_run")
	})
	t.Run("OneOfEachAndUTF8", func(t *testing.T) {
		// Two of a header: which one a proxy in front read is unknown. A
		// key that is not UTF-8 could not be echoed as sent.
		for _, h := range []http.Header{
			{"X-Operation-Key": {"a", "b"}},
			{"X-Operation-Run-Id": {"oprun_a", "oprun_b"}},
			{"X-Operation-Key": {"k\xff"}},
		} {
			req := httptest.NewRequest("GET", "/projects/acme", nil)
			req.Header = h
			req.Header.Set("Authorization", "Bearer "+a.read)
			rec := httptest.NewRecorder()
			a.h.ServeHTTP(rec, req)
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"invalid_request"`) {
				t.Errorf("%v: %d %s", h, rec.Code, rec.Body)
			}
		}
	})
	t.Run("EchoedOnErrorsToo", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/column/nope", a.read, "", "X-Operation-Run-Id", "oprun_x"), 404, "table_not_found")
		is.Equal(res.Env.OperationRunID, "oprun_x")
	})
}

func TestProjectRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("PATCH", "/projects/acme", a.write, `{"project_name":"X"}`), 403, "permission_denied")
	a.must(a.do("PATCH", "/projects/acme", a.admin, `{}`), 400, "invalid_project_name")
	a.must(a.do("PATCH", "/projects/acme", a.admin, ``), 400, "invalid_project_name")
	a.must(a.do("PATCH", "/projects/acme", a.admin, `{"project_name":""}`), 400, "invalid_project_name")
	a.must(a.do("PATCH", "/projects/acme", a.admin, `{"project_name":7}`), 400, "invalid_project_name")
	a.must(a.do("PATCH", "/projects/acme", a.admin, `{"project_name":null}`), 400, "invalid_project_name")
	// A valid name with a field the route does not take is refused as every
	// route refuses one, not as a bad name.
	res := a.must(a.do("PATCH", "/projects/acme", a.admin, `{"project_name":"Acme 2","extra":1}`), 400, "invalid_request")
	is.True(strings.Contains(res.Env.Error.Message, `"extra"`))
	a.must(a.do("PATCH", "/projects/acme", a.admin, `["Acme 2"]`), 400, "invalid_request")
	res = a.must(a.do("PATCH", "/projects/acme", a.admin, `{"project_name":"Acme 2"}`), 200, "")
	is.Equal(res.data()["project"].(map[string]any)["project_name"], "Acme 2")
	res = a.must(a.do("GET", "/projects/acme", a.read, ""), 200, "")
	is.Equal(res.data()["project"].(map[string]any)["project_name"], "Acme 2")
}

func TestTokenRoutes(t *testing.T) {
	a := newAPI(t, nil)
	t.Run("CreateDefaultsToWrite", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, ""), 201, "")
		tok := res.data()["token"].(map[string]any)
		is.True(strings.HasPrefix(tok["token"].(string), "pat_"))
		is.Equal(tok["token_type"], "project_api_token")
		is.Equal(tok["role"], "write")
		is.Equal(tok["expires_at"], nil)
		_, hasID := tok["token_id"]
		is.True(hasID)
		a.must(a.do("GET", "/projects/acme", tok["token"].(string), ""), 200, "")
	})
	t.Run("CreateWithFields", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"token_name":"ci","token_type":"project_api_token","role":"read","expires_at":"2030-01-01T00:00:00Z"}`), 201, "")
		tok := res.data()["token"].(map[string]any)
		is.Equal(tok["token_name"], "ci")
		is.Equal(tok["role"], "read")
		is.Equal(tok["expires_at"], "2030-01-01T00:00:00.000Z")
		res = a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"expires_at":null}`), 201, "") // null, as absent: never
		is.Equal(res.data()["token"].(map[string]any)["expires_at"], nil)
	})
	t.Run("Refusals", func(t *testing.T) {
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.write, `{}`), 403, "permission_denied")
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.read, `{}`), 403, "permission_denied")
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"token_type":"session"}`), 400, "invalid_token_type")
		// Sent, token_type must be the type: "" and a number are other types.
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"token_type":""}`), 400, "invalid_token_type")
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"token_type":5}`), 400, "invalid_token_type")
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"expires_at":"2020-01-01T00:00:00Z"}`), 400, "invalid_expires_at")
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"expires_at":"tomorrow"}`), 400, "invalid_expires_at")
		// Sent, expires_at must be a timestamp string: a number, a boolean,
		// an object or an array is not one, and the message says so.
		for _, v := range []string{`12345`, `1.5e12`, `true`, `{"at":"2030-01-01T00:00:00Z"}`, `["2030-01-01T00:00:00Z"]`} {
			res := a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"expires_at":`+v+`}`), 400, "invalid_expires_at")
			if msg := res.Env.Error.Message; !strings.Contains(msg, "timestamp string") {
				t.Errorf("expires_at %s: message %q does not say a timestamp string is wanted", v, msg)
			}
		}
		a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"role":"root"}`), 400, "invalid_request")
		a.must(a.do("DELETE", "/projects/acme/auth/tokens/999", a.admin, ""), 404, "token_not_found")
		a.must(a.do("DELETE", "/projects/acme/auth/tokens/abc", a.admin, ""), 404, "token_not_found")
	})
	t.Run("ListNeverShowsSecrets", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/auth/tokens", a.admin, ""), 200, "")
		is.True(!bytes.Contains(res.Body, []byte(a.admin)))
		is.True(!bytes.Contains(res.Body, []byte(`"token"`)))
		toks := res.data()["tokens"].([]any)
		is.True(len(toks) >= 3)
		first := toks[0].(map[string]any)
		for _, k := range []string{"id", "token_type", "token_name", "expires_at", "revoked_at", "last_used_at", "created_at"} {
			_, ok := first[k]
			is.True(ok)
		}
		is.Equal(first["last_used_at"], "2026-11-21T14:05:00.000Z") // the admin token was used
		a.must(a.do("GET", "/projects/acme/auth/tokens", a.write, ""), 403, "permission_denied")
	})
	t.Run("Revoke", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("POST", "/projects/acme/auth/tokens", a.admin, `{"role":"read"}`), 201, "")
		tok := res.data()["token"].(map[string]any)
		id := string(tok["token_id"].(json.Number))
		res = a.must(a.do("DELETE", "/projects/acme/auth/tokens/"+id, a.admin, ""), 200, "")
		is.True(res.data()["token"].(map[string]any)["revoked_at"] != nil)
		a.must(a.do("GET", "/projects/acme", tok["token"].(string), ""), 401, "invalid_token")
	})
}

func TestTableRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.write, `{"table_name":"orders"}`), 403, "permission_denied")
	res := a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"orders","display_name":"Orders","columns":[
		{"column_name":"item"},
		{"column_name":"qty","column_type":"integer","is_nullable":false,"default_value":1},
		{"column_name":"code","is_unique":true}]}`), 201, "")
	d := res.data()
	is.Equal(d["table"].(map[string]any)["table_name"], "orders")
	cols := d["columns"].([]any)
	is.Equal(len(cols), 4)
	qty := cols[2].(map[string]any)
	is.Equal(qty["column_type"], "INTEGER")
	is.Equal(qty["is_nullable"], json.Number("0"))
	is.Equal(qty["default_value"], json.Number("1"))
	is.Equal(cols[0].(map[string]any)["is_primary"], json.Number("1"))
	is.Equal(cols[3].(map[string]any)["is_unique"], json.Number("1"))

	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"ORDERS"}`), 409, "table_exists")
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"a b"}`), 400, "invalid_table_name")
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"x;y"}]}`), 400, "invalid_column_name")
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"x","column_type":"BLOB"}]}`), 400, "invalid_column_type")
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"x","column_type":"INTEGER","default_value":{"a":1}}]}`), 400, "invalid_column_value")

	res = a.must(a.do("GET", "/projects/acme/table", a.read, ""), 200, "")
	tables := res.data()["tables"].([]any)
	is.Equal(len(tables), 1)
	id := string(tables[0].(map[string]any)["id"].(json.Number))

	res = a.must(a.do("PATCH", "/projects/acme/table/"+id, a.admin, `{"display_name":"Bestellungen"}`), 200, "")
	is.Equal(res.data()["table"].(map[string]any)["display_name"], "Bestellungen")
	res = a.must(a.do("PATCH", "/projects/acme/table/orders", a.admin, `{"display_name":null}`), 200, "")
	is.Equal(res.data()["table"].(map[string]any)["display_name"], nil)
	a.must(a.do("PATCH", "/projects/acme/table/nope", a.admin, `{}`), 404, "table_not_found")
	a.must(a.do("PATCH", "/projects/acme/table/orders", a.write, `{}`), 403, "permission_denied")

	res = a.must(a.do("GET", "/projects/acme/column/orders", a.read, ""), 200, "")
	is.Equal(res.data()["table"], "orders")
	is.Equal(len(res.data()["columns"].([]any)), 4)
	res = a.must(a.do("GET", "/projects/acme/column/orders/QTY", a.read, ""), 200, "")
	is.Equal(res.data()["column"].(map[string]any)["column_name"], "qty")
	a.must(a.do("GET", "/projects/acme/column/orders/nope", a.read, ""), 404, "column_not_found")
	a.must(a.do("GET", "/projects/acme/column/nope", a.read, ""), 404, "table_not_found")

	a.must(a.do("DELETE", "/projects/acme/table/_pd_tokens", a.admin, ""), 403, "forbidden")
	a.must(a.do("DELETE", "/projects/acme/table/sqlite_master", a.admin, ""), 403, "forbidden")
	a.must(a.do("DELETE", "/projects/acme/table/nope", a.admin, ""), 404, "table_not_found")
	a.must(a.do("DELETE", "/projects/acme/table/orders", a.write, ""), 403, "permission_denied")
	res = a.must(a.do("DELETE", "/projects/acme/table/"+id, a.admin, ""), 200, "")
	is.Equal(res.data()["deleted"], true)
	is.Equal(res.data()["table_name"], "orders")
}

func TestClosedStoreAnswers503(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	is.NoErr(a.store.Close()) // every Store call now fails; nothing panics
	res := a.do("GET", "/projects/acme", a.read, "")
	is.Equal(res.Status, http.StatusServiceUnavailable)
	is.Equal(res.code(), "store_closed")
}

func itoa(n int64) string { return strings.TrimSpace(string(must(json.Marshal(n)))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestQueryRoute(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n","column_type":"INTEGER"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT 9007199254740993 AS big, ? AS p, :x AS unused","params":[1]}`), 400, "invalid_request")
	res := a.must(a.do("POST", "/projects/acme/query", a.read, `{"query":"SELECT 9007199254740993 AS big, :p AS p","params":{"p":"v"},"limit":3}`), 200, "")
	d := res.data()
	is.Equal(d["row_count"], json.Number("1"))
	is.Equal(d["limit"], json.Number("3"))
	is.Equal(d["truncated"], false)
	is.Equal(d["columns"], []any{"big", "p"})
	row := d["rows"].([]any)[0].(map[string]any)
	is.Equal(row["big"], json.Number("9007199254740993")) // exact through JSON
	is.Equal(row["p"], "v")
	_, hasDuration := d["duration_ms"]
	is.True(hasDuration)

	a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"DELETE FROM t"}`), 400, "write_sql_forbidden")
	a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":"SELECT * FROM _pd_tokens"}`), 403, "query_table_denied")
	a.must(a.do("POST", "/projects/acme/query", a.read, `{}`), 400, "invalid_request")
	a.must(a.do("POST", "/projects/acme/query", a.read, ``), 400, "invalid_request")
	a.must(a.do("POST", "/projects/acme/query", a.read, `{"sql":`), 400, "invalid_json")
	a.must(a.do("POST", "/projects/acme/query", "", `{"sql":"SELECT 1"}`), 401, "invalid_token")
}

func TestQueryBudgetsOverHTTP(t *testing.T) {
	store, admin := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: 100 * time.Millisecond, QueryMaxBytes: 1 << 10})
	a := &api{t: t, store: store, admin: admin, h: httpapi.New(store, nil)}
	a.must(a.do("POST", "/projects/acme/query", admin, `{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"}`), 422, "query_budget_exceeded")
	a.must(a.do("POST", "/projects/acme/query", admin, `{"sql":"SELECT zeroblob(5000)"}`), 413, "query_result_too_large")
	// A single record over the budget, read or updated, as a list refuses it.
	a.must(a.do("POST", "/projects/acme/table", admin, `{"table_name":"big","columns":[{"column_name":"v"}]}`), 201, "")
	if _, err := store.Insert(ctx, "acme", "big", []projectdata.Row{{"v": strings.Repeat("x", 100<<10)}}); err != nil {
		t.Fatal(err)
	}
	a.must(a.do("GET", "/projects/acme/records/big/1", admin, ""), 413, "query_result_too_large")
	a.must(a.do("PATCH", "/projects/acme/records/big/1", admin, `{"v":"y"}`), 200, "")
	a.must(a.do("PATCH", "/projects/acme/records/big/1", admin, `{"v":"`+strings.Repeat("z", 100<<10)+`"}`), 413, "query_result_too_large")
	a.must(a.do("GET", "/projects/acme/records/big/1", admin, ""), 200, "")
}

func TestColumnChangeRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"n","column_type":"INTEGER"}]}`), 201, "")
	res := a.must(a.do("POST", "/projects/acme/column/t", a.admin, `{"column_name":"note"}`), 201, "")
	col := res.data()["column"].(map[string]any)
	is.Equal(res.data()["table"], "t")
	is.Equal(col["column_type"], "TEXT")
	is.Equal(col["is_nullable"], json.Number("1"))
	is.Equal(col["is_unique"], json.Number("0"))
	id := string(col["id"].(json.Number))

	a.must(a.do("POST", "/projects/acme/column/t", a.admin, `{"column_name":"NOTE"}`), 409, "column_exists")
	a.must(a.do("POST", "/projects/acme/column/t", a.admin, `{"column_name":"k","is_primary":true}`), 400, "unsupported_column_change")
	a.must(a.do("POST", "/projects/acme/column/t", a.admin, `{"column_name":"k","column_type":"uuid"}`), 400, "invalid_column_type")
	a.must(a.do("POST", "/projects/acme/column/t", a.write, `{"column_name":"k"}`), 403, "permission_denied")
	a.must(a.do("POST", "/projects/acme/column/nope", a.admin, `{"column_name":"k"}`), 404, "table_not_found")

	res = a.must(a.do("PATCH", "/projects/acme/column/t/"+id, a.admin, `{"new_column_name":"memo","is_unique":true,"default_value":"-"}`), 200, "")
	col = res.data()["column"].(map[string]any)
	is.Equal(col["column_name"], "memo")
	is.Equal(string(col["id"].(json.Number)), id)
	is.Equal(col["is_unique"], json.Number("1"))
	is.Equal(col["default_value"], "-")
	a.must(a.do("PATCH", "/projects/acme/column/t/nope", a.admin, `{}`), 404, "column_not_found")
	a.must(a.do("PATCH", "/projects/acme/column/t/id", a.admin, `{"is_nullable":true}`), 400, "unsupported_column_change")
	a.must(a.do("PATCH", "/projects/acme/column/t/memo", a.admin, `{"is_nullable":null}`), 400, "invalid_request")

	// Conflicts that depend on the data.
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"n":1,"memo":"a"},{"n":1,"memo":"b"},{"memo":"c"}]`), 201, "")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"column_type":"TEXT"}`), 409, "column_type_locked")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"is_nullable":false}`), 400, "invalid_column_change")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"is_unique":true}`), 409, "unique_violation")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"default_value":"abc"}`), 400, "invalid_column_value")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"new_column_name":"a b"}`), 400, "invalid_column_name")
	a.must(a.do("PATCH", "/projects/acme/column/t/n", a.admin, `{"new_column_name":"MEMO"}`), 409, "column_exists")
	a.must(a.do("POST", "/projects/acme/column/t", a.admin, `{"column_name":"req","is_nullable":false}`), 400, "invalid_column_change")
	res = a.must(a.do("GET", "/projects/acme/column/t/n", a.read, ""), 200, "")
	is.Equal(res.data()["column"].(map[string]any)["column_type"], "INTEGER") // unchanged by the refusals
}

func TestRecordRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[
		{"column_name":"name","is_unique":true},{"column_name":"n","column_type":"INTEGER","is_nullable":false,"default_value":0}]}`), 201, "")

	t.Run("Insert", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"name":"a","n":9007199254740993}`), 201, "")
		is.Equal(res.data()["inserted_count"], json.Number("1"))
		is.Equal(res.data()["inserted_ids"], []any{json.Number("1")})
		res = a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"b","n":"2"},{},{"name":"c","n":3}]`), 201, "")
		is.Equal(res.data()["inserted_ids"], []any{json.Number("2"), json.Number("3"), json.Number("4")})
		is.Equal(res.data()["table"], "t")
	})
	t.Run("InsertRefusals", func(t *testing.T) {
		is := is.New(t)
		a.must(a.do("POST", "/projects/acme/records/t", a.read, `{}`), 403, "permission_denied")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, ``), 400, "invalid_request")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `5`), 400, "invalid_request")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"name":`), 400, "invalid_json")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"name":{"x":1}}`), 400, "invalid_column_value")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"n":"abc"}`), 400, "invalid_column_value")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"nope":1}`), 404, "column_not_found")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"name":"a"}`), 409, "unique_violation")
		a.must(a.do("POST", "/projects/acme/records/t", a.write, `{"n":null}`), 400, "not_null_violation")
		a.must(a.do("POST", "/projects/acme/records/nope", a.write, `{}`), 404, "table_not_found")
		res := a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"x1"},{"name":"x2"},{"name":"x3"},{"name":"a"},{"name":"x5"}]`), 409, "unique_violation")
		is.True(strings.Contains(res.Env.Error.Message, "row 3"))
		res = a.must(a.do("GET", "/projects/acme/records/t", a.read, ""), 200, "")
		is.Equal(res.data()["total"], json.Number("4")) // nothing of the failed batch
	})
	t.Run("GetAndDelete", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/records/t/1", a.read, ""), 200, "")
		row := res.data()["row"].(map[string]any)
		is.Equal(row["n"], json.Number("9007199254740993"))
		is.Equal(row["name"], "a")
		a.must(a.do("GET", "/projects/acme/records/t/99", a.read, ""), 404, "record_not_found")
		a.must(a.do("DELETE", "/projects/acme/records/t/4", a.read, ""), 403, "permission_denied")
		res = a.must(a.do("DELETE", "/projects/acme/records/t/4", a.write, ""), 200, "")
		is.Equal(res.data()["deleted"], true)
		is.Equal(res.data()["id"], "4")
		a.must(a.do("DELETE", "/projects/acme/records/t/4", a.write, ""), 404, "record_not_found")
	})
	t.Run("List", func(t *testing.T) {
		is := is.New(t)
		res := a.must(a.do("GET", "/projects/acme/records/t?limit=2&offset=1&order=-id", a.read, ""), 200, "")
		d := res.data()
		is.Equal(d["total"], json.Number("3"))
		is.Equal(d["limit"], json.Number("2"))
		is.Equal(d["offset"], json.Number("1"))
		rows := d["rows"].([]any)
		is.Equal(len(rows), 2)
		is.Equal(rows[0].(map[string]any)["id"], json.Number("2"))
		a.must(a.do("GET", "/projects/acme/records/t?limit=x", a.read, ""), 400, "invalid_request")
		a.must(a.do("GET", "/projects/acme/records/t?order=nope", a.read, ""), 404, "column_not_found")
		res = a.must(a.do("GET", "/projects/acme/records/t?limit=0", a.read, ""), 200, "")
		is.Equal(res.data()["limit"], json.Number("1"))
	})
	t.Run("BulkUpdateAndDelete", func(t *testing.T) {
		is := is.New(t)
		a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":5}}`), 400, "where_required")
		res := a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":5},"where":{}}`), 400, "where_required")
		is.True(strings.Contains(res.Env.Error.Message, "allow_all"))
		a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":5},"allow_all":true}`), 403, "permission_denied")
		a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{},"where":{"id":1}}`), 400, "invalid_request")
		a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":1},"where":[{"column":"n","op":"~"}]}`), 400, "invalid_where")
		a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":1},"where":[{"column":"zz","op":"=","value":1}]}`), 404, "column_not_found")
		res = a.must(a.do("PATCH", "/projects/acme/records/t", a.write, `{"data":{"n":5},"where":[{"column":"n","op":"<","value":4}]}`), 200, "")
		is.Equal(res.data()["affected_rows"], json.Number("2"))
		res = a.must(a.do("PATCH", "/projects/acme/records/t", a.admin, `{"data":{"n":7},"allow_all":true}`), 200, "")
		is.Equal(res.data()["affected_rows"], json.Number("3"))
		a.must(a.do("DELETE", "/projects/acme/records/t", a.write, ``), 400, "where_required")
		res = a.must(a.do("DELETE", "/projects/acme/records/t", a.write, `{"where":{"name":"1 OR 1=1"}}`), 200, "")
		is.Equal(res.data()["affected_rows"], json.Number("0"))
		res = a.must(a.do("DELETE", "/projects/acme/records/t", a.write, `{"where":[{"column":"name","op":"is_null"}]}`), 200, "")
		is.Equal(res.data()["affected_rows"], json.Number("1"))
		res = a.must(a.do("DELETE", "/projects/acme/records/t", a.admin, `{"allow_all":true}`), 200, "")
		is.Equal(res.data()["affected_rows"], json.Number("2"))
	})
	t.Run("TooManyRows", func(t *testing.T) {
		store, admin := pdtest.NewProject(t, &projectdata.Options{MaxInsertRows: 3})
		b := &api{t: t, store: store, admin: admin, h: httpapi.New(store, nil)}
		b.must(b.do("POST", "/projects/acme/table", admin, `{"table_name":"t"}`), 201, "")
		b.must(b.do("POST", "/projects/acme/records/t", admin, `[{},{},{},{}]`), 413, "too_many_rows")
		b.must(b.do("POST", "/projects/acme/records/t", admin, `[{},{},{}]`), 201, "")
	})
}

func TestIndexRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"a"},{"column_name":"b","is_unique":true}]}`), 201, "")
	res := a.must(a.do("POST", "/projects/acme/indexes/t", a.admin, `{"columns":["a","b"]}`), 201, "")
	idx := res.data()["index"].(map[string]any)
	is.Equal(idx["name"], "idx_t_a_b")
	is.Equal(idx["origin"], "c")
	is.Equal(idx["managed"], true)
	is.Equal(idx["partial"], false)
	is.Equal(idx["unique"], false)
	is.Equal(idx["columns"], []any{"a", "b"})
	is.True(strings.HasPrefix(idx["sql"].(string), "CREATE INDEX"))
	a.must(a.do("POST", "/projects/acme/indexes/t", a.admin, `{"columns":["a"],"index_name":"idx_t_a_b"}`), 409, "index_exists")
	a.must(a.do("POST", "/projects/acme/indexes/t", a.admin, `{"columns":["a"],"index_name":"t"}`), 409, "index_exists")
	a.must(a.do("POST", "/projects/acme/indexes/t", a.admin, `{"columns":["zz"]}`), 404, "column_not_found")
	a.must(a.do("POST", "/projects/acme/indexes/t", a.admin, `{"columns":[]}`), 400, "invalid_request")
	a.must(a.do("POST", "/projects/acme/indexes/t", a.write, `{"columns":["a"]}`), 403, "permission_denied")
	res = a.must(a.do("GET", "/projects/acme/indexes/t", a.read, ""), 200, "")
	is.Equal(len(res.data()["indexes"].([]any)), 1) // the autoindex of b is not managed
	a.must(a.do("DELETE", "/projects/acme/indexes/t/sqlite_autoindex_t_1", a.admin, ""), 409, "index_not_managed")
	a.must(a.do("DELETE", "/projects/acme/indexes/t/nope", a.admin, ""), 404, "index_not_found")
	res = a.must(a.do("DELETE", "/projects/acme/indexes/t/idx_t_a_b", a.admin, ""), 200, "")
	is.Equal(res.data()["deleted"], true)
	is.Equal(res.data()["index_name"], "idx_t_a_b")
	a.must(a.do("GET", "/projects/acme/indexes/nope", a.read, ""), 404, "table_not_found")
}

func TestExportRoutes(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"a,b"},{"name":"say \"hi\""},{}]`), 201, "")

	a.must(a.do("POST", "/projects/acme/exports", a.read, `{"table":"t","format":"csv"}`), 403, "permission_denied")
	a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"xlsx"}`), 400, "invalid_export_format")
	a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"nope","format":"csv"}`), 404, "table_not_found")
	res := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"csv"}`), 201, "")
	exp := res.data()["export"].(map[string]any)
	id := exp["id"].(string)
	is.True(strings.HasPrefix(id, "exp_"))
	is.Equal(exp["status"], "ready")
	is.Equal(exp["row_count"], json.Number("3"))
	is.Equal(exp["download_url"], "/projects/acme/export/download/"+id)
	for _, k := range []string{"kind", "scope", "project", "table", "format", "download_name", "storage_backend", "content_type", "table_count", "size_bytes", "sha256", "status_reason", "missing_at", "created_at", "expires_at"} {
		_, ok := exp[k]
		is.True(ok)
	}

	dl := a.do("GET", exp["download_url"].(string), a.read, "")
	is.Equal(dl.Status, 200)
	is.Equal(dl.Header.Get("Content-Type"), "text/csv; charset=utf-8")
	is.True(strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment; filename="))
	is.Equal(dl.Header.Get("ETag"), `"`+exp["sha256"].(string)+`"`)
	is.Equal(dl.Header.Get("Content-Length"), string(exp["size_bytes"].(json.Number)))
	is.Equal(string(dl.Body), "id,name\n1,\"a,b\"\n2,\"say \"\"hi\"\"\"\n3,\n")
	a.must(a.do("GET", "/projects/acme/export/download/exp_nope", a.read, ""), 404, "export_not_found")
	a.must(a.do("GET", "/projects/acme/export/download/exp_%2e%2e", a.read, ""), 404, "export_not_found")
	a.must(a.do("GET", "/projects/acme/export/download/..%2fproject.db", a.read, ""), 404, "export_not_found") // one segment, refused by the id check
	a.must(a.do("GET", exp["download_url"].(string), "", ""), 401, "invalid_token")

	res = a.must(a.do("GET", "/projects/acme/exports", a.read, ""), 200, "")
	d := res.data()
	is.Equal(d["total"], json.Number("1"))
	is.Equal(d["limit"], json.Number("50"))
	is.Equal(d["offset"], json.Number("0"))
	a.must(a.do("GET", "/projects/acme/exports?status=gone", a.read, ""), 400, "invalid_export_status")
	a.must(a.do("GET", "/projects/acme/exports?status=", a.read, ""), 400, "invalid_export_status")
	a.must(a.do("GET", "/projects/acme/exports?limit=x", a.read, ""), 400, "invalid_request")
	res = a.must(a.do("GET", "/projects/acme/exports?limit=0&offset=0", a.read, ""), 200, "")
	is.Equal(res.data()["limit"], json.Number("1")) // an explicit limit below 1 is clamped, not the default
	a.must(a.do("GET", "/projects/acme/exports?offset=-1", a.read, ""), 400, "invalid_request")
	res = a.must(a.do("GET", "/projects/acme/exports?status=not_found", a.read, ""), 200, "")
	is.Equal(res.data()["total"], json.Number("0"))

	a.must(a.do("DELETE", "/projects/acme/exports/not-found", a.write, ""), 403, "permission_denied")
	res = a.must(a.do("DELETE", "/projects/acme/exports/not-found", a.admin, ""), 200, "")
	is.Equal(res.data()["deleted_count"], json.Number("0"))
	is.Equal(res.data()["scope"], "project")
	is.Equal(res.data()["status"], "not_found")
	is.Equal(res.data()["project"], "acme")
}
