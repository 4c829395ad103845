package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// BenchmarkUpdates compares, in one run, an in-place doc-values update
// with re-indexing the same document (per-op cost, translog without fsync
// so the write path is what is measured), and the reopen that makes
// updates visible, by updates per reopen and index size: the layered runs
// make it grow with the updates, not with the segment.
//
//	go test ./node/engine -run XXX -bench BenchmarkUpdates -benchtime 2000x
func BenchmarkUpdates(b *testing.B) {
	ctx := context.Background()
	open := func(b *testing.B, docs int) *Engine {
		b.Helper()
		e := mustOpenDurable(b, b.TempDir(), Options{Parser: updatableMapping(b), TranslogOptions: TranslogOptions{Durability: translog.Async}})
		bulk := e.NewBulk()
		for i := range docs {
			if _, err := bulk.Index(ctx, fmt.Appendf(nil, "%d", i), benchSource(i, i)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close(ctx) })
		return e
	}
	const docs = 20_000
	for _, kind := range []string{"update_doc_values", "reindex"} {
		b.Run("op="+kind, func(b *testing.B) {
			e := open(b, docs)
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Appendf(nil, "%d", (i*7919)%docs)
				var err error
				if kind == "reindex" {
					_, err = e.Index(ctx, id, benchSource((i*7919)%docs, i))
				} else {
					_, err = e.UpdateDocValues(ctx, id, fmt.Appendf(nil, `{"price":%d}`, i))
				}
				if err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 { // a reopen a second at 1,000 updates/s
					b.StopTimer()
					if _, err := e.Refresh(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
	for _, size := range []int{docs, 10 * docs} {
		e := open(b, size)
		for _, perReopen := range []int{1, 100, 1000} {
			for _, kind := range []string{"update_doc_values", "reindex"} {
				b.Run(fmt.Sprintf("reopen/docs=%d/updates=%d/%s", size, perReopen, kind), func(b *testing.B) {
					var total time.Duration
					for i := range b.N {
						for j := range perReopen {
							n := (i*perReopen + j) * 7919 % size
							id := fmt.Appendf(nil, "%d", n)
							var err error
							if kind == "reindex" {
								_, err = e.Index(ctx, id, benchSource(n, i))
							} else {
								_, err = e.UpdateDocValues(ctx, id, fmt.Appendf(nil, `{"price":%d}`, i))
							}
							if err != nil {
								b.Fatal(err)
							}
						}
						start := time.Now()
						if _, err := e.Refresh(ctx); err != nil {
							b.Fatal(err)
						}
						total += time.Since(start)
					}
					b.ReportMetric(float64(total.Microseconds())/float64(b.N), "reopen-µs")
				})
			}
		}
	}
}

// benchSource is a corpus-like document: some text, an indexed long, a
// doc-value-only price.
func benchSource(i, v int) []byte {
	return fmt.Appendf(nil, `{"title":"document %d about rivers stones and harbour light number %d","n":%d,"price":%d}`, i, v, i%100, v)
}

// BenchmarkDocValuesUpdatesGet reads every doc of a 1M-doc segment through
// its layered column, as a sort by an updated field does: 100k updates in
// runs of a refresh each.
func BenchmarkDocValuesUpdatesGet(b *testing.B) {
	const maxDoc = 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	var u *docValuesUpdates
	for range 10 {
		p := &dvPending{typ: document.Long}
		for range 10000 {
			p.entries = append(p.entries, dvPendingEntry{doc: int32(rng.IntN(maxDoc)), val: rng.Int64()})
		}
		u = u.withPending(map[string]*dvPending{"price": p})
	}
	l := &layeredNumericDocValues{runs: u.fields["price"].runs}
	b.ReportMetric(float64(len(l.runs)), "runs")
	b.ResetTimer()
	var sum int64
	for b.Loop() {
		for d := range maxDoc {
			v, _ := l.Get(d)
			sum += v
		}
	}
	_ = sum
}
