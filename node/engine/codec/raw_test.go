package codec_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// hiddenRaw wraps a source so its TermsEnums do not offer their raw
// position streams: the codec then decodes and re-encodes every position.
type hiddenRaw struct{ index.LeafReader }

func (h hiddenRaw) Terms(field string) index.Terms {
	t := h.LeafReader.Terms(field)
	if t == nil {
		return nil
	}
	return hiddenTerms{t}
}

type hiddenTerms struct{ index.Terms }

func (t hiddenTerms) Iterator() index.TermsEnum { return struct{ index.TermsEnum }{t.Terms.Iterator()} }

// TestRawPositionsSameSegment: flushing a DWPT by copying its position
// streams whole gives byte-identical files to decoding them, for postings
// around the block size, multi-byte position deltas and large freqs.
func TestRawPositionsSameSegment(t *testing.T) {
	r := codectest.Rand(t)
	cases := []struct {
		name              string
		docs, vocab, toks int
		posGap            int32
	}{
		{"one-doc", 1, 5, 20, 1},
		{"blocks", 700, 40, 60, 1},           // most terms span several 128-doc blocks
		{"wide-positions", 300, 400, 90, 97}, // 2- and 3-byte deltas
		{"high-freq", 260, 3, 400, 1},        // freqs in the hundreds
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := dwpt.New(dwpt.NewAllocator(0))
			defer seg.Release()
			var doc document.Document
			for i := range tc.docs {
				doc.Reset()
				doc.ID = fmt.Appendf(doc.ID, "d%d", i)
				doc.Source = fmt.Appendf(doc.Source, `{"n":%d}`, i)
				f := document.Field{Name: "body", Type: document.Text}
				pos := int32(0)
				for range 1 + r.IntN(tc.toks) {
					f.Tokens = append(f.Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", r.IntN(tc.vocab)), Position: pos})
					pos += 1 + r.Int32N(tc.posGap)
				}
				f.Length = int32(len(f.Tokens))
				doc.Fields = append(doc.Fields, f)
				if _, err := seg.AddDocument(&doc); err != nil {
					t.Fatal(err)
				}
			}
			c := codec.New(codec.Options{})
			var files [2]map[string][]byte
			for i, src := range []index.LeafReader{seg, hiddenRaw{seg}} {
				dir := store.NewRAMDirectory()
				info := &index.SegmentInfo{Name: "_0", MaxDoc: seg.MaxDoc()}
				if err := c.WriteSegment(context.Background(), dir, info, src, store.IOContext{Kind: store.IOFlush}); err != nil {
					t.Fatal(err)
				}
				files[i] = map[string][]byte{}
				for _, name := range info.Files {
					in, err := dir.OpenInput(name)
					if err != nil {
						t.Fatal(err)
					}
					files[i][name] = bytes.Clone(in.Bytes())
					in.Close()
				}
				if i == 0 {
					sr, err := c.OpenSegment(dir, info)
					if err != nil {
						t.Fatal(err)
					}
					codectest.Check(t, r, seg, sr)
					sr.Close()
				}
			}
			if len(files[0]) != len(files[1]) {
				t.Fatalf("raw copy wrote %d files, decoding %d", len(files[0]), len(files[1]))
			}
			for name, b := range files[1] {
				if !bytes.Equal(files[0][name], b) {
					t.Errorf("%s differs: raw copy %d bytes, decoding %d", name, len(files[0][name]), len(b))
				}
			}
		})
	}
}
