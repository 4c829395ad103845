package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// BenchmarkMergeVerify: what checksumming a merge's inputs first
// (verifyMergeInputs) adds to the merge. Five random segments of 20k docs
// with ~10% deletes, in files (FSDirectory, page cache warm, as a merge
// finds segments the searches read), merged through DefaultMerger and the
// codec, without and with VerifyFiles over the inputs' files before.
// Reports merged docs/s and, with verification, the share of the time it
// took.
func BenchmarkMergeVerify(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	c := codec.New(codec.Options{})
	dir, err := store.NewFSDirectory(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var inputs []MergeInput
	var files []string
	var inputBytes int64
	for i := range 5 {
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
		inputs = append(inputs, MergeInput{Reader: sr, Live: live})
		files = append(files, info.Files...)
		for _, f := range info.Files {
			n, _ := dir.FileLength(f)
			inputBytes += n
		}
	}
	for _, verify := range []bool{false, true} {
		b.Run(fmt.Sprintf("verify=%v", verify), func(b *testing.B) {
			ctx := context.Background()
			docs := 0
			var verifying time.Duration
			for i := 0; b.Loop(); i++ {
				if verify {
					start := time.Now()
					checks, err := VerifyFiles(ctx, dir, c, files, VerifyOptions{})
					if err != nil || len(checks) != len(files) || checks[0].Status != FileOK {
						b.Fatal(err)
					}
					verifying += time.Since(start)
				}
				view, _, err := DefaultMerger(ctx, inputs)
				if err != nil {
					b.Fatal(err)
				}
				info := &index.SegmentInfo{Name: fmt.Sprintf("_m%d", i), MaxDoc: view.MaxDoc()}
				if err := c.WriteSegment(ctx, dir, info, view, store.IOContext{Kind: store.IOMerge}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, f := range info.Files {
					dir.DeleteFile(f)
				}
				b.StartTimer()
				docs += view.MaxDoc()
			}
			b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(inputBytes)/(1<<20), "input-MiB")
			if verify {
				b.ReportMetric(100*verifying.Seconds()/b.Elapsed().Seconds(), "%verify")
				b.ReportMetric(float64(inputBytes)*float64(b.N)/(1<<20)/verifying.Seconds(), "verify-MiB/s")
			}
		})
	}
}
