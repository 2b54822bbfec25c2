package httpapi_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/bare"
	"github.com/projectdata/projectdata/internal/cputime"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// The load benchmark measures the API over loopback HTTP with keep-alive
// clients against a bare net/http handler that writes a fixed JSON
// envelope, in the same run, and reports each workload as a ratio to it:
//
//	go test ./httpapi -run '^$' -bench Load -benchtime 2s -load.rounds 3
//
// The machine may be shared, so each workload is measured in turns with
// its reference over the same stretch of time (ten alternating slices):
// x_bare is the ratio to the bare handler measured in those turns, x_raw
// the batch rate as a ratio to the raw driver's in-process insert of the
// same rows (one transaction, one prepared statement). p99_ms is the 99th
// percentile latency of single-row creates with 16 clients (create_one;
// create_one_cN and batch1000_cN run with N clients instead), and
// bare_p99_ms the bare handler's in the same turns: the scheduling of
// that many clients on the machine's cores alone.
// create_one_keyed pairs creates that carry a fresh Idempotency-Key with
// the same creates without one instead of the bare handler: x_nokey is
// the ratio of the rates, cpu_x_nokey of the process's CPU time per
// request (server and clients; steadier on a shared machine). cpu_us and
// bare_cpu_us are that CPU time per request of each side of a pair with the
// bare handler. ns/op counts both sides of a pair. The last sub-benchmark
// reports the process's resident memory after the run: MB_rss_refs with
// the references still open (the bare handler, the API without group
// commit, the raw driver's connection), MB_rss once they are closed (the
// server under test and the Go clients, as near as one process gets to
// the server process), how much of it is Go's, and how much is
// pages of files (the test binary's code and data, SQLite's among them).

var loadRounds = flag.Int("load.rounds", 1, "rounds of the load benchmark's workloads")

// loadClients is how many clients send requests at once, unless a
// workload says otherwise (creates and batches run at several levels).
const loadClients = 16

// maxLoadClients is the most clients of any workload.
const maxLoadClients = 64

// loadKeys numbers the idempotency keys of create_one_keyed: every key
// is new, across rounds and the benchmark's repeated runs, and they grow
// in the order they are made, as time-ordered keys do (random keys cost
// more: see examples/wrk and BenchmarkInsertIdempotencyKey).
var loadKeys atomic.Int64

// loadName names a workload of a round run by c clients: the workload's
// name alone at loadClients (the figures), else with _cN.
func loadName(round int, workload string, c int) string {
	if c == loadClients {
		return fmt.Sprintf("round%d/%s", round, workload)
	}
	return fmt.Sprintf("round%d/%s_c%d", round, workload, c)
}

// loadRows is the rows of the table the reads use.
const loadRows = 10000

// loadBatch is the rows of one batch insert.
const loadBatch = 1000

// loadEnv is the API with a seeded table, a bare handler, the raw
// driver's connection for the batch twin, and one keep-alive client.
type loadEnv struct {
	api, bare string
	apiSolo   string // the API with MaxWriteGroup 1
	token     string
	soloToken string
	client    *http.Client
	raw       *sqlite3.Conn
	rawInsert *sqlite3.Stmt
	batch     []byte // a batch insert body
	batchRows [][]any
	// closeRefs closes what the server process does not hold: the
	// bare handler, the API without group commit and the raw driver's
	// connection (the Go client stays).
	closeRefs func()
}

