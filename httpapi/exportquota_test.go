package httpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
	"github.com/projectdata/projectdata/prommetrics"
)

// TestExportQuotaOverHTTP: an export past Options.MaxExportBytes is 507
// export_quota_exceeded in the envelope, counted as a budget refusal; it
// is not stored under the request's Idempotency-Key, so the retry runs
// again once room is free.
func TestExportQuotaOverHTTP(t *testing.T) {
	is := is.New(t)
	const csv = "id,name\n1,a\n" // the one export that fits
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC))
	store, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now, MaxExportBytes: int64(len(csv))})
	_, admin, err := store.CreateProject(ctx, "acme", "Acme")
	is.NoErr(err)
	write, err := store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleWrite, Name: "write"})
	is.NoErr(err)
	a := &api{t: t, store: store, admin: admin.Token, write: write.Token, clock: clock, dir: dir}
	a.h = httpapi.New(store, &httpapi.Options{Now: clock.Now, Metrics: prommetrics.New(store)})

	a.must(a.do("POST", "/projects/acme/table", a.admin, `{"table_name":"t","columns":[{"column_name":"name"}]}`), 201, "")
	a.must(a.do("POST", "/projects/acme/records/t", a.write, `[{"name":"a"}]`), 201, "")
	res := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"csv"}`), 201, "")
	first := res.data()["export"].(map[string]any)["id"].(string)

	res = a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"csv"}`, "Idempotency-Key", "again"), 507, "export_quota_exceeded")
	is.True(!res.Env.OK)
	is.Equal(string(res.Env.Data), "null")
	is.True(strings.Contains(res.Env.Error.Message, "hold 12 bytes of the 12 allowed"))
	is.True(strings.Contains(res.Env.Error.Message, "expire"))
	is.Equal(res.Header.Get("Retry-After"), "")
	a.must(a.do("POST", "/projects/acme/exports", a.admin, `{"kind":"project_export"}`), 507, "export_quota_exceeded")

	metrics := a.must(a.do("GET", "/metrics", "", ""), 200, "")
	is.True(strings.Contains(string(metrics.Body), `projectdata_budget_refusals_total{code="export_quota_exceeded"} 2`+"\n"))

	// Room frees (the file removed); the same key runs again and succeeds.
	is.NoErr(os.Remove(filepath.Join(dir, "acme", "exports", first+".csv")))
	res = a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"csv"}`, "Idempotency-Key", "again"), 201, "")
	is.Equal(res.Header.Get("Idempotent-Replayed"), "")
	replay := a.must(a.do("POST", "/projects/acme/exports", a.write, `{"table":"t","format":"csv"}`, "Idempotency-Key", "again"), 201, "")
	is.Equal(replay.Header.Get("Idempotent-Replayed"), "true")
}
