package codec

import (
	"bytes"
	"math"

	"github.com/blevesearch/vellum"
	"github.com/sluice-search/sluice/node/engine/codec/packed"
	"github.com/sluice-search/sluice/node/engine/index"
)

// termState is one term's decoded metadata entry.
type termState struct {
	docFreq  int
	ttf      int64
	docStart int // offset in .doc body (docFreq > 1)
	posStart int // offset in .pos body (positions)
	single   int // the doc of a singleton (docFreq == 1)
	skip     int // offset of skip entries in .doc body (more than one block)
	maxFreq  int // impacts of a one-block term
	minNorm  uint8
	// impacts is where the competitive impacts start (format version 3):
	// in the field's term metadata for a one-block term (-1 when the
	// field has neither freqs nor norms), in .doc after the skip entries
	// for more blocks.
	impacts int
}

func (ts *termState) blocks() int { return (ts.docFreq + packed.BlockSize - 1) / packed.BlockSize }

// decodeTermState reads the metadata entry at off. The term dictionary is
// checksummed at open, so a failure here means a writer bug or a checksum
// collision; it is still reported, never a panic.
func (f *fieldReader) decodeTermState(off uint64, ts *termState) error {
	seg := f.seg
	r := reader{b: f.termMeta, file: seg.termsFile}
	if off >= uint64(len(f.termMeta)) {
		r.fail("term metadata offset %d out of range", off)
		return r.err
	}
	r.off = int(off)
	*ts = termState{}
	ts.docFreq = r.uint(seg.maxDoc, "doc freq")
	ts.ttf = int64(ts.docFreq)
	if f.hasFreqs {
		ts.ttf += int64(r.uint(math.MaxInt64-seg.maxDoc, "total term freq"))
	}
	if ts.docFreq == 0 {
		r.fail("term with no docs")
	}
	if ts.docFreq == 1 {
		ts.single = r.uint(seg.maxDoc-1, "doc")
		if f.hasPos {
			ts.posStart = r.uint(len(seg.pos), "positions offset")
		}
		ts.maxFreq = int(min(ts.ttf, math.MaxInt32))
		if f.info.HasNorms {
			ts.minNorm = r.byte1()
		}
		return r.err
	}
	ts.docStart = r.uint(len(seg.doc), "postings offset")
	if f.hasPos {
		ts.posStart = r.uint(len(seg.pos), "positions offset")
	}
	switch {
	case ts.blocks() > 1:
		ts.skip = r.uint(len(seg.doc), "skip offset")
		if r.err == nil && len(seg.doc)-ts.skip < ts.blocks()*seg.skipSize {
			r.fail("skip entries past end of postings")
		}
		ts.impacts = ts.skip + ts.blocks()*seg.skipSize
	case seg.impacts:
		ts.maxFreq, ts.impacts = 1, -1
		if f.hasFreqs || f.info.HasNorms {
			f.decodeOneBlockImpacts(&r, ts)
		}
	default:
		ts.maxFreq = 1
		if f.hasFreqs {
			ts.maxFreq = r.uint(math.MaxInt32, "max freq")
		}
		if f.info.HasNorms {
			ts.minNorm = r.byte1()
		}
	}
	return r.err
}

// decodeOneBlockImpacts reads a one-block term's competitive impacts from
// its metadata entry (validating them) and derives maxFreq and minNorm.
func (f *fieldReader) decodeOneBlockImpacts(r *reader, ts *termState) {
	var buf [maxBlockImpacts]index.Impact
	imps, n, ok := decodeImpacts(r.b, r.off, buf[:0])
	if !ok || (!f.hasFreqs && imps[len(imps)-1].Freq != 1) || (!f.info.HasNorms && imps[0].Norm != 0) {
		r.fail("bad impacts")
		return
	}
	ts.impacts = r.off
	r.off += n
	ts.maxFreq, ts.minNorm = imps[len(imps)-1].Freq, imps[0].Norm
}

// termsEnum walks the FST. SeekExact uses a vellum.Reader (a single
// prealloc'd state, no allocation); Next and SeekCeil use an iterator,
// positioned lazily after a SeekExact.
type termsEnum struct {
	f     *fieldReader
	rdr   *vellum.Reader
	it    vellum.FSTIterator
	state enumState
	term  []byte
	ts    termState
	err   error
}

