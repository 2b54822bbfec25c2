package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
)

// authRoutes is every project route with the operation it needs and a
// body that the operation accepts.
var authRoutes = []struct {
	method, path string
	op           projectdata.Operation
	body         string
}{
	{"GET", "/projects/acme", projectdata.OpGetProject, ""},
	{"PATCH", "/projects/acme", projectdata.OpRenameProject, `{"project_name":"A"}`},
	{"POST", "/projects/acme/auth/tokens", projectdata.OpCreateToken, `{}`},
	{"GET", "/projects/acme/auth/tokens", projectdata.OpListTokens, ""},
	{"DELETE", "/projects/acme/auth/tokens/999", projectdata.OpRevokeToken, ""},
	{"GET", "/projects/acme/table", projectdata.OpListTables, ""},
	{"POST", "/projects/acme/table", projectdata.OpCreateTable, `{"table_name":"t2"}`},
	{"PATCH", "/projects/acme/table/items", projectdata.OpUpdateTable, `{"display_name":"I"}`},
	{"DELETE", "/projects/acme/table/gone", projectdata.OpDeleteTable, ""},
	{"GET", "/projects/acme/column/items", projectdata.OpListColumns, ""},
	{"GET", "/projects/acme/column/items/name", projectdata.OpGetColumn, ""},
	{"POST", "/projects/acme/column/items", projectdata.OpAddColumn, `{"column_name":"extra"}`},
	{"PATCH", "/projects/acme/column/items/name", projectdata.OpUpdateColumn, `{"is_nullable":true}`},
	{"POST", "/projects/acme/records/items", projectdata.OpInsertRecords, `{"name":"x"}`},
	{"GET", "/projects/acme/records/items", projectdata.OpListRecords, ""},
	{"GET", "/projects/acme/records/items/1", projectdata.OpGetRecord, ""},
	{"DELETE", "/projects/acme/records/items/1", projectdata.OpDeleteRecord, ""},
	{"PATCH", "/projects/acme/records/items/1", projectdata.OpUpdateRecord, `{"qty":2}`},
	{"PATCH", "/projects/acme/records/items", projectdata.OpUpdateRecords, `{"data":{"qty":3},"where":{"name":"x"}}`},
	{"DELETE", "/projects/acme/records/items", projectdata.OpDeleteRecords, `{"where":{"name":"x"}}`},
	{"PATCH", "/projects/acme/records/items", projectdata.OpAllowAll, `{"data":{"qty":3},"allow_all":true}`},
	{"POST", "/projects/acme/query", projectdata.OpQuery, `{"sql":"SELECT 1"}`},
	{"GET", "/projects/acme/indexes/items", projectdata.OpListIndexes, ""},
	{"POST", "/projects/acme/indexes/items", projectdata.OpCreateIndex, `{"columns":["qty"]}`},
	{"DELETE", "/projects/acme/indexes/items/nope", projectdata.OpDropIndex, ""},
	{"GET", "/projects/acme/exports", projectdata.OpListExports, ""},
	{"POST", "/projects/acme/exports", projectdata.OpCreateExport, `{"table":"items","format":"csv"}`},
	{"POST", "/projects/acme/exports", projectdata.OpCreateProjectExport, `{"kind":"project_export"}`},
	{"DELETE", "/projects/acme/exports/not-found", projectdata.OpDeleteNotFoundExports, ""},
	{"GET", "/projects/acme/export/download/exp_nope", projectdata.OpDownloadExport, ""},
	{"GET", "/projects/acme/changes", projectdata.OpListChanges, ""},
}

