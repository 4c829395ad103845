package codec

import (
	"encoding/binary"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
)

func FuzzUvarint(f *testing.F) {
	f.Add([]byte{0x80, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wn := binary.Uvarint(b)
		got, gn := uvarintAt(b, 0)
		if wn > 0 && (got != want || gn != wn) {
			t.Fatalf("uvarintAt = %d,%d; want %d,%d", got, gn, want, wn)
		}
		if wn <= 0 && gn > 0 {
			t.Fatalf("uvarintAt accepted a bad varint")
		}
		r := reader{b: b, file: "fuzz"}
		v := r.uvarint()
		if (r.err == nil) != (wn > 0) || (wn > 0 && v != want) {
			t.Fatalf("reader.uvarint = %d, %v", v, r.err)
		}
	})
}

// fuzzField builds a field reader over arbitrary term metadata and postings
// bytes, for the decoders that read files not checksummed at open.
// v2 selects the layout of format version 2 (no impacts).
func fuzzField(meta, doc, pos []byte, opts index.IndexOptions, maxDoc int, v2 bool) *fieldReader {
	seg := &segmentReader{info: &index.SegmentInfo{Name: "_f"}, maxDoc: maxDoc, doc: doc, pos: pos, termsFile: "_f.tim",
		impacts: !v2, skipSize: skipEntrySize}
	if v2 {
		seg.skipSize = skipEntrySizeV2
	}
	fi := &index.FieldInfo{Name: "f", IndexOptions: opts, HasNorms: opts.HasPositions()}
	return &fieldReader{seg: seg, info: fi, termMeta: meta, hasFreqs: opts.HasFreqs(), hasPos: opts.HasPositions(), hasTerms: true}
}

// FuzzPostings decodes arbitrary term metadata and postings bytes, in the
// layouts of format versions 2 and 3: no panics, docs strictly increasing
// below maxDoc, impacts strictly increasing.
func FuzzPostings(f *testing.F) {
	f.Add([]byte{3, 0, 0}, []byte{1, 2, 3, 4, 5, 6}, []byte{1, 1, 1}, uint8(3), uint16(100), uint16(7), false)
	f.Add([]byte{200, 1, 0, 0, 0}, make([]byte, 600), []byte{}, uint8(1), uint16(1000), uint16(300), true)
	f.Add([]byte{5, 4, 0, 0, 2, 1, 3, 0}, []byte{1, 2, 3, 4, 5, 6}, []byte{1, 1, 1}, uint8(2), uint16(100), uint16(7), false)
	f.Fuzz(func(t *testing.T, meta, doc, pos []byte, opts uint8, maxDoc uint16, target uint16, v2 bool) {
		fr := fuzzField(meta, doc, pos, index.IndexOptions(1+opts%3), int(maxDoc)+1, v2)
		var ts termState
		if fr.decodeTermState(0, &ts) != nil {
			return
		}
		for _, flags := range []index.PostingsFlags{index.PostingsDocs, index.PostingsPositions} {
			pe := &postingsEnum{f: fr}
			pe.reset(&ts, flags)
			last := -1
			for i := 0; i < 10000; i++ {
				var d int
				if i == 2 {
					d = pe.Advance(last + 1 + int(target))
				} else {
					d = pe.NextDoc()
				}
				if d == index.NoMoreDocs {
					break
				}
				if d <= last || d >= fr.seg.maxDoc {
					t.Fatalf("doc %d after %d (maxDoc %d)", d, last, fr.seg.maxDoc)
				}
				last = d
				for j := 0; j < min(pe.Freq(), 20); j++ {
					pe.NextPosition()
				}
			}
			ie := &postingsEnum{f: fr}
			ie.reset(&ts, flags)
			for up, i := ie.AdvanceShallow(int(target)), 0; i < 1000; up, i = ie.AdvanceShallow(up+1), i+1 {
				ie.BlockMax()
				imps := ie.BlockImpacts(nil)
				for j := 1; j < len(imps); j++ {
					if imps[j].Freq <= imps[j-1].Freq || imps[j].Norm <= imps[j-1].Norm {
						t.Fatalf("impacts %v not increasing", imps)
					}
				}
				if up == index.NoMoreDocs {
					break
				}
			}
		}
	})
}

// FuzzStoredBlock decodes arbitrary bytes as a stored-fields block.
func FuzzStoredBlock(f *testing.F) {
	f.Add([]byte{2, 5, 5, 'h', 'e', 'l', 'l', 'o'}, uint8(1), uint8(3), false)
	raw := appendStoredDoc(nil, &index.StoredDoc{ID: []byte("a"), Routing: []byte("r"), Source: []byte("{}")})
	block, _ := compress(CompressionS2, nil, raw)
	block = append(appendUvarint(appendUvarint(appendUvarint(nil, 1), uint64(len(raw))), uint64(len(block))), block...)
	f.Add(block, uint8(1), uint8(0), true)
	f.Fuzz(func(t *testing.T, body []byte, comp uint8, maxDoc uint8, routing bool) {
		md := int(maxDoc%8) + 1
		idx := appendU32(nil, 0)
		idx = appendU64(idx, 0)
		m := &storedMeta{file: "_f.fdt", comp: Compression(1 + comp%2), body: body, index: idx, numBlocks: 1, maxDoc: md, routing: routing}
		s := &storedReader{m: m, block: -1}
		var doc index.StoredDoc
		for d := 0; d < md; d++ {
			s.Document(d, &doc)
		}
	})
}
