package projectdata_test

import (
	"bytes"
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

// BenchmarkCreateChangeLogHTTP measures creates over loopback HTTP with the
// change log on against the same creates with it off, in alternating
// slices of one run: one row per request and 1,000 rows per request, from
// 1 client and from 16 (whose writes share transactions: group commit).
// on/off is the request rate with the log as a fraction of without;
// on/off-median the median of the slices' ratios, steadier on a shared
// machine.
func BenchmarkCreateChangeLogHTTP(b *testing.B) {
	defer projectdata.VerifyChangeLogOff()()
	type server struct{ url, token string }
	newServer := func(opts *projectdata.Options) server {
		s, token := pdtest.NewProject(b, opts)
		_, _, err := s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{
			{Name: "name"}, {Name: "qty", Type: "INTEGER"}, {Name: "price", Type: "REAL"}, {Name: "note"},
		}})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.New(s, nil))
		b.Cleanup(srv.Close)
		return server{srv.URL + "/projects/acme/records/items", token}
	}
	off := newServer(projectdata.WithChangeLogOff(nil))
	on := newServer(nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	send := func(s server, body []byte) error {
		req, err := http.NewRequest("POST", s.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	one := []byte(`{"name":"new","qty":7,"price":2.5,"note":"load"}`)
	var batch strings.Builder
	batch.WriteString("[")
	for j := range 1000 {
		if j > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"name":"item %d","qty":%d,"price":%d.25,"note":"bench"}`, j, j, j)
	}
	batch.WriteString("]")
	for _, w := range []struct {
		name    string
		body    []byte
		clients int
	}{
		{"create_one_c1", one, 1},
		{"create_one_c16", one, 16},
		{"batch1000_c1", []byte(batch.String()), 1},
		{"batch1000_c16", []byte(batch.String()), 16},
	} {
		b.Run(w.name, func(b *testing.B) {
			// run sends n requests to s from w.clients goroutines and
			// returns the time they took.
			run := func(s server, n int) time.Duration {
				var (
					left  atomic.Int64
					wg    sync.WaitGroup
					first atomic.Pointer[error]
				)
				left.Store(int64(n))
				start := time.Now()
				for range w.clients {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							if err := send(s, w.body); err != nil {
								first.CompareAndSwap(nil, &err)
								return
							}
						}
					})
				}
				wg.Wait()
				if err := first.Load(); err != nil {
					b.Fatal(*err)
				}
				return time.Since(start)
			}
			const parts = 20
			var (
				total  [2]time.Duration // off, on
				ratios []float64        // per slice pair: off time / on time
			)
			b.ReportAllocs()
			for i := range parts {
				n := b.N*(i+1)/parts - b.N*i/parts
				if n == 0 {
					continue
				}
				var took [2]time.Duration
				for j := range 2 {
					k := (i + j) % 2 // off first in one slice, on first in the next
					took[k] = run([]server{off, on}[k], n)
					total[k] += took[k]
				}
				ratios = append(ratios, took[0].Seconds()/took[1].Seconds())
			}
			slices.Sort(ratios)
			b.ReportMetric(float64(b.N)/total[0].Seconds(), "off-req/s")
			b.ReportMetric(float64(b.N)/total[1].Seconds(), "on-req/s")
			b.ReportMetric(total[0].Seconds()/total[1].Seconds(), "on/off")
			b.ReportMetric(ratios[len(ratios)/2], "on/off-median")
		})
	}
}
