package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// BenchmarkTranslogReplay measures recovery from the translog, which sets
// how large the uncommitted translog may grow (CommitTranslogBytes) for a
// restart to take seconds: the corpus's first SLUICE_BENCH_DOCS documents
// (default 20000, ~1 KB each) are indexed with no commit, and each
// iteration opens the engine — replaying all of them, and refreshing — and
// closes it without committing. Reported: translog MB/s and ops/s. Run:
//
//	SLUICE_BENCH_DOCS=100000 go test -run '^$' -bench BenchmarkTranslogReplay -benchtime 3x ./node/engine/
func BenchmarkTranslogReplay(b *testing.B) {
	docs := loadBenchDocs(b)
	ctx := context.Background()
	p := benchParser(b)
	opts := Options{Path: b.TempDir(), Codec: codec.New(codec.Options{}), Parser: p, RefreshInterval: -1,
		TranslogOptions: TranslogOptions{Durability: translog.Async, CommitTranslogBytes: -1, CommitInterval: -1}}
	e, err := Open(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers = 2
	for w := range writers {
		wg.Go(func() {
			bulk := e.NewBulk()
			for i := w; i < len(docs); i += writers {
				if _, err := bulk.Index(ctx, []byte(docs[i].ID), docs[i].Source); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := e.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	size := e.TranslogStats().SizeBytes
	if err := e.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var scan, replay float64
	for b.Loop() {
		rec := new(Recovery)
		o := opts
		o.Recovery = rec
		e, err := Open(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		pr := rec.Progress()
		if pr.Stage != RecoveryDone || pr.Replayed != int64(len(docs)) || e.Stats().NumDocs != len(docs) {
			b.Fatalf("replayed %d of %d docs (%d visible): %+v", pr.Replayed, len(docs), e.Stats().NumDocs, pr)
		}
		scan += rec.stageTime(RecoveryScanning).Seconds()
		replay += rec.stageTime(RecoveryReplaying).Seconds()
		b.StopTimer()
		if err := e.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)/1e6, "translog-MB")
	b.ReportMetric(float64(size)*n/1e6/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(float64(len(docs))*n/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(scan/n, "scan-s")
	b.ReportMetric(replay/n, "apply-s")
}
