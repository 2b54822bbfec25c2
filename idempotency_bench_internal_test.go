package projectdata

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/projectdata/projectdata/internal/cputime"
)

// BenchmarkInsertIdempotencyKey measures single-row inserts without and
// with an idempotency key (a new key each time) in the same run, one at a
// time and from 16 goroutines (whose writes share group commits); the
// growth of the database per row with and without tells a key's storage.
// Serial/Paired and Parallel/Paired insert with and without a key into one
// Store in alternating slices, so that both sides share the machine's load
// over the same stretch of time; x_nokey is the keyed rate as a ratio to
// the unkeyed (issue 16's figure). Their keys grow in order, as time-ordered
// keys do (UUIDv7, ULID): each lands at the end of the key index.
// Parallel/PairedRandomKeys takes random UUIDv4-shaped keys instead, each
// of which lands on a page of the index of its own.
func BenchmarkInsertIdempotencyKey(b *testing.B) {
	verifyChangeLog = false // its update hook would slow both sides (benchmarks run after the tests)
	defer func() { verifyChangeLog = true }()
	rows := []Row{{"name": "item", "qty": 1}}
	var keys atomic.Int64
	orderedKey := func() string { return fmt.Sprintf("order-%012d", keys.Add(1)) }
	// insert inserts rows under a new key from key, or without one if nil.
	insert := func(b *testing.B, s *Store, key func() string) {
		ctx := context.Background()
		if key != nil {
			ctx = WithIdempotencyKey(ctx, key())
		}
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			b.Error(err)
		}
	}
	for _, parallel := range []bool{false, true} {
		for _, keyed := range []bool{false, true} {
			name := map[bool]string{false: "Serial/", true: "Parallel/"}[parallel] + map[bool]string{false: "NoKey", true: "Key"}[keyed]
			key := map[bool]func() string{false: nil, true: orderedKey}[keyed]
			b.Run(name, func(b *testing.B) {
				s := itemsStore(b, nil)
				before := storedBytes(b, s)
				b.ReportAllocs()
				if parallel {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							insert(b, s, key)
						}
					})
				} else {
					for b.Loop() {
						insert(b, s, key)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric((storedBytes(b, s)-before)/float64(b.N), "dbB/row")
			})
		}
		// paired inserts without a key and with one from key, in turns.
		paired := func(key func() string) func(b *testing.B) {
			return func(b *testing.B) {
				s := itemsStore(b, nil)
				var keyed, unkeyed, keyedCPU, unkeyedCPU time.Duration
				for i := range pairedSlices {
					n := b.N/pairedSlices + boolInt(i < b.N%pairedSlices)
					d, cpu := insertSlice(n, parallel, func() { insert(b, s, nil) })
					unkeyed, unkeyedCPU = unkeyed+d, unkeyedCPU+cpu
					d, cpu = insertSlice(n, parallel, func() { insert(b, s, key) })
					keyed, keyedCPU = keyed+d, keyedCPU+cpu
				}
				b.ReportMetric(float64(b.N)/keyed.Seconds(), "rows/s")
				b.ReportMetric(float64(b.N)/unkeyed.Seconds(), "nokey_rows/s")
				b.ReportMetric(unkeyed.Seconds()/keyed.Seconds(), "x_nokey")
				b.ReportMetric(unkeyedCPU.Seconds()/keyedCPU.Seconds(), "cpu_x_nokey")
			}
		}
		b.Run(map[bool]string{false: "Serial/", true: "Parallel/"}[parallel]+"Paired", paired(orderedKey))
		if parallel {
			b.Run("Parallel/PairedRandomKeys", paired(randomKey))
		}
	}
}

// randomKey is a random key shaped as a UUIDv4 (version and variant bits
// aside), as most clients make them.
func randomKey() string {
	a, b := rand.Uint64(), rand.Uint64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// pairedSlices is how many alternating slices a paired measurement takes
// of each side.
const pairedSlices = 10

// insertSlice runs insert n times, one at a time or from 8 goroutines, and
// returns how long that took and the CPU time the process used meanwhile
// (user and system: on a shared machine a steadier measure of the work).
func insertSlice(n int, parallel bool, insert func()) (time.Duration, time.Duration) {
	start, startCPU := time.Now(), cputime.Process()
	if !parallel {
		for range n {
			insert()
		}
		return time.Since(start), cputime.Process() - startCPU
	}
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				insert()
			}
		})
	}
	wg.Wait()
	return time.Since(start), cputime.Process() - startCPU
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
