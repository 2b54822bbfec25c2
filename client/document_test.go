package client_test

// The requests the client sends are checked against the server's OpenAPI
// document with pb33f/libopenapi-validator, as httpapi's tests check the
// server's answers.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// statusWriter keeps the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestClientRequestsMatchTheDocument runs the scenarios and more calls
// through the Client, checking each request the server took (a 2xx
// answer) against GET /openapi.json: the client sends what the document
// describes.
func TestClientRequestsMatchTheDocument(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.New(nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	doc, err := libopenapi.NewDocument(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithoutSecurityValidation())
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	var mu sync.Mutex
	var mismatches []string
	_, remote, _ := pair(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			check := r.Clone(r.Context())
			check.Body = io.NopCloser(bytes.NewReader(body))
			r.Body = io.NopCloser(bytes.NewReader(body))
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			h.ServeHTTP(sw, r)
			if sw.status >= 300 {
				return // a refusal describes the request itself
			}
			if ok, errs := v.ValidateHttpRequest(check); !ok {
				mu.Lock()
				defer mu.Unlock()
				for _, e := range errs {
					msg := r.Method + " " + r.URL.String() + " " + string(body) + ": " + e.Error()
					for _, s := range e.SchemaValidationErrors {
						msg += "; " + s.FieldPath + ": " + s.Reason
					}
					mismatches = append(mismatches, msg)
				}
			}
		})
	})
	for _, sc := range scenarios {
		sc.run(remote)
	}
	c := remote.(clientAPI)
	_, _ = c.CreateToken(ctx, "acme", pd.NewToken{})
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	_, _ = c.CreateToken(ctx, "acme", pd.NewToken{Name: "n", Role: pd.RoleRead, Type: pd.TokenType, ExpiresAt: &exp})
	_, _, _ = c.CreateTable(ctx, "acme", pd.TableDef{Name: "d", Columns: []pd.ColumnDef{{Name: "v", Type: pd.TypeInteger}}})
	_, _ = c.Insert(ctx, "acme", "d", []pd.Row{{"v": 1}, {"v": 2}})
	_, _ = c.ListRecords(ctx, "acme", "d", pd.ListOptions{Where: pd.Where{{Column: "v", Op: pd.WhereIn, Value: []int{1, 2}}}, Order: "-v", Columns: []string{"v"}, Limit: 1, Count: pd.CountNone})
	_, _ = c.Query(ctx, "acme", pd.QueryRequest{SQL: "SELECT :a AS a", Named: map[string]any{"a": 1}, Limit: 5})
	_, _ = c.CreateExport(ctx, "acme", "d", "csv")
	_, _ = c.CreateProjectExport(ctx, "acme")
	_, _ = c.ListExports(ctx, "acme", pd.ExportQuery{Status: "ready", Limit: 5, Offset: 1})
	_, _ = c.ListChanges(ctx, "acme", pd.ChangeQuery{Tables: []string{"d"}, Limit: 5})
	for _, m := range mismatches {
		t.Error(m)
	}
}
