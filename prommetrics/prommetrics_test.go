package prommetrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
	"github.com/projectdata/projectdata/prommetrics"
)

func TestMetricsOverRealRequests(t *testing.T) {
	is := is.New(t)
	store, admin := pdtest.NewProject(t, &projectdata.Options{QueryTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(httpapi.New(store, &httpapi.Options{Metrics: prommetrics.New(store)}))
	defer srv.Close()

	call := func(method, path, body, token string) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		is.NoErr(err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := srv.Client().Do(req)
		is.NoErr(err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	is.Equal(call("POST", "/projects/acme/table", `{"table_name":"secret_orders"}`, admin), 201)
	is.Equal(call("GET", "/projects/acme/records/secret_orders", "", admin), 200)
	is.Equal(call("GET", "/projects/acme/records/secret_orders", "", admin), 200)
	is.Equal(call("GET", "/projects/acme/records/secret_orders", "", "pat_nope"), 401)
	is.Equal(call("GET", "/projects/acme/no/such/route", "", admin), 404)
	is.Equal(call("BREW", "/projects/acme", "", admin), 405)
	runaway := `{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}`
	is.Equal(call("POST", "/projects/acme/query", runaway, admin), 422)

	res, err := http.Get(srv.URL + "/metrics") // no token
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.StatusCode, 200)
	is.True(strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"))
	b, err := io.ReadAll(res.Body)
	is.NoErr(err)
	page := string(b)

	for _, want := range []string{
		`projectdata_http_requests_total{method="GET",route="/projects/:project/records/:table",status="200"} 2`,
		`projectdata_http_requests_total{method="GET",route="/projects/:project/records/:table",status="401"} 1`,
		`projectdata_http_requests_total{method="POST",route="/projects/:project/table",status="201"} 1`,
		`projectdata_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`projectdata_http_requests_total{method="other",route="unmatched",status="405"} 1`,
		`projectdata_http_request_duration_seconds_count{method="GET",route="/projects/:project/records/:table"} 3`,
		`projectdata_budget_refusals_total{code="query_budget_exceeded"} 1`,
		`projectdata_budget_refusals_total{code="query_result_too_large"} 0`,
		`projectdata_budget_refusals_total{code="server_busy"} 0`,
		`projectdata_budget_refusals_total{code="export_quota_exceeded"} 0`,
		`projectdata_open_projects 1`,
		`projectdata_operations_in_flight 0`,
		`projectdata_change_followers 0`,
	} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("no line %s", want)
		}
	}
	// Background writes (a token's last use) may make a request wait for
	// the writer's slot: the count is not the test's to fix.
	for _, name := range []string{"projectdata_queue_waits_total", "projectdata_queue_wait_seconds_total"} {
		if !strings.Contains(page, "\n"+name+" ") {
			t.Errorf("no line %s", name)
		}
	}
	// No label carries a slug, a table name or a token.
	for _, line := range strings.Split(page, "\n") {
		for _, leak := range []string{"acme", "secret_orders", "pat_", "BREW"} {
			if strings.Contains(line, leak) {
				t.Errorf("%q leaks into %s", leak, line)
			}
		}
	}
}

func TestMetricsCountBudgetRefusalsByCode(t *testing.T) {
	is := is.New(t)
	store, _ := pdtest.Open(t, nil)
	m := prommetrics.New(store)
	for _, code := range []projectdata.Code{projectdata.ErrServerBusy, projectdata.ErrServerBusy, projectdata.ErrQueryResultTooLarge, projectdata.ErrTableNotFound} {
		m.ObserveRequest(httpapi.RequestObservation{Method: "GET", Route: "/projects/:project", Status: 500, Code: code})
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	page := rec.Body.String()
	is.True(strings.Contains(page, `projectdata_budget_refusals_total{code="server_busy"} 2`+"\n"))
	is.True(strings.Contains(page, `projectdata_budget_refusals_total{code="query_result_too_large"} 1`+"\n"))
	is.True(!strings.Contains(page, `code="table_not_found"`))
}

// TestLibraryDoesNotImportPrometheus keeps Prometheus out of what an
// application importing projectdata or httpapi builds.
func TestLibraryDoesNotImportPrometheus(t *testing.T) {
	if !hasGo() {
		t.Skip("no go command")
	}
	is := is.New(t)
	out, err := exec.CommandContext(context.Background(), "go", "list", "-deps",
		"github.com/projectdata/projectdata", "github.com/projectdata/projectdata/httpapi").Output()
	is.NoErr(err)
	is.True(strings.Contains(string(out), "github.com/projectdata/projectdata/httpapi\n"))
	if m := regexp.MustCompile(`(?m)^.*prometheus.*$`).FindString(string(out)); m != "" {
		t.Fatalf("projectdata or httpapi imports %s", m)
	}
}

func hasGo() bool {
	_, err := exec.LookPath("go")
	return err == nil
}
