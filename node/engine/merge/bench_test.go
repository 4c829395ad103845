package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// BenchmarkMerge merges 5 random segments with ~10% deletes through the
// view into a new segment (RAM directory), reporting merged docs/s and
// postings/s (the random model is posting-heavy: ~400 postings per doc).
func BenchmarkMerge(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	c := codec.New(codec.Options{})
	dir := store.NewRAMDirectory()
	var inputs []Input
	for i := 0; i < 5; i++ {
		m := codectest.Random(r, codectest.RandomOptions{Docs: 20000, SpecialDocFreqs: []int{1000, 10000}, RandomTerms: 2000, MaxFreq: 20, SourceSize: 300})
		info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", i), MaxDoc: m.MaxDoc()}
		if err := c.WriteSegment(context.Background(), dir, info, m, store.IOContext{}); err != nil {
			b.Fatal(err)
		}
		sr, err := c.OpenSegment(dir, info)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sr.Close() })
		live := index.NewFixedBitSetAllSet(m.MaxDoc())
		for d := 0; d < m.MaxDoc(); d += 10 {
			live.Clear(d)
		}
		inputs = append(inputs, Input{Reader: sr, Live: live})
	}
	docs, postings := 0, int64(0)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu int64
	for i := 0; b.Loop(); i++ {
		start := codectest.ThreadCPU()
		view, err := NewReader(context.Background(), inputs)
		if err != nil {
			b.Fatal(err)
		}
		info := &index.SegmentInfo{Name: fmt.Sprintf("_m%d", i), MaxDoc: view.MaxDoc()}
		if err := c.WriteSegment(context.Background(), dir, info, view, store.IOContext{Kind: store.IOMerge}); err != nil {
			b.Fatal(err)
		}
		cpu += codectest.ThreadCPU() - start
		b.StopTimer()
		merged, err := c.OpenSegment(dir, info)
		if err != nil {
			b.Fatal(err)
		}
		fis := merged.FieldInfos()
		for n := 0; n < fis.Len(); n++ {
			if t := merged.Terms(fis.ByNumber(n).Name); t != nil {
				postings += t.SumDocFreq()
			}
		}
		merged.Close()
		for _, f := range info.Files {
			dir.DeleteFile(f)
		}
		b.StartTimer()
		docs += view.MaxDoc()
	}
	b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(postings)/b.Elapsed().Seconds(), "postings/s")
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(postings), "cpu-ns/posting")
	}
}
