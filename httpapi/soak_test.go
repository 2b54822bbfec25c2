package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// soakStats collects the outcome of one kind of client.
type soakStats struct {
	mu        sync.Mutex
	latencies []time.Duration
	requests  int
	failures  []string // 5xx, locked databases, transport errors, bad bodies
}

func (s *soakStats) add(d time.Duration, failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.latencies = append(s.latencies, d)
	if failure != "" && len(s.failures) < 10 {
		s.failures = append(s.failures, failure)
	}
}

func (s *soakStats) percentile(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	slices.Sort(s.latencies)
	return s.latencies[int(p*float64(len(s.latencies)-1))]
}

// TestSoak runs concurrent writers, readers and query clients over a real
// loopback listener with keep-alive: no 5xx, no "database is locked", and
// the final row count equals the acknowledged inserts. 2 s always; 30 s
// without -short. Latency percentiles are logged.
func TestSoak(t *testing.T) {
	duration := 2 * time.Second
	if !testing.Short() {
		duration = 30 * time.Second
	}
	const writers, readers, queriers, batch = 8, 8, 4, 20
	store, admin := pdtest.NewProject(t, nil)
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "events", Columns: []projectdata.ColumnDef{
		{Name: "writer", Type: "INTEGER"}, {Name: "n", Type: "INTEGER"}, {Name: "note"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(store, nil))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	send := func(method, path string, body []byte) (int, []byte, error) {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, b, err
	}
	check := func(status int, body []byte, err error, want int) string {
		switch {
		case err != nil:
			return err.Error()
		case status >= 500:
			return fmt.Sprintf("status %d: %s", status, body)
		case bytes.Contains(body, []byte("locked")) || bytes.Contains(body, []byte("busy")):
			return "locked: " + string(body)
		case status != want:
			return fmt.Sprintf("status %d, want %d: %s", status, want, body)
		}
		return ""
	}

	var (
		acked              atomic.Int64
		maxID              atomic.Int64
		write, read, query soakStats
		wg                 sync.WaitGroup
		stop               = time.Now().Add(duration)
	)
	for w := range writers {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				var b strings.Builder
				b.WriteString("[")
				for j := range batch {
					if j > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(&b, `{"writer":%d,"n":%d,"note":"soak"}`, w, n*batch+j)
				}
				b.WriteString("]")
				start := time.Now()
				status, body, err := send("POST", "/projects/acme/records/events", []byte(b.String()))
				failure := check(status, body, err, 201)
				write.add(time.Since(start), failure)
				if failure != "" {
					continue
				}
				var env struct {
					Data projectdata.InsertResult `json:"data"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.Data.InsertedCount != batch {
					write.add(0, "bad insert answer: "+string(body))
					continue
				}
				acked.Add(batch)
				last, _ := env.Data.InsertedIDs[batch-1].(float64)
				for cur := maxID.Load(); int64(last) > cur && !maxID.CompareAndSwap(cur, int64(last)); cur = maxID.Load() {
				}
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				m := maxID.Load() // one snapshot decides both the id and the answer
				id := int64(1)
				if m > 0 {
					id = (int64(n*readers+r) % m) + 1
				}
				start := time.Now()
				status, body, err := send("GET", fmt.Sprintf("/projects/acme/records/events/%d", id), nil)
				want := 200
				if m == 0 {
					want = status // before the first acknowledged insert, 404 is right too
				}
				read.add(time.Since(start), check(status, body, err, want))
			}
		})
	}
	for range queriers {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				sql := `SELECT max(id) AS m FROM events` // one aggregate: SQLite reads one index entry
				if n%2 == 1 {
					sql = fmt.Sprintf(`SELECT * FROM events WHERE id = %d`, n)
				}
				body, _ := json.Marshal(map[string]string{"sql": sql})
				start := time.Now()
				status, resp, err := send("POST", "/projects/acme/query", body)
				query.add(time.Since(start), check(status, resp, err, 200))
			}
		})
	}
	wg.Wait()

	for name, s := range map[string]*soakStats{"write": &write, "read": &read, "query": &query} {
		t.Logf("%-5s %6d requests, p50 %v, p99 %v", name, s.requests, s.percentile(0.50), s.percentile(0.99))
		if len(s.failures) > 0 {
			t.Errorf("%s failures: %q", name, s.failures)
		}
	}
	res, err := store.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT count(*) AS n FROM events`})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows[0]["n"].(int64); got != acked.Load() {
		t.Fatalf("%d rows, %d acknowledged", got, acked.Load())
	}
	t.Logf("%d rows inserted and acknowledged in %v", acked.Load(), duration)
}
