package codec_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/analysis/analysistest"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// BenchmarkFlushCorpus writes an in-memory segment (the indexing chain's
// DWPT) of corpus docs — title and body with positions, _source stored —
// as a flush does, and reports write throughput and bytes per doc of each
// file.
func BenchmarkFlushCorpus(b *testing.B) {
	docs := analysistest.Corpus(b, 20000)
	seg := dwpt.New(dwpt.NewAllocator(0))
	an := analysis.NewStandard()
	var buf analysis.Buffer
	var doc document.Document
	for _, d := range docs {
		doc.Reset()
		doc.ID = append(doc.ID, d.ID...)
		doc.Source = append(doc.Source, d.JSON...)
		buf.Reset()
		for _, f := range []struct{ name, text string }{{"title", d.Title}, {"body", d.Body}} {
			start := len(buf.Tokens)
			an.Analyze(&buf, []byte(f.text), 0)
			if toks := buf.Tokens[start:]; len(toks) > 0 {
				doc.Fields = append(doc.Fields, document.Field{Name: f.name, Type: document.Text, Tokens: toks, Length: int32(len(toks))})
			}
		}
		if _, err := seg.AddDocument(&doc); err != nil {
			b.Fatal(err)
		}
	}
	for _, comp := range []codec.Compression{codec.CompressionS2, codec.CompressionZstd} {
		b.Run(fmt.Sprintf("compression=%d", comp), func(b *testing.B) {
			c := codec.New(codec.Options{StoredCompression: comp})
			dir, err := store.NewFSDirectory(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			sizes := map[string]int64{}
			for i := 0; b.Loop(); i++ {
				info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", i), MaxDoc: seg.MaxDoc()}
				if err := c.WriteSegment(context.Background(), dir, info, seg, store.IOContext{Kind: store.IOFlush}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, f := range info.Files {
					n, _ := dir.FileLength(f)
					sizes[f[strings.IndexByte(f, '.')+1:]] = n
					dir.DeleteFile(f)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(seg.MaxDoc())*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
			for ext, n := range sizes {
				b.ReportMetric(float64(n)/float64(seg.MaxDoc()), ext+"-B/doc")
			}
		})
	}
}