type enumState uint8

const (
	enumUnpositioned enumState = iota
	enumOnIterator             // the iterator is on term
	enumOnSeekExact            // term found by SeekExact; iterator elsewhere
	enumEnd
)

// Err reports a corruption found while enumerating (Next/Seek return
// false/SeekEnd when it happens). Not part of index.TermsEnum; callers that
// want it type-assert interface{ Err() error }.
func (e *termsEnum) Err() error { return e.err }

func (e *termsEnum) load(key []byte, off uint64) bool {
	e.term = append(e.term[:0], key...)
	if err := e.f.decodeTermState(off, &e.ts); err != nil {
		e.err = err
		e.state = enumEnd
		return false
	}
	return true
}

func (e *termsEnum) fromIterator(err error) bool {
	if err != nil {
		e.state = enumEnd
		return false
	}
	key, off := e.it.Current()
	e.state = enumOnIterator
	return e.load(key, off)
}

func (e *termsEnum) Next() bool {
	switch e.state {
	case enumUnpositioned:
		return e.fromIterator(e.it.Reset(e.f.fst, nil, nil, nil))
	case enumOnIterator:
		return e.fromIterator(e.it.Next())
	case enumOnSeekExact:
		if err := e.it.Reset(e.f.fst, e.term, nil, nil); err != nil {
			e.state = enumEnd
			return false
		}
		return e.fromIterator(e.it.Next())
	}
	return false
}

func (e *termsEnum) SeekExact(term []byte) bool {
	if e.rdr == nil {
		e.rdr, _ = e.f.fst.Reader() // never fails
	}
	off, ok, err := e.rdr.Get(term)
	if err != nil || !ok {
		e.state = enumUnpositioned
		return false
	}
	e.state = enumOnSeekExact
	return e.load(term, off)
}

func (e *termsEnum) SeekCeil(target []byte) index.SeekStatus {
	if !e.fromIterator(e.it.Reset(e.f.fst, target, nil, nil)) {
		return index.SeekEnd
	}
	if bytes.Equal(e.term, target) {
		return index.SeekFound
	}
	return index.SeekNotFound
}

func (e *termsEnum) Term() []byte         { return e.term }
func (e *termsEnum) DocFreq() int         { return e.ts.docFreq }
func (e *termsEnum) TotalTermFreq() int64 { return e.ts.ttf }

func (e *termsEnum) Postings(reuse index.PostingsEnum, flags index.PostingsFlags) index.PostingsEnum {
	pe, ok := reuse.(*postingsEnum)
	if !ok || pe == nil || pe.f != e.f {
		pe = &postingsEnum{f: e.f}
	}
	pe.reset(&e.ts, flags)
	return pe
}

func (e *termsEnum) Impacts(flags index.PostingsFlags) index.ImpactsEnum {
	return e.ReuseImpacts(nil, flags)
}

// ReuseImpacts implements index.ImpactsReuser.
func (e *termsEnum) ReuseImpacts(reuse index.ImpactsEnum, flags index.PostingsFlags) index.ImpactsEnum {
	if !e.f.seg.impacts {
		b, ok := reuse.(*blockMaxOnly)
		if !ok || b == nil || b.pe.f != e.f {
			pe := &postingsEnum{f: e.f}
			b = &blockMaxOnly{ImpactsEnum: pe, pe: pe}
		}
		b.pe.reset(&e.ts, flags)
		return b
	}
	pe, ok := reuse.(*postingsEnum)
	if !ok || pe == nil || pe.f != e.f {
		pe = &postingsEnum{f: e.f}
	}
	pe.reset(&e.ts, flags)
	return pe
}

// blockMaxOnly hides BlockImpacts for segments written before format
// version 3, which store only (max freq, min norm) per block: scorers then
// use BlockMax, and no caller mistakes that pair for a competitive set.
type blockMaxOnly struct {
	index.ImpactsEnum // pe: only the interface's methods are promoted
	pe                *postingsEnum
}

// Err reports corruption met while decoding, as postingsEnum.Err.
func (b *blockMaxOnly) Err() error { return b.pe.Err() }
