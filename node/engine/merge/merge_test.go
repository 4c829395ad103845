package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

func randomLive(r *rand.Rand, n int) *index.FixedBitSet {
	switch r.IntN(5) {
	case 0:
		return nil // no deletes
	case 1:
		return index.NewFixedBitSet(n) // everything deleted
	}
	live := index.NewFixedBitSetAllSet(n)
	rate := r.IntN(90)
	for d := 0; d < n; d++ {
		if r.IntN(100) < rate {
			live.Clear(d)
		}
	}
	return live
}

// TestMerge writes random segments with the codec, merges them with random
// deletes through the view, and checks both the view and the merged segment
// the codec writes from it against the oracle (codectest.Merge). The doc
// map is checked doc by doc.
func TestMerge(t *testing.T) {
	r := codectest.Rand(t)
	rounds := 4
	if codectest.LongMode() {
		rounds = 30
	}
	c := codec.New(codec.Options{})
	for round := 0; round < rounds; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			dir := store.NewRAMDirectory()
			n := 1 + r.IntN(4)
			var models []*codectest.Model
			var lives []*index.FixedBitSet
			var inputs []Input
			for i := 0; i < n; i++ {
				docs := r.IntN(700)
				m := codectest.Random(r, codectest.RandomOptions{Docs: docs, SpecialDocFreqs: []int{1, 127, 128, 129, 300}, RandomTerms: 40, MaxFreq: 30, SourceSize: 60})
				if r.IntN(3) == 0 {
					dropField(m, 1+r.IntN(len(m.Fields)-1)) // fields present in some inputs only
				}
				info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", i), MaxDoc: docs}
				info.ID[0] = byte(i)
				if err := c.WriteSegment(context.Background(), dir, info, m, store.IOContext{}); err != nil {
					t.Fatal(err)
				}
				sr, err := c.OpenSegment(dir, info)
				if err != nil {
					t.Fatal(err)
				}
				defer sr.Close()
				live := randomLive(r, docs)
				models, lives = append(models, m), append(lives, live)
				inputs = append(inputs, Input{Reader: sr, Live: live})
			}
			want := codectest.Merge(models, lives)
			view, err := NewReader(context.Background(), inputs)
			if err != nil {
				t.Fatal(err)
			}
			next := 0
			for i, in := range inputs {
				for d := 0; d < in.Reader.MaxDoc(); d++ {
					got := view.DocMap(i, d)
					if in.Live != nil && !in.Live.Get(d) {
						if got != -1 {
							t.Fatalf("deleted doc %d of input %d maps to %d", d, i, got)
						}
						continue
					}
					if got != next {
						t.Fatalf("doc %d of input %d maps to %d, want %d", d, i, got, next)
					}
					next++
				}
			}
			codectest.Check(t, r, want, view)
			info := &index.SegmentInfo{Name: "_merged", MaxDoc: view.MaxDoc()}
			if err := c.WriteSegment(context.Background(), dir, info, view, store.IOContext{Kind: store.IOMerge}); err != nil {
				t.Fatal(err)
			}
			merged, err := c.OpenSegment(dir, info)
			if err != nil {
				t.Fatal(err)
			}
			defer merged.Close()
			codectest.Check(t, r, want, merged)
		})
	}
}

func TestFieldTypeConflict(t *testing.T) {
	r := codectest.Rand(t)
	a := codectest.Random(r, codectest.RandomOptions{Docs: 3, RandomTerms: 2, MaxFreq: 2})
	b := codectest.Random(r, codectest.RandomOptions{Docs: 3, RandomTerms: 2, MaxFreq: 2})
	b.Fields[1].Info.IndexOptions = index.IndexDocsFreqsPositions // "keyword" with positions
	b.Finish()
	if _, err := NewReader(context.Background(), []Input{{Reader: a}, {Reader: b}}); err == nil {
		t.Fatal("merging a field with different index options succeeded")
	}
}

// dropField removes field k from a model, renumbering the rest.
func dropField(m *codectest.Model, k int) {
	m.Fields = append(m.Fields[:k], m.Fields[k+1:]...)
	for i, f := range m.Fields {
		f.Info.Number = i
	}
	m.Finish()
}
