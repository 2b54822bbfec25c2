package httpapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestManyProjects uses many projects round-robin through HTTP with a small
// bound on open projects: no request fails and the bound holds. The long
// version (not -short) is the 2,000-project run with 64 open; it reports
// the process's resident memory.
func TestManyProjects(t *testing.T) {
	projects, maxOpen, rounds := 60, 8, 2
	if !testing.Short() {
		projects, maxOpen, rounds = 2000, 64, 3
	}
	is := is.New(t)
	store, _ := pdtest.Open(t, &projectdata.Options{MaxOpenProjects: maxOpen})
	a := &api{t: t, store: store, h: httpapi.New(store, nil)}
	tokens := make([]string, projects)
	for i := range projects {
		_, tok, err := store.CreateProject(ctx, fmt.Sprintf("p%d", i), "")
		is.NoErr(err)
		tokens[i] = tok.Token
	}
	peak := 0
	for r := range rounds {
		for i := range projects {
			slug := fmt.Sprintf("p%d", i)
			if r == 0 {
				a.must(a.do("POST", "/projects/"+slug+"/table", tokens[i], `{"table_name":"t","columns":[{"column_name":"v"}]}`), 201, "")
			}
			a.must(a.do("POST", "/projects/"+slug+"/query", tokens[i], `{"sql":"SELECT count(*) AS n FROM t"}`), 200, "")
			a.must(a.do("GET", "/projects/"+slug+"/table", tokens[i], ""), 200, "")
			open := store.Stats().OpenProjects
			peak = max(peak, open)
			if open > maxOpen {
				t.Fatalf("%d projects open, bound %d", open, maxOpen)
			}
		}
		runtime.GC()
		t.Logf("round %d: %d projects, peak open %d, RSS %s", r, projects, peak, rss())
	}
}

// rss returns the process's resident set size, as Linux reports it.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func TestSlugTraversalNeverReachesTheFileSystem(t *testing.T) {
	is := is.New(t)
	store, dir := pdtest.Open(t, nil)
	_, tok, err := store.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	a := &api{t: t, store: store, h: httpapi.New(store, nil)}
	for _, path := range []string{
		"/projects/../table",
		"/projects/..%2f..%2fetc/table",
		"/projects/%2e%2e/table",
		"/projects/acme%00/table",
		"/projects/.acme/table",
		"/projects/ACME/table",
		"/projects/a%20b/table",
		"/projects/" + strings.Repeat("a", 300) + "/table",
	} {
		res := a.do("GET", path, tok.Token, "")
		is.True(res.Status == 400 || res.Status == 404) // never served, never 500
		is.True(res.code() == "invalid_project_slug" || res.code() == "route_not_found")
	}
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1)
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), "etc"))
	is.True(os.IsNotExist(err))
}
