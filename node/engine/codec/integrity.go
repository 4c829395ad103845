package codec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluice-search/sluice/node/engine/codec/packed"
	"github.com/sluice-search/sluice/node/engine/index"
)

// CheckIntegrity verifies the open segment end to end: the full checksum of
// every file, then a decode of every structure with its invariants (each
// term's postings against its statistics and skip entries, norms, doc
// values, every stored document). It reads everything, so it costs a full
// scan; OpenSegment does the cheap part.
func (sr *segmentReader) CheckIntegrity() error {
	if err := sr.VerifyChecksums(); err != nil {
		return err
	}
	for n := 0; n < sr.fis.Len(); n++ {
		f := sr.fields[sr.fis.ByNumber(n).Name]
		if f.hasTerms {
			if err := f.checkPostings(); err != nil {
				return fmt.Errorf("field %q: %w", f.info.Name, err)
			}
		}
		if err := f.checkValues(); err != nil {
			return fmt.Errorf("field %q: %w", f.info.Name, err)
		}
	}
	sf := &storedReader{m: &sr.stored, block: -1}
	var doc index.StoredDoc
	for d := 0; d < sr.maxDoc; d++ {
		if err := sf.Document(d, &doc); err != nil {
			return err
		}
	}
	return nil
}

// VerifyChecksums checks the full CRC32 of every file of the open segment,
// decoding nothing (the cheap half of CheckIntegrity, a linear read): what
// a segment linked or copied in from another index needs before it is
// served.
func (sr *segmentReader) VerifyChecksums() error {
	for ext, data := range sr.files {
		if err := verifyChecksum(data, fileName(sr.info.Name, ext)); err != nil {
			return err
		}
	}
	return nil
}

func (f *fieldReader) checkPostings() error {
	te := &termsEnum{f: f}
	var pe *postingsEnum
	docs := index.NewFixedBitSet(f.seg.maxDoc)
	var numTerms, sumDF, sumTTF int64
	var prev []byte
	var acc impactAccumulator
	var stored []index.Impact
	for te.Next() {
		term := te.Term()
		if numTerms > 0 && string(term) <= string(prev) {
			return corruptf(fileName(f.seg.info.Name, extTerms), 0, "terms out of order at %q", term)
		}
		prev = append(prev[:0], term...)
		numTerms++
		pe, _ = te.Postings(pe, index.PostingsPositions).(*postingsEnum)
		var n int
		var ttf int64
		last := -1
		for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
			if d <= last {
				return pe.failErr("term %q: docs out of order", term)
			}
			var norm uint8
			if f.norms != nil {
				norm = f.norms.Norm(d)
			}
			acc.add(uint32(pe.Freq()), norm)
			if n%packed.BlockSize == packed.BlockSize-1 || n == pe.ts.docFreq-1 {
				b := n / packed.BlockSize
				if pe.nBlocks > 1 && pe.skipLastDoc(b) != d {
					return pe.failErr("term %q: skip entry %d says last doc %d, block has %d", term, b, pe.skipLastDoc(b), d)
				}
				// The stored impacts must be the block's competitive
				// set, and BlockMax its max freq and min norm.
				want := acc.finish()
				stored = pe.blockImpacts(b, stored[:0])
				maxFreq, minNorm := pe.blockMax(b)
				if pe.err == nil && f.seg.impacts && !slices.Equal(stored, want) ||
					maxFreq != want[len(want)-1].Freq || minNorm != want[0].Norm {
					return pe.failErr("term %q block %d: impacts %v (max freq %d, min norm %d), docs give %v", term, b, stored, maxFreq, minNorm, want)
				}
			}
			last = d
			docs.Set(d)
			n++
			ttf += int64(pe.Freq())
			if f.hasPos {
				lastPos := 0
				for i := 0; i < pe.Freq(); i++ {
					p := pe.NextPosition()
					if p < lastPos || pe.err != nil {
						return corruptf(fileName(f.seg.info.Name, extPos), pe.posFP, "term %q doc %d: bad positions", term, d)
					}
					lastPos = p
				}
			}
		}
		if pe.err != nil {
			return pe.err
		}
		if n != te.DocFreq() || (f.hasFreqs && ttf != te.TotalTermFreq()) {
			return pe.failErr("term %q: %d docs / %d freq, metadata says %d / %d", term, n, ttf, te.DocFreq(), te.TotalTermFreq())
		}
		sumDF += int64(n)
		sumTTF += ttf
	}
	if te.err != nil {
		return te.err
	}
	if numTerms != f.numTerms || sumDF != f.sumDocFreq || (f.hasFreqs && sumTTF != f.sumTTF) || docs.Cardinality() != f.docCount {
		return corruptf(fileName(f.seg.info.Name, extMeta), 0, "field statistics disagree with postings")
	}
	return nil
}

func (f *fieldReader) checkValues() error {
	dvd := fileName(f.seg.info.Name, extDV)
	if sn, ok := f.norms.(*sparseNorms); ok {
		prev := -1
		for i := 0; i < len(sn.norms); i++ {
			d := int(binary.LittleEndian.Uint32(sn.docs[4*i:]))
			if d <= prev || d >= f.seg.maxDoc {
				return corruptf(fileName(f.seg.info.Name, extNorms), 0, "sparse norms docs out of order")
			}
			prev = d
		}
	}
	if nv, ok := f.numeric.(*numericValues); ok {
		n := f.seg.maxDoc
		if nv.layout == dvSparse {
			n = nv.count
			prev := -1
			for i := 0; i < n; i++ {
				d := int(binary.LittleEndian.Uint32(nv.docs[4*i:]))
				if d <= prev || d >= f.seg.maxDoc {
					return corruptf(dvd, 0, "doc values docs out of order")
				}
				prev = d
			}
		}
		if nv.table != nil {
			for i := 0; i < n; i++ {
				if nv.vals.get(i) >= uint64(len(nv.table)/8) {
					return corruptf(dvd, 0, "doc values table index out of range")
				}
			}
		}
	}
	if sv, ok := f.sorted.(*sortedValues); ok {
		for d := 0; d < f.seg.maxDoc; d++ {
			if int(sv.ords.get(d)) > sv.n {
				return corruptf(dvd, 0, "doc %d: ord out of range", d)
			}
		}
	}
	return nil
}
