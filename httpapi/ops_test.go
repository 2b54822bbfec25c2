package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// live is a Handler over a real Store (project "acme"), served by a real
// HTTP server.
type live struct {
	t     *testing.T
	store *projectdata.Store
	h     *httpapi.Handler
	srv   *httptest.Server
	admin string
}

// newLive serves the Handler made with opts; mount, when set, wraps it
// (to mount it under a prefix).
func newLive(t *testing.T, opts *httpapi.Options, mount func(http.Handler) http.Handler) *live {
	t.Helper()
	store, admin := pdtest.NewProject(t, nil)
	h := httpapi.New(store, opts)
	var served http.Handler = h
	if mount != nil {
		served = mount(h)
	}
	srv := httptest.NewServer(served)
	t.Cleanup(srv.Close)
	return &live{t: t, store: store, h: h, srv: srv, admin: admin}
}

// liveResponse is an answer of the live server.
type liveResponse struct {
	status int
	header http.Header
	body   []byte
}

// envelope decodes the body as the envelope.
func (r liveResponse) envelope() (env struct {
	OK    bool           `json:"ok"`
	Data  map[string]any `json:"data"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}) {
	if err := json.Unmarshal(r.body, &env); err != nil {
		panic(string(r.body))
	}
	return env
}

// call sends a request to the live server; headers are name/value pairs.
func (l *live) call(method, path, body string, headers ...string) liveResponse {
	l.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, l.srv.URL+path, rd)
	if err != nil {
		l.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := l.srv.Client().Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		l.t.Fatal(err)
	}
	return liveResponse{status: res.StatusCode, header: res.Header, body: b}
}

func TestHealthz(t *testing.T) {
	is := is.New(t)
	l := newLive(t, nil, nil)

	res := l.call("GET", "/healthz", "") // no token
	is.Equal(res.status, 200)
	env := res.envelope()
	is.True(env.OK)
	is.Equal(env.Data["status"], "ok")

	t.Run("ShuttingDownAnswers503", func(t *testing.T) {
		is := is.New(t)
		l.h.BeginShutdown()
		res := l.call("GET", "/healthz", "")
		is.Equal(res.status, 503)
		is.Equal(res.envelope().Error.Code, "store_closed")
		is.Equal(res.header.Get("Retry-After"), "1")
		// The other routes go on serving while the server drains.
		res = l.call("GET", "/projects/acme", "", "Authorization", "Bearer "+l.admin)
		is.Equal(res.status, 200)
	})
	t.Run("ClosedStoreAnswers503", func(t *testing.T) {
		is := is.New(t)
		l := newLive(t, nil, nil)
		is.NoErr(l.store.Close())
		res := l.call("GET", "/healthz", "")
		is.Equal(res.status, 503)
		is.Equal(res.envelope().Error.Code, "store_closed")
	})
}

func TestMetricsRouteOnlyWhenSet(t *testing.T) {
	is := is.New(t)
	l := newLive(t, nil, nil)
	res := l.call("GET", "/metrics", "")
	is.Equal(res.status, 404)
	is.Equal(res.envelope().Error.Code, "route_not_found")
}

func TestOptionsNeverAnswers405(t *testing.T) {
	const origin = "https://app.example"
	l := newLive(t, &httpapi.Options{AllowedOrigins: []string{origin}}, nil)
	preflight := []string{"Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type"}

	t.Run("PreflightFromAllowedOrigin", func(t *testing.T) {
		is := is.New(t)
		res := l.call("OPTIONS", "/projects/acme/records/orders", "", preflight...)
		is.Equal(res.status, 204)
		is.Equal(len(res.body), 0)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), origin)
		is.True(strings.Contains(res.header.Get("Access-Control-Allow-Methods"), "POST"))
		is.True(strings.Contains(res.header.Get("Access-Control-Allow-Methods"), "PATCH"))
		is.True(strings.Contains(res.header.Get("Access-Control-Allow-Headers"), "Authorization"))
		is.True(strings.Contains(res.header.Get("Access-Control-Allow-Headers"), "Content-Type"))
		is.True(strings.Contains(res.header.Get("Access-Control-Allow-Headers"), "Idempotency-Key"))
		is.True(res.header.Get("Access-Control-Max-Age") != "")
		is.Equal(res.header.Get("Vary"), "Origin")
		is.Equal(res.header.Get("Allow"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST")
	})
	t.Run("PreflightFromOtherOriginGetsNoCORSHeaders", func(t *testing.T) {
		is := is.New(t)
		res := l.call("OPTIONS", "/projects/acme/records/orders", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "DELETE")
		is.Equal(res.status, 204)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), "")
		is.Equal(res.header.Get("Access-Control-Allow-Methods"), "")
		is.Equal(res.header.Get("Allow"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST")
	})
	t.Run("PlainOptionsListsTheMethods", func(t *testing.T) {
		is := is.New(t)
		res := l.call("OPTIONS", "/projects/acme/query", "")
		is.Equal(res.status, 204)
		is.Equal(res.header.Get("Allow"), "OPTIONS, POST")
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), "")
	})
	t.Run("OptionsOnUnknownRouteIsRouteNotFound", func(t *testing.T) {
		is := is.New(t)
		res := l.call("OPTIONS", "/nowhere", "", preflight...)
		is.Equal(res.status, 404)
		is.Equal(res.envelope().Error.Code, "route_not_found")
	})
	t.Run("ResponsesToAllowedOriginCarryCORSHeaders", func(t *testing.T) {
		is := is.New(t)
		res := l.call("GET", "/projects/acme", "", "Origin", origin, "Authorization", "Bearer "+l.admin)
		is.Equal(res.status, 200)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), origin)
		is.True(strings.Contains(res.header.Get("Access-Control-Expose-Headers"), "X-Request-Id"))
		res = l.call("GET", "/projects/acme", "", "Origin", origin) // errors too, so the page can read them
		is.Equal(res.status, 401)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), origin)
		res = l.call("GET", "/projects/acme", "", "Origin", "https://evil.example", "Authorization", "Bearer "+l.admin)
		is.Equal(res.status, 200)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), "")
	})
	t.Run("WithoutAllowedOriginsNoCORSHeaderAtAll", func(t *testing.T) {
		is := is.New(t)
		l := newLive(t, nil, nil)
		res := l.call("OPTIONS", "/projects/acme/records/orders", "", preflight...)
		is.Equal(res.status, 204)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), "")
		is.Equal(res.header.Get("Vary"), "")
		is.Equal(res.header.Get("Allow"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST")
	})
	t.Run("AnyOrigin", func(t *testing.T) {
		is := is.New(t)
		l := newLive(t, &httpapi.Options{AllowedOrigins: []string{"*"}}, nil)
		res := l.call("OPTIONS", "/projects/acme/query", "", "Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST")
		is.Equal(res.status, 204)
		is.Equal(res.header.Get("Access-Control-Allow-Origin"), "http://localhost:3000")
	})
}

func TestLinksHonourTheMountPrefix(t *testing.T) {
	stripAPI := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("/api/", http.StripPrefix("/api", h))
		return mux
	}
	for _, c := range []struct {
		name   string
		opts   *httpapi.Options
		mount  func(http.Handler) http.Handler
		prefix string // of the requests
		want   string // of the links
	}{
		{name: "NotMounted", prefix: "", want: ""},
		{name: "StripPrefix", mount: stripAPI, prefix: "/api", want: "/api"},
		{name: "BasePathOption", opts: &httpapi.Options{BasePath: "/v1/"}, prefix: "", want: "/v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			l := newLive(t, c.opts, c.mount)
			auth := []string{"Content-Type", "application/json", "Authorization", "Bearer " + l.admin}
			res := l.call("POST", c.prefix+"/projects/acme/table", `{"table_name":"orders","columns":[{"column_name":"item"}]}`, auth...)
			is.Equal(res.status, 201)
			res = l.call("POST", c.prefix+"/projects/acme/exports", `{"table":"orders","format":"csv"}`, auth...)
			is.Equal(res.status, 201)
			exp := res.envelope().Data["export"].(map[string]any)
			url := exp["download_url"].(string)
			is.Equal(url, c.want+"/projects/acme/export/download/"+exp["id"].(string))

			res = l.call("GET", c.prefix+"/projects/acme/exports", "", auth...)
			is.Equal(res.status, 200)
			listed := res.envelope().Data["exports"].([]any)[0].(map[string]any)
			is.Equal(listed["download_url"], url)

			if c.opts == nil { // the link works as given
				res = l.call("GET", url, "", auth...)
				is.Equal(res.status, 200)
				is.Equal(string(res.body), "id,item\n")
			}
		})
	}
}

func TestAccessLogCarriesCodeAndTokenID(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	l := newLive(t, &httpapi.Options{Logger: logger}, nil)
	tok, err := l.store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleRead})
	is.NoErr(err)

	lines := func() []map[string]any {
		var out []map[string]any
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var m map[string]any
			is.NoErr(json.Unmarshal(line, &m))
			if m["msg"] == "request" {
				out = append(out, m)
			}
		}
		buf.Reset()
		return out
	}

	l.call("GET", "/projects/acme", "", "Authorization", "Bearer "+tok.Token)
	got := lines()
	is.Equal(len(got), 1)
	is.Equal(got[0]["token_id"], float64(tok.TokenID))
	is.Equal(got[0]["status"], float64(200))
	_, hasCode := got[0]["code"]
	is.True(!hasCode) // a success has no error code

	l.call("POST", "/projects/acme/table", `{"table_name":"t"}`, "Authorization", "Bearer "+tok.Token, "Content-Type", "application/json")
	got = lines()
	is.Equal(got[0]["code"], "permission_denied")
	is.Equal(got[0]["token_id"], float64(tok.TokenID)) // authenticated, then refused

	l.call("GET", "/projects/acme", "", "Authorization", "Bearer pat_wrong")
	got = lines()
	is.Equal(got[0]["code"], "invalid_token")
	_, hasID := got[0]["token_id"]
	is.True(!hasID)

	// A request id where the answer has one, and no empty one where it
	// has none (the OpenAPI document, like /metrics, is not the envelope).
	l.call("GET", "/openapi.json", "")
	got = lines()
	is.Equal(len(got), 1)
	_, hasRequestID := got[0]["request_id"]
	is.True(!hasRequestID)

	l.call("GET", "/projects/acme", "", "Authorization", "Bearer "+l.admin)
	raw := buf.String()
	is.True(strings.Contains(raw, `"token_id":1`))
	is.True(strings.Contains(raw, `"request_id":"req_`))
	is.True(!strings.Contains(raw, "pat_")) // never the secret
}

// TestHeadIsGetWithoutBody: every GET route answers HEAD with GET's status
// and headers and no body (RFC 9110: a server must support HEAD); a route
// without GET answers 405 and its Allow says HEAD where GET is.
func TestHeadIsGetWithoutBody(t *testing.T) {
	is := is.New(t)
	l := newLive(t, nil, nil)
	auth := []string{"Authorization", "Bearer " + l.admin}
	is.Equal(l.call("POST", "/projects/acme/table", `{"table_name":"items","columns":[{"column_name":"name"}]}`, append(auth, "Content-Type", "application/json")...).status, 201)
	is.Equal(l.call("POST", "/projects/acme/records/items", `{"name":"a"}`, append(auth, "Content-Type", "application/json")...).status, 201)
	for _, tc := range []struct {
		path   string
		auth   bool
		status int
	}{
		{"/healthz", false, 200},
		{"/openapi.json", false, 200},
		{"/projects/acme", true, 200},
		{"/projects/acme/records/items/1", true, 200},
		{"/projects/acme/records/items/2", true, 404},
		{"/projects/acme/auth/tokens", true, 200}, // written as it is read
		{"/projects/acme/records/items", false, 401},
		{"/projects/acme/changes/stream", true, 200}, // the stream's head, then the end
	} {
		var headers []string
		if tc.auth {
			headers = auth
		}
		head := l.call("HEAD", tc.path, "", headers...)
		is.Equal(head.status, tc.status) // tc.path
		is.Equal(len(head.body), 0)      // tc.path
		if tc.path != "/projects/acme/changes/stream" {
			get := l.call("GET", tc.path, "", headers...)
			is.Equal(head.status, get.status) // tc.path
			is.Equal(head.header.Get("Content-Type"), get.header.Get("Content-Type"))
			is.True(head.header.Get("X-Request-Id") != "" || tc.path == "/openapi.json")
		} else {
			is.Equal(head.header.Get("Content-Type"), "text/event-stream")
		}
	}
	res := l.call("HEAD", "/projects/acme/query", "", auth...)
	is.Equal(res.status, 405)
	is.Equal(res.header.Get("Allow"), "OPTIONS, POST")
	res = l.call("PUT", "/projects/acme/records/items/1", "", auth...)
	is.Equal(res.status, 405)
	is.Equal(res.header.Get("Allow"), "DELETE, GET, HEAD, OPTIONS, PATCH")
	res = l.call("HEAD", "/nowhere", "")
	is.Equal(res.status, 404)
}
