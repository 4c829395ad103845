package codec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/sluice-search/sluice/node/engine/analysis/analysistest"
	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// cpuLoop runs body b.N times on one locked thread and reports CPU ns per
// unit (units counted by body).
func cpuLoop(b *testing.B, unit string, body func() int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	units := 0
	start := codectest.ThreadCPU()
	for b.Loop() {
		units += body()
	}
	if cpu := codectest.ThreadCPU() - start; units > 0 && cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(units), "cpu-ns/"+unit)
	}
}

// benchModel: maxDoc docs; field "body" (positions, norms) with a frequent
// term in ~half the docs and a rare one; _id singletons; small sources.
func benchModel(maxDoc int) *codectest.Model {
	r := rand.New(rand.NewPCG(1, 1))
	m := &codectest.Model{Docs: maxDoc}
	id := &codectest.Field{Info: index.FieldInfo{Name: index.IDField, Number: 0, Type: document.Keyword, IndexOptions: index.IndexDocs}}
	body := &codectest.Field{Info: index.FieldInfo{Name: "body", Number: 1, Type: document.Text, IndexOptions: index.IndexDocsFreqsPositions, HasNorms: true}}
	m.Fields = []*codectest.Field{id, body}
	m.Stored = make([]index.StoredDoc, maxDoc)
	freq := codectest.Term{Term: []byte("the")}
	rare := codectest.Term{Term: []byte("zebra")}
	body.Norms = make([]uint8, maxDoc)
	for d := 0; d < maxDoc; d++ {
		key := []byte(fmt.Sprintf("doc-%08d", d))
		id.Terms = append(id.Terms, codectest.Term{Term: key, Postings: []codectest.Posting{{Doc: d, Freq: 1}}})
		m.Stored[d] = index.StoredDoc{ID: key, Source: []byte(fmt.Sprintf(`{"title":"document %d","n":%d}`, d, r.IntN(1000)))}
		body.Norms[d] = index.EncodeNorm(10 + r.IntN(500))
		if r.IntN(2) == 0 {
			f := 1 + r.IntN(4)
			p := codectest.Posting{Doc: d, Freq: f}
			for i := 0; i < f; i++ {
				p.Positions = append(p.Positions, 3*i+r.IntN(3))
			}
			freq.Postings = append(freq.Postings, p)
		}
		if r.IntN(1000) == 0 {
			rare.Postings = append(rare.Postings, codectest.Posting{Doc: d, Freq: 1, Positions: []int{0}})
		}
	}
	body.Terms = []codectest.Term{freq, rare}
	m.Finish()
	return m
}

func openBench(b *testing.B, maxDoc int) (index.SegmentReader, *codectest.Model) {
	b.Helper()
	m := benchModel(maxDoc)
	dir, err := store.NewFSDirectory(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c := New(Options{})
	info := &index.SegmentInfo{Name: "_b", MaxDoc: maxDoc}
	if err := c.WriteSegment(context.Background(), dir, info, m, store.IOContext{}); err != nil {
		b.Fatal(err)
	}
	sr, err := c.OpenSegment(dir, info)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sr.Close() })
	return sr, m
}

func BenchmarkPostings(b *testing.B) {
	sr, _ := openBench(b, 1_000_000)
	te := sr.Terms("body").Iterator()
	if !te.SeekExact([]byte("the")) {
		b.Fatal("term missing")
	}
	df := te.DocFreq()
	for _, tc := range []struct {
		name  string
		flags index.PostingsFlags
	}{{"NextDoc-docs", index.PostingsDocs}, {"NextDoc-freqs", index.PostingsFreqs}} {
		b.Run(tc.name, func(b *testing.B) {
			var pe index.PostingsEnum
			cpuLoop(b, "doc", func() int {
				pe = te.Postings(pe, tc.flags)
				for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
					_ = pe.Freq()
				}
				return df
			})
		})
	}
	for _, gap := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("Advance-gap%d", gap), func(b *testing.B) {
			var pe index.PostingsEnum
			cpuLoop(b, "advance", func() int {
				calls := 0
				pe = te.Postings(pe, index.PostingsFreqs)
				for d := pe.Advance(gap); d != index.NoMoreDocs; d = pe.Advance(d + gap) {
					calls++
				}
				return calls
			})
		})
	}
	b.Run("NextPosition", func(b *testing.B) {
		var pe index.PostingsEnum
		cpuLoop(b, "position", func() int {
			n := 0
			pe = te.Postings(pe, index.PostingsPositions)
			for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
				for i := pe.Freq(); i > 0; i-- {
					pe.NextPosition()
				}
				n += pe.Freq()
			}
			return n
		})
	})
	b.Run("Impacts-AdvanceShallow", func(b *testing.B) {
		cpuLoop(b, "block", func() int {
			calls := 0
			ie := te.Impacts(index.PostingsFreqs)
			for up := ie.AdvanceShallow(0); up != index.NoMoreDocs; up = ie.AdvanceShallow(up + 1) {
				ie.BlockMax()
				calls++
			}
			return calls
		})
	})
}

