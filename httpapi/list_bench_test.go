package httpapi_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

var listRouteRows = flag.Int("pd.listrows", 1_000_000, "rows of the table of BenchmarkListRouteAtScale")

// BenchmarkListRouteAtScale measures the list route over loopback HTTP on
// a table of 1,000,000 rows (items: name, grp 0..9 with an index, price),
// each workload paired with its reference in alternating slices from 16
// clients (see paired), as x_ref = the workload's rate / the reference's.
// The goals:
//
//   - list20_exact_total vs get_by_id: ≥ 0.5;
//   - page10000_by_cursor vs first_page, by key and by grp: ≥ 1/1.5;
//   - filtered_list (where grp = 3) vs filtered_query (the same SELECT
//     through POST /query): ≥ 0.5.
//
// page10000_by_offset vs page10000_by_cursor shows what an offset costs at
// that depth. The table is built once, with -count 1:
//
//	go test ./httpapi -run '^$' -bench ListRouteAtScale -benchtime 2000x
func BenchmarkListRouteAtScale(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a table of 1,000,000 rows")
	}
	n := *listRouteRows
	store, dir := pdtest.Open(b, nil)
	_, tok, err := store.CreateProject(ctx, "acme", "")
	if err != nil {
		b.Fatal(err)
	}
	_, _, err = store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "grp", Type: "INTEGER"}, {Name: "price", Type: "REAL"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.CreateIndex(ctx, "acme", "items", projectdata.IndexRequest{Columns: []string{"grp"}}); err != nil {
		b.Fatal(err)
	}
	rawFill(b, filepath.Join(dir, "acme", "project.db"), n)

	srv := httptest.NewServer(httpapi.New(store, nil))
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	e := &loadEnv{token: tok.Token, client: &http.Client{Transport: tr}}
	records := srv.URL + "/projects/acme/records/items"
	get := func(query string) func(int64) error {
		return func(int64) error { return e.send("GET", records+"?"+query, nil, 200) }
	}
	// deep is the offset of page 10,001 of 20 rows.
	deep := min(199_980, n-40)
	deepCursor := func(order string) string {
		res, err := e.client.Do(authorized(b, e.token, records+"?count=none&limit=20&order="+order+"&offset="+strconv.Itoa(deep-20)))
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		var env struct {
			Data struct {
				NextCursor string `json:"next_cursor"`
			} `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil || env.Data.NextCursor == "" {
			b.Fatal(err, res.StatusCode)
		}
		return url.QueryEscape(env.Data.NextCursor)
	}
	pair := func(name string, work, ref func(int64) error) {
		b.Run(name, func(b *testing.B) {
			w, r := paired(b, loadClients, work, ref)
			b.ReportMetric(w.rate, "req/s")
			b.ReportMetric(r.rate, "ref_req/s")
			b.ReportMetric(w.rate/r.rate, "x_ref")
		})
	}

	getByID := func(i int64) error {
		return e.send("GET", records+"/"+strconv.FormatInt(i*7919%int64(n)+1, 10), nil, 200)
	}
	pair("list20_exact_total_vs_get_by_id", get("limit=20"), getByID)
	pair("page10000_by_cursor_vs_first_page", get("limit=20&count=none&after="+deepCursor("")), get("limit=20&count=none"))
	pair("page10000_by_grp_cursor_vs_first_page_by_grp", get("limit=20&count=none&order=grp&after="+deepCursor("grp")), get("limit=20&count=none&order=grp"))
	pair("page10000_by_offset_vs_page10000_by_cursor", get("limit=20&count=none&offset="+strconv.Itoa(deep)), get("limit=20&count=none&after="+deepCursor("")))
	where := url.QueryEscape(`{"grp":3}`)
	query := []byte(`{"sql":"SELECT id, name, grp, price FROM items WHERE grp = ? ORDER BY id LIMIT 20","params":[3]}`)
	pair("filtered_list_vs_filtered_query", get("limit=20&count=none&where="+where), func(int64) error {
		return e.send("POST", srv.URL+"/projects/acme/query", query, 200)
	})
	pair("filtered_list_exact_total_vs_filtered_list", get("limit=20&where="+where), get("limit=20&count=none&where="+where))
}

// rawFill inserts n rows into items with the raw driver in one
// transaction, and sets the table's kept count as the Store would have.
func rawFill(b *testing.B, path string, n int) {
	b.Helper()
	db, err := sqlite3.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(`PRAGMA busy_timeout=5000; BEGIN IMMEDIATE`); err != nil {
		b.Fatal(err)
	}
	st, _, err := db.Prepare(`INSERT INTO items (name, grp, price) VALUES (?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range n {
		st.BindText(1, fmt.Sprintf("item-%d", i))
		st.BindInt64(2, int64(i%10))
		st.BindFloat(3, float64(i)+0.25)
		if err := st.Exec(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Exec(`UPDATE _pd_row_counts SET row_count = (SELECT count(*) FROM items); UPDATE _pd_row_counts_as_of SET change_id = (SELECT coalesce(max(last_id), 0) FROM _pd_changes); COMMIT`); err != nil {
		b.Fatal(err)
	}
}

// authorized is a GET of url with the bearer token.
func authorized(b *testing.B, token, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}
