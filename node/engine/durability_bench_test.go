package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// BenchmarkDurability compares indexing throughput with Request and Async
// translog durability, two writers, one operation per call ("op") or bulks
// of 100 with one Bulk.Sync each ("bulk100"). Reported: docs/s and fsyncs
// per op. Run:
//
//	go test -run '^$' -bench BenchmarkDurability -benchtime 20000x ./node/engine/
func BenchmarkDurability(b *testing.B) {
	const writers = 2
	for _, dur := range []translog.Durability{translog.Request, translog.Async} {
		for _, batch := range []int{1, 100} {
			name := fmt.Sprintf("%s/op", dur)
			if batch > 1 {
				name = fmt.Sprintf("%s/bulk%d", dur, batch)
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				e := mustOpenDurable(b, b.TempDir(), Options{RefreshInterval: time.Second,
					TranslogOptions: TranslogOptions{Durability: dur}})
				defer e.Close(ctx)
				srcs := make([][]byte, 1000)
				for i := range srcs {
					srcs[i] = fmt.Appendf(nil, `{"title":"document %d about rivers and the sea and what lies between","n":%d}`, i, i)
				}
				f0 := e.TranslogStats().Fsyncs
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for g := range writers {
					wg.Go(func() {
						var id []byte
						for i := g; i < b.N; {
							bulk := e.NewBulk()
							for n := 0; n < batch && i < b.N; n, i = n+1, i+writers {
								id = fmt.Appendf(id[:0], "%d", i)
								var err error
								if batch == 1 {
									_, err = e.Index(ctx, id, srcs[i%len(srcs)])
								} else {
									_, err = bulk.Index(ctx, id, srcs[i%len(srcs)])
								}
								if err != nil {
									b.Error(err)
									return
								}
							}
							if batch > 1 {
								if err := bulk.Sync(ctx); err != nil {
									b.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/el.Seconds(), "docs/s")
				b.ReportMetric(float64(e.TranslogStats().Fsyncs-f0)/float64(b.N), "fsyncs/op")
			})
		}
	}
}
