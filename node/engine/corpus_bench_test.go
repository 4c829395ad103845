package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/store"
)

// Corpus benchmarks: the first SLUICE_BENCH_DOCS (default 20000) documents
// of ../shared/corpus/enwiki-1k.jsonl.zst, indexed through the Engine with
// the real codec and mapping into a temp directory (FSDirectory behind the
// NRT cache), merging on (SLUICE_BENCH_MERGES=off: off). Skipped when the
// corpus is absent.

var (
	benchDocsOnce sync.Once
	benchDocs     []corpus.Doc
	benchDocsErr  error
)

func loadBenchDocs(b *testing.B) []corpus.Doc {
	benchDocsOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			benchDocsErr = err
			return
		}
		path := corpus.DefaultPath(wd)
		if path == "" {
			return
		}
		n := 20000
		if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_DOCS")); err == nil && v > 0 {
			n = v
		}
		benchDocs, _, benchDocsErr = corpus.Load(path, n)
	})
	if benchDocsErr != nil {
		b.Fatal(benchDocsErr)
	}
	if len(benchDocs) == 0 {
		b.Skip("corpus not found")
	}
	return benchDocs
}

// benchMapping is the peers' mapping (bench/shardbench.Schema).
func benchMapping() (*mapping.Mapping, error) {
	return mapping.New(mapping.DynamicStrict, map[string]mapping.Field{"id": mapping.NewField(document.Keyword),
		"title": mapping.NewField(document.Text), "body": mapping.NewField(document.Text)})
}

// benchParser is the corpus mapping's document parser.
func benchParser(b *testing.B) *MappingParser {
	m, err := benchMapping()
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewMappingParser(m)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func openBenchEngine(b *testing.B, ramMB int) *Engine {
	p := benchParser(b)
	e, err := Open(context.Background(), Options{Path: b.TempDir(), Codec: codec.New(codec.Options{}), Parser: p,
		RAMBufferBytes: int64(ramMB) << 20, RefreshInterval: -1,
		DisableMerges: os.Getenv("SLUICE_BENCH_MERGES") == "off"})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkIndexCorpus indexes the docs with 1, 2 and 4 goroutines through
// Engine.Index (parse, created check, invert) and refreshes at the end; one
// iteration is the whole set.
func BenchmarkIndexCorpus(b *testing.B) {
	docs := loadBenchDocs(b)
	for _, g := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			ctx := context.Background()
			var flushes int64
			cpu0 := cpuTime()
			for range b.N {
				e := openBenchEngine(b, 64)
				var next atomic.Int64
				var wg sync.WaitGroup
				for range g {
					wg.Go(func() {
						for {
							i := int(next.Add(1) - 1)
							if i >= len(docs) {
								return
							}
							if _, err := e.Index(ctx, []byte(docs[i].ID), docs[i].Source); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if _, err := e.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
				st := e.Stats()
				if st.NumDocs != len(docs) {
					b.Fatalf("%d docs visible, want %d", st.NumDocs, len(docs))
				}
				flushes += st.Flushes
				e.Close(ctx)
			}
			b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(flushes)/float64(b.N), "flushes")
			// CPU per doc is what a shared machine cannot distort: if it
			// stays flat as goroutines are added, throughput scales with
			// the cores actually available.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(len(docs)*b.N), "cpu-µs/doc")
		})
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNRTRefresh replaces ~1 MB of random docs (the NRT experiment's
// per-second volume) and times the refresh that makes them visible. With
// checkpoint=true each refresh is followed by a replication checkpoint
// (Engine.Checkpoint: live-docs files for the segments whose deletes
// changed, footers of new files read), timed with it, and the previous
// checkpoint released, as a primary with replicas does; cp-ms is the
// checkpoint's share. Run both in one invocation, alternated with
// -count, to compare.
func BenchmarkNRTRefresh(b *testing.B) {
	for _, withCP := range []bool{false, true} {
		b.Run(fmt.Sprintf("checkpoint=%v", withCP), func(b *testing.B) { benchNRTRefresh(b, withCP) })
	}
}

func benchNRTRefresh(b *testing.B, withCP bool) {
	docs := loadBenchDocs(b)
	ctx := context.Background()
	e := openBenchEngine(b, 64)
	defer e.Close(ctx)
	for i := range docs {
		if _, err := e.Index(ctx, []byte(docs[i].ID), docs[i].Source); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	var swap, flush, apply, cpTime time.Duration
	var prev *ReplicationCheckpoint
	defer func() {
		if prev != nil {
			prev.Release()
		}
	}()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for bytes := 0; bytes < 1<<20; {
			d := &docs[r.IntN(len(docs))]
			if _, err := e.Index(ctx, []byte(d.ID), d.Source); err != nil {
				b.Fatal(err)
			}
			bytes += d.TextBytes()
		}
		b.StartTimer()
		res, err := e.Refresh(ctx)
		if err != nil {
			b.Fatal(err)
		}
		took := res.Took
		if withCP {
			start := time.Now()
			cp, err := e.Checkpoint(ctx)
			if err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			cpTime += d
			took += d
			if prev != nil {
				prev.Release()
			}
			prev = cp
		}
		lat = append(lat, took)
		swap, flush, apply = swap+res.SwapWait, flush+res.Flush, apply+res.ApplyDeletes
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(e.Stats().Segments), "segments")
	n := float64(b.N) * 1e6
	b.ReportMetric(float64(swap.Nanoseconds())/n, "swap-ms")
	b.ReportMetric(float64(flush.Nanoseconds())/n, "flush-ms")
	b.ReportMetric(float64(apply.Nanoseconds())/n, "apply-ms")
	b.ReportMetric(float64(cpTime.Nanoseconds())/n, "cp-ms")
}

// BenchmarkFlush1MB splits a flush of ~1 MB of corpus docs (one refresh of
// the NRT experiment) into the DWPT's own share — sorting terms and
// decoding every posting, as the codec reads them — and the whole codec
// write.
func BenchmarkFlush1MB(b *testing.B) {
	docs := loadBenchDocs(b)
	p := benchParser(b)
	build := func() *dwpt.DWPT {
		d := dwpt.New(nil)
		var doc document.Document
		for i, size := 0, 0; size < 1<<20; i++ {
			doc.Reset()
			if err := p.Parse([]byte(docs[i].ID), docs[i].Source, &doc); err != nil {
				b.Fatal(err)
			}
			if _, err := d.AddDocument(&doc); err != nil {
				b.Fatal(err)
			}
			size += docs[i].TextBytes()
		}
		return d
	}
	b.Run("read", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			d := build()
			b.StartTimer()
			fis := d.FieldInfos()
			var pe index.PostingsEnum
			for n := range fis.Len() {
				t := d.Terms(fis.ByNumber(n).Name)
				if t == nil {
					continue
				}
				te := t.Iterator()
				for te.Next() {
					_ = te.Term()
					pe = te.Postings(pe, index.PostingsPositions)
					for doc := pe.NextDoc(); doc != index.NoMoreDocs; doc = pe.NextDoc() {
						for range pe.Freq() {
							pe.NextPosition()
						}
					}
				}
			}
		}
	})
	b.Run("codec", func(b *testing.B) {
		c := codec.New(codec.Options{})
		for i := range b.N {
			b.StopTimer()
			d := build()
			dir := store.NewRAMDirectory()
			info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", i), MaxDoc: d.NumDocs(), Codec: c.Name()}
			b.StartTimer()
			if err := c.WriteSegment(context.Background(), dir, info, d, store.IOContext{Kind: store.IOFlush}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
