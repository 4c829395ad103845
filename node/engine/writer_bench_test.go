package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
)

// BenchmarkWriterAdd measures the write path without parsing or flushing:
// pre-built ~1 KB text docs added with 1 and 2 goroutines into a writer
// whose buffer never fills. Compare docs/s across goroutine counts for
// contention on the writer's lock.
func BenchmarkWriterAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 50000)
	const nDocs = 1024
	proto := make([]document.Document, nDocs)
	for i := range proto {
		d := &proto[i]
		d.Source = make([]byte, 1024)
		body := document.Field{Name: "body", Type: document.Text, Length: 180}
		for p := range 180 {
			body.Tokens = append(body.Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", zipf.Uint64()), Position: int32(p)})
		}
		d.Fields = []document.Field{body}
	}
	for _, g := range []int{1, 2} {
		for _, op := range []string{"add", "update"} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", op, g), func(b *testing.B) {
				ti := newTestWriter(b, 4<<30)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range g {
					wg.Go(func() {
						var doc document.Document
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return
							}
							doc = proto[i%nDocs]
							doc.ID = fmt.Appendf(nil, "%d", i)
							var err error
							if op == "add" {
								_, err = ti.w.Add(context.Background(), &doc)
							} else {
								_, _, err = ti.w.Update(context.Background(), doc.ID, &doc)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
			})
		}
	}
}
