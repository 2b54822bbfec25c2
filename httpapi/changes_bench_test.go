package httpapi_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// BenchmarkChangeStreamFanOut serves the change stream of one project to
// 200 SSE clients over loopback while the project takes single-row inserts
// at 1,000 per second (b.N inserts, paced); every client must
// receive every change. It reports the delivery delay (from the insert
// call to a client reading the event: p50, p99, max), the rate reached,
// and the process's RSS (server and clients together) and Go heap with
// the clients connected.
func BenchmarkChangeStreamFanOut(b *testing.B) {
	const clients, rate = 200, 1000
	store, token := pdtest.NewProject(b, nil)
	if _, _, err := store.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "name"}, {Name: "qty", Type: "INTEGER"}}}); err != nil {
		b.Fatal(err)
	}
	from, err := store.LastChangeID(ctx, "acme")
	if err != nil {
		b.Fatal(err)
	}
	srv := streamServer(b, httpapi.New(store, nil))
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: clients}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	// sent[id] is when the insert that made change id was called.
	var sentMu sync.Mutex
	sent := map[int64]time.Time{}
	cctx, stop := context.WithCancel(context.Background())
	defer stop()
	delays := make([][]time.Duration, clients)
	var ready, done sync.WaitGroup
	failed := make(chan error, clients)
	total := 0 // set before the clients may finish: they wait for ready
	start := make(chan struct{})
	for i := range clients {
		ready.Add(1)
		done.Go(func() {
			req, _ := http.NewRequestWithContext(cctx, "GET", srv.URL+"/projects/acme/changes/stream?after="+strconv.FormatInt(from, 10), nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := client.Do(req)
			ready.Done()
			if err != nil {
				failed <- err
				return
			}
			defer res.Body.Close()
			<-start
			r := bufio.NewReaderSize(res.Body, 64<<10)
			got := make([]time.Duration, 0, total)
			next := from + 1
			for len(got) < total {
				line, err := r.ReadSlice('\n')
				if err != nil {
					failed <- err
					return
				}
				idText, ok := strings.CutPrefix(string(line), "id: ")
				if !ok {
					continue
				}
				now := time.Now()
				id, _ := strconv.ParseInt(strings.TrimSpace(idText), 10, 64)
				if id != next {
					failed <- errorString("client got change " + strconv.FormatInt(id, 10) + ", want " + strconv.FormatInt(next, 10))
					return
				}
				next++
				sentMu.Lock()
				at := sent[id]
				sentMu.Unlock()
				got = append(got, max(0, now.Sub(at)))
			}
			delays[i] = got
		})
	}
	ready.Wait()

	rows := []projectdata.Row{{"name": "item", "qty": 1}}
	total = b.N
	close(start)
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		if wait := time.Until(t0.Add(time.Duration(i) * time.Second / rate)); wait > 0 {
			time.Sleep(wait)
		}
		sentMu.Lock()
		sent[from+int64(i)+1] = time.Now() // the change this insert will make
		sentMu.Unlock()
		if _, err := store.Insert(ctx, "acme", "items", rows); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := readRSS()
	done.Wait()
	b.StopTimer()
	select {
	case err := <-failed:
		b.Fatal(err)
	default:
	}
	var all []time.Duration
	for _, d := range delays {
		all = append(all, d...)
	}
	if len(all) != clients*b.N {
		b.Fatalf("%d deliveries, want %d", len(all), clients*b.N)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "inserts/s")
	b.ReportMetric(float64(rss)/(1<<20), "RSS-MB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
}

type errorString string

func (e errorString) Error() string { return string(e) }

// readRSS returns the process's resident set size in bytes (Linux), or 0.
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
