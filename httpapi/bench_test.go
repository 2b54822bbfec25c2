package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// benchServer is the API on a loopback listener with a table items (id,
// name, qty, price, note) of n rows, and a keep-alive client.
type benchServer struct {
	url    string
	token  string
	client *http.Client
}

func newBenchServer(b *testing.B, n int) benchServer {
	b.Helper()
	store, admin := pdtest.NewProject(b, nil)
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"}, {Name: "note"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 1000 {
		rows := make([]projectdata.Row, min(1000, n-i))
		for j := range rows {
			rows[j] = projectdata.Row{"name": fmt.Sprintf("item %d", i+j), "qty": i + j, "price": 1.5, "note": "seed"}
		}
		if _, err := store.Insert(ctx, "acme", "items", rows); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.New(store, nil))
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return benchServer{url: srv.URL, token: admin, client: &http.Client{Transport: tr}}
}

// do sends one request and fails unless the status is want.
func (s benchServer) do(b *testing.B, method, path string, body []byte, want int) {
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		b.Fatalf("%s %s: %d", method, path, res.StatusCode)
	}
}

// BenchmarkHTTPGetRecord: GET one record with a valid token, 8 clients.
func BenchmarkHTTPGetRecord(b *testing.B) {
	s := newBenchServer(b, 10000)
	var i atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.do(b, "GET", fmt.Sprintf("/projects/acme/records/items/%d", i.Add(1)%10000+1), nil, 200)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkHTTPInsert1000: POST of 1,000 rows per request, 4 clients.
func BenchmarkHTTPInsert1000(b *testing.B) {
	s := newBenchServer(b, 0)
	var body strings.Builder
	body.WriteString("[")
	for j := range 1000 {
		if j > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"name":"item %d","qty":%d,"price":%d.25,"note":"bench"}`, j, j, j)
	}
	body.WriteString("]")
	payload := []byte(body.String())
	b.SetParallelism(2)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.do(b, "POST", "/projects/acme/records/items", payload, 201)
		}
	})
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkHTTPQueryPrimaryKey: POST /query with a primary-key lookup, 8
// clients.
func BenchmarkHTTPQueryPrimaryKey(b *testing.B) {
	s := newBenchServer(b, 10000)
	var i atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Appendf(nil, `{"sql":"SELECT * FROM items WHERE id = ?","params":[%d]}`, i.Add(1)%10000+1)
			s.do(b, "POST", "/projects/acme/query", body, 200)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