func BenchmarkSeekExact(b *testing.B) {
	const n = 200_000
	sr, _ := openBench(b, n)
	te := sr.Terms(index.IDField).Iterator()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("doc-%08d", (i*7919)%n))
	}
	var pe index.PostingsEnum
	i := 0
	for b.Loop() {
		if !te.SeekExact(keys[i&1023]) {
			b.Fatal("missing id")
		}
		pe = te.Postings(pe, index.PostingsDocs)
		pe.NextDoc()
		i++
	}
}

func BenchmarkStoredDocument(b *testing.B) {
	sr, _ := openBench(b, 100_000)
	for _, random := range []bool{false, true} {
		b.Run(fmt.Sprintf("random=%v", random), func(b *testing.B) {
			sf := sr.StoredFields()
			var doc index.StoredDoc
			r := rand.New(rand.NewPCG(2, 2))
			d := 0
			for b.Loop() {
				if random {
					d = r.IntN(100_000)
				} else {
					d = (d + 1) % 100_000
				}
				if err := sf.Document(d, &doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteSegment(b *testing.B) {
	m := benchModel(200_000)
	c := New(Options{})
	dir := store.NewRAMDirectory()
	i := 0
	for b.Loop() {
		info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", i), MaxDoc: m.MaxDoc()}
		if err := c.WriteSegment(context.Background(), dir, info, m, store.IOContext{}); err != nil {
			b.Fatal(err)
		}
		for _, f := range info.Files {
			dir.DeleteFile(f)
		}
		i++
	}
	b.ReportMetric(float64(m.MaxDoc())*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkStoredCompression measures the stored-fields compressors on
// corpus _source blocks: speed (MB/s of raw input) and ratio.
func BenchmarkStoredCompression(b *testing.B) {
	docs := analysistest.Corpus(b, 2000)
	for _, blockSize := range []int{16 << 10, 60 << 10} {
		var blocks [][]byte
		var cur []byte
		var total int
		for _, d := range docs {
			cur = append(cur, d.JSON...)
			if len(cur) >= blockSize {
				blocks = append(blocks, cur)
				total += len(cur)
				cur = nil
			}
		}
		for _, comp := range []Compression{CompressionZstd, CompressionS2} {
			name := map[Compression]string{CompressionZstd: "zstd-fastest", CompressionS2: "s2"}[comp]
			var compressed [][]byte
			var out int
			for _, blk := range blocks {
				c, _ := compress(comp, nil, blk)
				compressed = append(compressed, c)
				out += len(c)
			}
			b.Run(fmt.Sprintf("%s/block%dk/compress", name, blockSize>>10), func(b *testing.B) {
				b.SetBytes(int64(total))
				var dst []byte
				for b.Loop() {
					for _, blk := range blocks {
						dst, _ = compress(comp, dst[:0], blk)
					}
				}
				b.ReportMetric(float64(total)/float64(out), "ratio")
			})
			b.Run(fmt.Sprintf("%s/block%dk/decompress", name, blockSize>>10), func(b *testing.B) {
				b.SetBytes(int64(total))
				var dst []byte
				for b.Loop() {
					for i, c := range compressed {
						var err error
						if dst, err = decompress(comp, dst, c, len(blocks[i])); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(total)/float64(out), "ratio")
			})
		}
	}
}
