package projectdata

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkInsertIdempotencyKey measures single-row inserts without and
// with an idempotency key (a new key each time) in the same run, one at a
// time and from 16 goroutines (whose writes share group commits); the
// growth of the database per row with and without tells a key's storage.
func BenchmarkInsertIdempotencyKey(b *testing.B) {
	verifyChangeLog = false // its update hook would slow both sides (benchmarks run after the tests)
	defer func() { verifyChangeLog = true }()
	rows := []Row{{"name": "item", "qty": 1}}
	var keys atomic.Int64
	insert := func(b *testing.B, s *Store, keyed bool) {
		ctx := context.Background()
		if keyed {
			ctx = WithIdempotencyKey(ctx, "order-"+strconv.FormatInt(keys.Add(1), 10))
		}
		if _, err := s.Insert(ctx, "acme", "items", rows); err != nil {
			b.Error(err)
		}
	}
	for _, parallel := range []bool{false, true} {
		for _, keyed := range []bool{false, true} {
			name := map[bool]string{false: "Serial/", true: "Parallel/"}[parallel] + map[bool]string{false: "NoKey", true: "Key"}[keyed]
			b.Run(name, func(b *testing.B) {
				s := itemsStore(b, nil)
				before := storedBytes(b, s)
				b.ReportAllocs()
				if parallel {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							insert(b, s, keyed)
						}
					})
				} else {
					for b.Loop() {
						insert(b, s, keyed)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric((storedBytes(b, s)-before)/float64(b.N), "dbB/row")
			})
		}
	}
}
