package translog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-search/sluice/node/engine/analysis/analysistest"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// BenchmarkAdd compares Request and Async durability with 1 and 2 writers,
// one op per Add and bulks of 100 (AddBatch), with ~1 KB sources like the
// corpus. ops/s is the figure to compare; fsyncs/op shows group commit.
func BenchmarkAdd(b *testing.B) {
	source := []byte(`{"title": "t", "body": "` + strings.Repeat("lorem ipsum ", 85) + `"}`)
	for _, dur := range []struct {
		name string
		d    Durability
	}{{"request", Request}, {"async", Async}} {
		for _, writers := range []int{1, 2} {
			for _, batch := range []int{1, 100} {
				b.Run(fmt.Sprintf("%s/writers=%d/batch=%d", dur.name, writers, batch), func(b *testing.B) {
					tl := open(b, b.TempDir(), Options{Durability: dur.d})
					defer tl.Close()
					var seq atomic.Uint64
					b.SetBytes(int64(len(source)))
					b.ReportAllocs()
					before := tl.Stats().Fsyncs
					b.ResetTimer()
					var wg sync.WaitGroup
					per := (b.N + writers - 1) / writers
					for range writers {
						wg.Go(func() {
							ops := make([]Op, batch)
							for done := 0; done < per; done += batch {
								n := min(batch, per-done)
								for i := range n {
									s := seq.Add(1)
									ops[i] = Op{Type: OpIndex, SeqNo: s, PrimaryTerm: 1, ID: fmt.Appendf(ops[i].ID[:0], "%d", s), Source: source}
								}
								if _, err := tl.AddBatch(ctx, ops[:n]); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "ops/s")
					b.ReportMetric(float64(tl.Stats().Fsyncs-before)/float64(per*writers), "fsyncs/op")
				})
			}
		}
	}
}

// BenchmarkWritePath is the shard write path without inversion: each
// writer parses corpus documents with the mapping's Parser and appends
// them in bulks of 100, as a bulk request does. It measures what group
// commit buys when fsyncs overlap real work (issue 4's target: request
// durability with 2 writers at most 2x slower than async).
func BenchmarkWritePath(b *testing.B) {
	docs := analysistest.Corpus(b, 2000)
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{"id": mapping.NewField(document.Keyword),
		"title": mapping.NewField(document.Text), "body": mapping.NewField(document.Text)})
	if err != nil {
		b.Fatal(err)
	}
	const bulk = 100
	for _, dur := range []struct {
		name string
		d    Durability
	}{{"request", Request}, {"async", Async}} {
		for _, writers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/writers=%d", dur.name, writers), func(b *testing.B) {
				tl := open(b, b.TempDir(), Options{Durability: dur.d})
				defer tl.Close()
				var seq atomic.Uint64
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				per := (b.N + writers - 1) / writers
				for range writers {
					wg.Go(func() {
						p, err := mapping.NewParser(m)
						if err != nil {
							b.Error(err)
							return
						}
						var doc document.Document
						ops := make([]Op, bulk)
						for done := 0; done < per; done += bulk {
							n := min(bulk, per-done)
							for i := range n {
								s := seq.Add(1)
								d := &docs[s%uint64(len(docs))]
								if _, err := p.Parse(&doc, []byte(d.ID), d.JSON); err != nil {
									b.Error(err)
									return
								}
								ops[i] = Op{Type: OpIndex, SeqNo: s, PrimaryTerm: 1, ID: doc.ID, Source: d.JSON}
							}
							if _, err := tl.AddBatch(ctx, ops[:n]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "docs/s")
			})
		}
	}
}

// BenchmarkSyncCost compares what one sync costs the disk: a 4 KB append
// and fsync alone (the translog before checkpoints on every sync), then
// with the checkpoint written in place (pwrite + fdatasync, as now), then
// with a checkpoint replaced by temp file, fsync, rename and directory
// fsync (how it was written on roll and close). Run:
//
//	go test -run '^$' -bench BenchmarkSyncCost -benchtime 2000x -count 5 ./node/engine/translog/
func BenchmarkSyncCost(b *testing.B) {
	rec := make([]byte, 4096)
	for _, mode := range []string{"fsync", "fsync+checkpoint", "fsync+rename-checkpoint"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			f, err := os.OpenFile(filepath.Join(dir, "data"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			cf := ckpFile{dir: dir}
			c := Checkpoint{Generation: 1, Offset: fileHeaderSize, MinGeneration: 1}
			if err := cf.write(&c); err != nil {
				b.Fatal(err)
			}
			defer cf.close()
			for b.Loop() {
				if _, err := f.Write(rec); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				c.Offset += int64(len(rec))
				switch mode {
				case "fsync+checkpoint":
					err = cf.write(&c)
				case "fsync+rename-checkpoint":
					cf.close()
					err = cf.create(&c)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