// dumpProject is every row of every table of the project's database, as
// text: what a refused request must leave as it was.
func dumpProject(t *testing.T, a *api) string {
	t.Helper()
	c, err := sqlite3.Open("file:" + a.dir + "/acme/project.db?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var names []string
	st, _, err := c.Prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for st.Step() {
		names = append(names, st.ColumnText(0))
	}
	st.Close()
	var b strings.Builder
	for _, n := range names {
		st, _, err := c.Prepare(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatal(err)
		}
		for st.Step() {
			fmt.Fprint(&b, n, ":")
			for i := range st.ColumnCount() {
				fmt.Fprintf(&b, " %q", st.ColumnText(i))
			}
			b.WriteByte('\n')
		}
		st.Close()
	}
	return b.String()
}

// TestEveryRouteRefusesBadCredentialsAndChangesNothing sends every route
// with every kind of unusable credential, and with each role: a refusal
// is 401 invalid_token (with the challenge) or 403 permission_denied as
// the role table says, and leaves the database as it was, idempotency
// key and all.
func TestEveryRouteRefusesBadCredentialsAndChangesNothing(t *testing.T) {
	a := newAPI(t, nil)
	itemsTable(t, a.store)
	_, err := a.store.Insert(ctx, "acme", "items", []projectdata.Row{{"name": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := a.store.CreateProject(ctx, "other", "")
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.RevokeToken(ctx, "acme", revoked.TokenID); err != nil {
		t.Fatal(err)
	}
	exp := a.clock.Now().Add(time.Minute)
	expired, err := a.store.CreateToken(ctx, "acme", projectdata.NewToken{Role: projectdata.RoleAdmin, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(time.Minute) // expires exactly now
	for _, tok := range []string{a.admin, a.write, a.read} {
		a.must(a.do("GET", "/projects/acme", tok, ""), 200, "") // last_used_at of this minute
	}

	bad := []struct{ name, authorization string }{
		{"None", ""},
		{"OtherScheme", "Basic " + a.admin},
		{"SchemeAlone", "Bearer"},
		{"EmptyToken", "Bearer "},
		{"PrefixAlone", "Bearer pat_"},
		{"NotBase32", "Bearer pat_!!!!/../.."},
		{"NoPrefix", "Bearer " + strings.TrimPrefix(a.admin, "pat_")},
		{"UpperCased", "Bearer " + strings.ToUpper(a.admin)},
		{"Truncated", "Bearer " + a.admin[:len(a.admin)-1]},
		{"WithSuffix", "Bearer " + a.admin + "x"},
		{"TwoTokens", "Bearer " + a.admin + " " + a.admin},
		{"Huge", "Bearer pat_" + strings.Repeat("a", 64<<10)},
		{"OtherProject", "Bearer " + other.Token},
		{"Revoked", "Bearer " + revoked.Token},
		{"ExpiredExactlyNow", "Bearer " + expired.Token},
	}
	before := dumpProject(t, a)
	for _, r := range authRoutes {
		for _, b := range bad {
			res := a.do(r.method, r.path, "", r.body, "Authorization", b.authorization, "Idempotency-Key", "k-"+b.name)
			if res.Status != 401 || res.code() != "invalid_token" || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %s: %d %q, want 401 invalid_token with the challenge", r.method, r.path, b.name, res.Status, res.code())
			}
			if secret, _ := strings.CutPrefix(b.authorization, "Bearer "); strings.HasPrefix(secret, "pat_") && len(secret) > 8 && strings.Contains(string(res.Body), secret) {
				t.Errorf("%s %s with %s: the answer quotes a token: %s", r.method, r.path, b.name, res.Body)
			}
		}
		for _, role := range []struct {
			role  projectdata.Role
			token string
		}{{projectdata.RoleRead, a.read}, {projectdata.RoleWrite, a.write}} {
			if rank(role.role) >= rank(projectdata.RequiredRole(r.op)) {
				continue
			}
			headers := []string{"Idempotency-Key", "k-" + string(role.role)}
			if r.op == projectdata.OpAllowAll || r.op == projectdata.OpCreateProjectExport {
				// Refused by the operation, after the body: its answer is
				// stored under the key as other refusals of a body are.
				headers = nil
			}
			a.must(a.do(r.method, r.path, role.token, r.body, headers...), 403, "permission_denied")
		}
		if after := dumpProject(t, a); after != before {
			t.Fatalf("%s %s refused, and the database changed:\nbefore:\n%s\nafter:\n%s", r.method, r.path, before, after)
		}
	}
	// The unknown project comes first, whatever the credential.
	for _, r := range authRoutes {
		path := strings.Replace(r.path, "/acme", "/nope", 1)
		for _, b := range bad[:3] {
			a.must(a.do(r.method, path, "", r.body, "Authorization", b.authorization), 404, "project_not_found")
		}
	}
}

func rank(r projectdata.Role) int {
	return map[projectdata.Role]int{projectdata.RoleRead: 1, projectdata.RoleWrite: 2, projectdata.RoleAdmin: 3}[r]
}

// TestTwoAuthorizationHeadersAreNoToken: a request with two Authorization
// headers, even both valid, is 401 invalid_token: a proxy in front that
// checked the other one would have let another caller in.
func TestTwoAuthorizationHeadersAreNoToken(t *testing.T) {
	a := newAPI(t, nil)
	for _, tokens := range [][]string{{a.admin}, {a.admin, a.admin}, {a.read, a.admin}} {
		req := httptest.NewRequest("GET", "/projects/acme", nil)
		for _, tok := range tokens {
			req.Header.Add("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		want := 200
		if len(tokens) > 1 {
			want = 401
		}
		if rec.Code != want || (want == 401 && !strings.Contains(rec.Body.String(), `"code":"invalid_token"`)) {
			t.Errorf("%d Authorization headers: %d %s, want %d", len(tokens), rec.Code, rec.Body, want)
		}
	}
}
