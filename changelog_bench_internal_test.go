package projectdata

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/projectdata/projectdata/internal/cputime"
)

// BenchmarkInsertChangeLogPaired measures inserts with the change log on
// against the same inserts with it off, in alternating slices of one run
// (so that the load of the machine falls on both alike), one row per
// insert and 1,000 rows per insert. b.N inserts go to each Store; the
// ratio on/off is the throughput with the log as a fraction of without.
// At 4000x on 2 shared cores (session 4, row counts folded from the log),
// 11 runs: single rows, median of slices 0.86-1.0 (0.68-0.84 before) and
// on/off 0.73-0.96 (0.43-1.04 before); 1,000-row batches on/off 0.77-0.90
// (0.73-0.94 before).
func BenchmarkInsertChangeLogPaired(b *testing.B) {
	verifyChangeLog = false // production does not run it (its update hook would slow both sides)
	defer func() { verifyChangeLog = true }()
	ctx := context.Background()
	for _, batch := range []int{1, 1000} {
		rows := make([]Row, batch)
		for i := range rows {
			rows[i] = Row{"name": fmt.Sprint("item-", i), "qty": i}
		}
		b.Run(fmt.Sprintf("Rows%d", batch), func(b *testing.B) {
			on := itemsStore(b, nil)
			off := itemsStore(b, &Options{changeLogOff: true})
			insert := func(s *Store) {
				if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
					b.Fatal(err)
				}
			}
			const parts = 40
			var (
				wall, cpu [2]time.Duration // off, on
				ratios    []float64        // per slice pair: off time / on time
			)
			stores := []*Store{off, on}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range parts {
				n := b.N*(i+1)/parts - b.N*i/parts
				var took [2]time.Duration
				for j := range 2 {
					k := (i + j) % 2 // off first in one slice, on first in the next
					start, startCPU := time.Now(), cputime.Process()
					for range n {
						insert(stores[k])
					}
					took[k] = time.Since(start)
					wall[k] += took[k]
					cpu[k] += cputime.Process() - startCPU
				}
				ratios = append(ratios, took[0].Seconds()/took[1].Seconds())
			}
			slices.Sort(ratios)
			b.ReportMetric(float64(wall[0].Nanoseconds())/float64(b.N), "off-ns/op")
			b.ReportMetric(float64(wall[1].Nanoseconds())/float64(b.N), "on-ns/op")
			b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "on/off")
			b.ReportMetric(ratios[len(ratios)/2], "on/off-median")
			b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "on/off-cpu")
		})
	}
}