func newLoadEnv(b *testing.B) *loadEnv {
	b.Helper()
	store, admin := pdtest.NewProject(b, nil)
	_, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"}, {Name: "note"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < loadRows; i += 1000 {
		rows := make([]projectdata.Row, 1000)
		for j := range rows {
			rows[j] = projectdata.Row{"name": fmt.Sprintf("item %d", i+j), "qty": i + j, "price": 1.5, "note": "seed"}
		}
		if _, err := store.Insert(ctx, "acme", "items", rows); err != nil {
			b.Fatal(err)
		}
	}
	api := httptest.NewServer(httpapi.New(store, nil))
	b.Cleanup(api.Close)
	// The same API without group commit: every write its own transaction.
	solo, soloAdmin := pdtest.NewProject(b, &projectdata.Options{MaxWriteGroup: 1})
	if _, _, err := solo.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
		{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"}, {Name: "note"},
	}}); err != nil {
		b.Fatal(err)
	}
	apiSolo := httptest.NewServer(httpapi.New(solo, nil))
	b.Cleanup(apiSolo.Close)
	baseline := httptest.NewServer(bare.Handler())
	b.Cleanup(baseline.Close)
	tr := &http.Transport{MaxIdleConns: 2 * maxLoadClients, MaxIdleConnsPerHost: 2 * maxLoadClients}
	b.Cleanup(tr.CloseIdleConnections)

	env := &loadEnv{api: api.URL, apiSolo: apiSolo.URL, bare: baseline.URL, token: admin, soloToken: soloAdmin, client: &http.Client{Transport: tr}}
	var body strings.Builder
	body.WriteString("[")
	for j := range loadBatch {
		if j > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"name":"item %d","qty":%d,"price":%d.25,"note":"bench"}`, j, j, j)
		env.batchRows = append(env.batchRows, []any{fmt.Sprintf("item %d", j), int64(j), float64(j) + 0.25, "bench"})
	}
	body.WriteString("]")
	env.batch = []byte(body.String())

	env.raw, err = sqlite3.Open(filepath.Join(b.TempDir(), "raw.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.raw.Close() })
	if err := env.raw.Exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
		CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price REAL, note TEXT)`); err != nil {
		b.Fatal(err)
	}
	env.rawInsert, _, err = env.raw.Prepare(`INSERT INTO items (name, qty, price, note) VALUES (?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.rawInsert.Close() })
	env.closeRefs = func() {
		baseline.Close()
		apiSolo.Close()
		solo.Close()
		env.rawInsert.Close()
		env.raw.Close()
	}
	return env
}

// send sends one request and returns an error unless the status is want.
func (e *loadEnv) send(method, url string, body []byte, want int) error {
	return e.sendAs(e.token, method, url, body, want)
}

// sendAs is send with another token.
func (e *loadEnv) sendAs(token, method, url string, body []byte, want int) error {
	return e.sendKeyed(token, "", method, url, body, want)
}

// sendKeyed is sendAs with an Idempotency-Key header, unless key is "".
func (e *loadEnv) sendKeyed(token, key, method, url string, body []byte, want int) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d", method, url, res.StatusCode, want)
	}
	return nil
}

// loadResult is what one workload measured.
type loadResult struct {
	rate float64 // requests per second
	p99  time.Duration
	cpu  time.Duration // the process's CPU time (user and system) meanwhile
}

// loadSlices is how many alternating slices a paired measurement takes of
// each side: the machine is shared, so the workload and the bare handler
// are measured in turns over the same stretch of time.
const loadSlices = 10

// paired sends b.N requests of work and b.N of bare, in alternating slices,
// each from c clients at once, and returns the rates and the 99th
// percentile latencies of both.
func paired(b *testing.B, c int, work, bare func(i int64) error) (w, base loadResult) {
	b.ReportAllocs()
	var wt, bt, wcpu, bcpu time.Duration
	var wl, bl []time.Duration
	var next atomic.Int64
	for s := range loadSlices {
		n := b.N/loadSlices + boolInt(s < b.N%loadSlices)
		cpu := cputime.Process()
		d, lat := clients(b, c, n, bare, &next)
		bt, bl, bcpu = bt+d, append(bl, lat...), bcpu+cputime.Process()-cpu
		cpu = cputime.Process()
		d, lat = clients(b, c, n, work, &next)
		wt, wl, wcpu = wt+d, append(wl, lat...), wcpu+cputime.Process()-cpu
	}
	return loadResult{float64(b.N) / wt.Seconds(), p99(wl), wcpu}, loadResult{float64(b.N) / bt.Seconds(), p99(bl), bcpu}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100]
}

// clients sends n requests from c goroutines and returns the time they
// took and each request's latency.
func clients(b *testing.B, c, n int, request func(i int64) error, next *atomic.Int64) (time.Duration, []time.Duration) {
	var (
		left  atomic.Int64
		mu    sync.Mutex
		lat   = make([]time.Duration, 0, n)
		first error
		wg    sync.WaitGroup
	)
	left.Store(int64(n))
	start := time.Now()
	for range c {
		wg.Go(func() {
			var mine []time.Duration
			for left.Add(-1) >= 0 {
				t := time.Now()
				if err := request(next.Add(1)); err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	d := time.Since(start)
	if first != nil {
		b.Fatal(first)
	}
	return d, lat
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// BenchmarkLoad runs the workloads of issue 18, each paired with the bare
// handler; see the comment at the top of this file.
func BenchmarkLoad(b *testing.B) {
	e := newLoadEnv(b)
	bare := func(int64) error { return e.send("GET", e.bare+"/projects/acme/records/items/42", nil, 200) }
	report := func(b *testing.B, w, base loadResult) {
		b.ReportMetric(w.rate, "req/s")
		b.ReportMetric(base.rate, "bare_req/s")
		b.ReportMetric(w.rate/base.rate, "x_bare")
		b.ReportMetric(w.cpu.Seconds()*1e6/float64(b.N), "cpu_us")
		b.ReportMetric(base.cpu.Seconds()*1e6/float64(b.N), "bare_cpu_us")
	}
	for round := range *loadRounds {
		b.Run(fmt.Sprintf("round%d/get_by_id", round), func(b *testing.B) {
			w, base := paired(b, loadClients, func(i int64) error {
				return e.send("GET", e.api+"/projects/acme/records/items/"+strconv.FormatInt(i%loadRows+1, 10), nil, 200)
			}, bare)
			report(b, w, base)
		})
		b.Run(fmt.Sprintf("round%d/query_by_pk", round), func(b *testing.B) {
			w, base := paired(b, loadClients, func(i int64) error {
				body := fmt.Appendf(nil, `{"sql":"SELECT * FROM items WHERE id = ?","params":[%d]}`, i%loadRows+1)
				return e.send("POST", e.api+"/projects/acme/query", body, 200)
			}, bare)
			report(b, w, base)
		})
		b.Run(fmt.Sprintf("round%d/list_50", round), func(b *testing.B) {
			w, base := paired(b, loadClients, func(i int64) error {
				return e.send("GET", e.api+"/projects/acme/records/items?limit=50&offset="+strconv.FormatInt(i%100*50, 10), nil, 200)
			}, bare)
			report(b, w, base)
		})
		for _, c := range []int{1, 4, loadClients, maxLoadClients} {
			name := loadName(round, "create_one", c)
			b.Run(name, func(b *testing.B) {
				w, base := paired(b, c, func(i int64) error {
					body := fmt.Appendf(nil, `{"name":"new %d","qty":%d,"price":2.5,"note":"load"}`, i, i)
					return e.send("POST", e.api+"/projects/acme/records/items", body, 201)
				}, bare)
				report(b, w, base)
				b.ReportMetric(float64(w.p99.Microseconds())/1000, "p99_ms")
				b.ReportMetric(float64(base.p99.Microseconds())/1000, "bare_p99_ms")
			})
		}
		b.Run(fmt.Sprintf("round%d/create_one_without_group_commit", round), func(b *testing.B) {
			w, base := paired(b, loadClients, func(i int64) error {
				body := fmt.Appendf(nil, `{"name":"new %d","qty":%d,"price":2.5,"note":"load"}`, i, i)
				return e.sendAs(e.soloToken, "POST", e.apiSolo+"/projects/acme/records/items", body, 201)
			}, bare)
			report(b, w, base)
			b.ReportMetric(float64(w.p99.Microseconds())/1000, "p99_ms")
		})
		for _, c := range []int{1, loadClients, maxLoadClients} {
			name := loadName(round, "create_one_keyed", c)
			b.Run(name, func(b *testing.B) {
				// Single-row creates with a fresh Idempotency-Key each, in
				// turns with the same creates without one: x_nokey is the
				// keyed rate as a ratio to the unkeyed (issue 16's figure).
				create := func(key string, i int64) error {
					body := fmt.Appendf(nil, `{"name":"new %d","qty":%d,"price":2.5,"note":"load"}`, i, i)
					return e.sendKeyed(e.token, key, "POST", e.api+"/projects/acme/records/items", body, 201)
				}
				w, base := paired(b, c, func(i int64) error {
					return create(fmt.Sprintf("load-%012d", loadKeys.Add(1)), i)
				}, func(i int64) error { return create("", i) })
				b.ReportMetric(w.rate, "req/s")
				b.ReportMetric(base.rate, "nokey_req/s")
				b.ReportMetric(w.rate/base.rate, "x_nokey")
				b.ReportMetric(base.cpu.Seconds()/w.cpu.Seconds(), "cpu_x_nokey")
				b.ReportMetric(float64(w.p99.Microseconds())/1000, "p99_ms")
				b.ReportMetric(float64(base.p99.Microseconds())/1000, "nokey_p99_ms")
			})
		}
		for _, c := range []int{1, 4, loadClients} {
			name := loadName(round, "batch1000", c)
			e.batchRound(b, name, c)
		}
	}
	b.Run("rss", func(b *testing.B) {
		for b.Loop() {
		}
		// The process holds more than the server under test: the
		// references each workload is measured against, and the Go
		// client. MB_rss_refs is the RSS with the references, MB_rss
		// without them (closed as the run ends; the client stays).
		withRefs, _, _ := memoryStatus()
		e.closeRefs()
		rss, hwm, file := memoryStatus()
		b.ReportMetric(withRefs, "MB_rss_refs")
		b.ReportMetric(rss, "MB_rss")
		b.ReportMetric(hwm, "MB_peak")
		// Of it, pages of files: the binary's code and data.
		b.ReportMetric(file, "MB_rss_file")
		// What of it is Go's: the heap in use, the heap free but not
		// yet given back to the system, and goroutine stacks.
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB_go_heap")
		b.ReportMetric(float64(ms.HeapIdle-ms.HeapReleased)/(1<<20), "MB_go_idle")
		b.ReportMetric(float64(ms.StackInuse)/(1<<20), "MB_go_stacks")
	})
}

// batchRound measures batches of loadBatch rows from c clients, in turns
// with the raw driver's in-process insert of the same rows.
func (e *loadEnv) batchRound(b *testing.B, name string, c int) {
	b.Run(name, func(b *testing.B) {
		// The raw driver's in-process insert of the same rows, in
		// turns with the HTTP batches.
		var wt, rt time.Duration
		var next atomic.Int64
		for s := range loadSlices {
			n := b.N/loadSlices + boolInt(s < b.N%loadSlices)
			start := time.Now()
			for range n {
				if err := e.rawBatch(); err != nil {
					b.Fatal(err)
				}
			}
			rt += time.Since(start)
			d, _ := clients(b, c, n, func(int64) error { return e.send("POST", e.api+"/projects/acme/records/items", e.batch, 201) }, &next)
			wt += d
		}
		raw := float64(b.N*loadBatch) / rt.Seconds()
		rate := float64(b.N*loadBatch) / wt.Seconds()
		b.ReportMetric(rate, "rows/s")
		b.ReportMetric(raw, "raw_rows/s")
		b.ReportMetric(rate/raw, "x_raw")
	})
}

// rawBatch inserts the batch's rows with the raw driver: one transaction,
// one prepared statement.
func (e *loadEnv) rawBatch() (err error) {
	tx, err := e.raw.BeginImmediate()
	if err != nil {
		return err
	}
	defer tx.End(&err)
	st := e.rawInsert
	for _, row := range e.batchRows {
		st.BindText(1, row[0].(string))
		st.BindInt64(2, row[1].(int64))
		st.BindFloat(3, row[2].(float64))
		st.BindText(4, row[3].(string))
		if err := st.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// memoryStatus returns the process's resident memory now and at its peak,
// and the part of it now that is pages of files, in MB, from /proc (zero
// where there is none).
func memoryStatus() (rss, peak, file float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if errors.Is(err, strconv.ErrSyntax) {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		case "RssFile":
			file = kb / 1024
		}
	}
	return rss, peak, file
}
