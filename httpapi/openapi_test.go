package httpapi_test

// The OpenAPI document is checked with pb33f/libopenapi-validator, a test
// dependency only: this file and the client's document_test.go are the
// places that import it, and Go's module graph pruning keeps test-only
// dependencies out of the builds of applications importing projectdata.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/prommetrics"
)

// documentValidator is the validator of the document GET /openapi.json
// serves, made once.
var documentValidator = sync.OnceValues(func() (validator.Validator, error) {
	rec := httptest.NewRecorder()
	httpapi.New(nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	doc, err := libopenapi.NewDocument(rec.Body.Bytes())
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc, config.WithoutSecurityValidation())
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return v, nil
})

// checkExchange fails the test unless the response matches the document
// (status, headers, body of the route and its error codes) and, when the
// server accepted the request, unless the request matches it too: a
// request the server refuses is described by its error answer. The
// router's own answers to paths and methods that are no route
// (route_not_found, method_not_allowed) have no route to match.
func checkExchange(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	if status == http.StatusMethodNotAllowed || bytes.Contains(body, []byte(`"code":"route_not_found"`)) {
		return
	}
	checkMessages(t, req, reqBody, status, body, validate(t, req, reqBody, status, header, body, status < 300))
}

// validate returns what does not match the document in the response, and
// in the request when checkRequest is set.
func validate(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte, checkRequest bool) []*verrors.ValidationError {
	t.Helper()
	v, err := documentValidator()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	clone := func() *http.Request {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		return r
	}
	res := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	_, errs := v.ValidateHttpResponse(clone(), res)
	if checkRequest {
		_, reqErrs := v.ValidateHttpRequest(clone())
		errs = append(errs, reqErrs...)
	}
	return errs
}

func checkMessages(t testing.TB, req *http.Request, reqBody []byte, status int, body []byte, errs []*verrors.ValidationError) {
	t.Helper()
	for _, e := range errs {
		msg := e.Error()
		for _, s := range e.SchemaValidationErrors {
			msg += "; " + s.FieldPath + ": " + s.Reason
		}
		t.Errorf("%s %s → %d does not match openapi.json: %s\n%s", req.Method, req.URL, status, msg, body)
	}
}

// servedDocument is the document GET /openapi.json serves: its operations
// and their parameters.
type servedDocument struct {
	Paths map[string]map[string]struct {
		Parameters []struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
	} `json:"paths"`
}

func serveDocument(t *testing.T) servedDocument {
	t.Helper()
	rec := httptest.NewRecorder()
	httpapi.New(nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	var doc servedDocument
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestEveryRouteIsDocumented walks the served document and the router
// both ways: every route the router registers is an operation of the
// document, with its method, and every operation a route.
func TestEveryRouteIsDocumented(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	h := httpapi.New(a.store, &httpapi.Options{Metrics: prommetrics.New(a.store)})
	registered := slices.Sorted(slices.Values(httpapi.RegisteredRoutes(h)))
	var documented []string
	toRouter := regexp.MustCompile(`\{([a-z_]+)\}`)
	for path, ops := range serveDocument(t).Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+toRouter.ReplaceAllString(path, ":$1"))
		}
	}
	slices.Sort(documented)
	is.Equal(registered, documented) // the router's routes are the document's
}

// TestEveryRouteTakesTheDocumentedQueryParameters walks the served
// document's operations: each takes every query parameter the document
// lists for it (given twice, it is refused as repeated, not as unknown),
// and no other (400 invalid_request naming it), and no query that does not
// parse (400 invalid_request), before it runs: a
// parameter a route ignored would change nothing the client can see, not
// even a write's, whose Idempotency-Key fingerprint leaves the query out.
func TestEveryRouteTakesTheDocumentedQueryParameters(t *testing.T) {
	a := newAPI(t, nil)
	fill := regexp.MustCompile(`\{[a-z_]+\}`)
	for path, ops := range serveDocument(t).Paths {
		if !strings.HasPrefix(path, "/projects/") {
			continue // /healthz, /metrics, /openapi.json: no project, no token
		}
		// Every parameter is checked before the route runs: no table,
		// record or export needs to exist.
		target := strings.Replace(fill.ReplaceAllString(path, "x"), "/projects/x", "/projects/acme", 1)
		for method, op := range ops {
			method = strings.ToUpper(method)
			refused := func(query, want string) {
				t.Helper()
				// A route that took the request would run: a change stream
				// until its context ends.
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				req := httptest.NewRequestWithContext(ctx, method, target+"?"+query, nil)
				req.Header.Set("Authorization", "Bearer "+a.admin)
				rec := httptest.NewRecorder()
				a.h.ServeHTTP(rec, req)
				var env struct {
					Error struct{ Code, Message string }
				}
				json.Unmarshal(rec.Body.Bytes(), &env)
				if rec.Code != 400 || env.Error.Code != "invalid_request" || !strings.Contains(env.Error.Message, want) {
					t.Errorf("%s %s?%s: got %d %.300s, want 400 invalid_request saying %s", method, path, query, rec.Code, rec.Body, want)
				}
				checkExchange(t, req, nil, rec.Code, rec.Header(), rec.Body.Bytes())
			}
			refused("undocumented=1", `unknown query parameter "undocumented"`)
			// Pairs that do not parse, which url.Values drops.
			refused("limit=%zz", "the query string does not parse")
			refused("limit=5;offset=1", "the query string does not parse")
			for _, p := range op.Parameters {
				if p.In == "query" {
					refused(p.Name+"=1&"+p.Name+"=2", `query parameter "`+p.Name+`" is given 2 times`)
				}
			}
		}
	}
}

func TestOpenAPIDocumentIsServedWithoutToken(t *testing.T) {
	is := is.New(t)
	a := newAPI(t, nil)
	res := a.do("GET", "/openapi.json", "", "")
	is.Equal(res.Status, 200)
	v, err := documentValidator()
	is.NoErr(err)
	ok, errs := v.ValidateDocument()
	for _, e := range errs {
		t.Error(e)
	}
	is.True(ok) // a valid OpenAPI 3.1 document
}

// TestGoldenFilesMatchTheDocument checks the checked-in answers themselves.
func TestGoldenFilesMatchTheDocument(t *testing.T) {
	routes := map[string][2]string{
		"create_table":   {"POST", "/projects/acme/table"},
		"insert":         {"POST", "/projects/acme/records/orders"},
		"list_records":   {"GET", "/projects/acme/records/orders"},
		"query":          {"POST", "/projects/acme/query"},
		"create_index":   {"POST", "/projects/acme/indexes/orders"},
		"list_columns":   {"GET", "/projects/acme/column/orders"},
		"create_export":  {"POST", "/projects/acme/exports"},
		"list_tokens":    {"GET", "/projects/acme/auth/tokens"},
		"where_required": {"DELETE", "/projects/acme/records/orders"},
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if len(files) != len(routes) {
		t.Fatalf("%d golden files, %d known routes: name the route of each file here", len(files), len(routes))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		rt, ok := routes[name]
		if !ok {
			t.Fatalf("golden file %s: name its route here", f)
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		status := 200
		if !bytes.Contains(body, []byte(`"ok": true`)) {
			status = 400
		} else if rt[0] == "POST" && name != "query" {
			status = 201
		}
		header := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
		req := httptest.NewRequest(rt[0], rt[1], nil)
		checkMessages(t, req, nil, status, body, validate(t, req, nil, status, header, body, false))
	}
}
