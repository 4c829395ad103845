package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"

	"github.com/blevesearch/vellum"
	"github.com/sluice-search/sluice/node/engine/codec/packed"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// skipEntrySize is one skip entry per block of a term with more than one
// block: lastDoc u32, maxFreq u32, docOff u64 (block start relative to the
// term's doc start), posOff u64 (relative to the term's pos start), minNorm
// u8, then from format version 3 impOff u32: where the block's competitive
// impacts start in the term's impacts region, which follows the entries.
const (
	skipEntrySize   = 29
	skipEntrySizeV2 = 25
)

type segmentWriter struct {
	opts  *Options
	ctx   context.Context
	dir   store.Directory
	info  *index.SegmentInfo
	src   index.LeafReader
	ioctx store.IOContext

	files                              []string
	outs                               []*output
	meta, tim, doc, pos, nvd, dvd, fdt *output

	*writerScratch
	docsWithTerm *index.FixedBitSet
	block        [packed.BlockSize]uint32
	impacts      postingsImpacts
}

// postingsImpacts is the writer's per-term impacts state: the accumulator
// and the term's impacts region, written after its skip entries.
type postingsImpacts struct {
	acc    impactAccumulator
	region []byte
}

// writerScratch is what a segmentWriter reuses per term and per field. It is
// pooled across segments too: a large flush grows the term metadata and the
// FST buffer to tens of MB, and the FST builder keeps a node registry, which
// would otherwise be garbage after every flush (and, while no GC runs, fresh
// memory for the next one).
type writerScratch struct {
	docs, freqs []uint32
	blockPosFP  []int
	termMeta    []byte
	posRaw      []byte // one term's raw positions (copyRawPositions)
	fstBuf      bytes.Buffer
	fst         *vellum.Builder
	scratch     []byte
}

var scratchPool = sync.Pool{New: func() any { return new(writerScratch) }}

func (w *segmentWriter) create(ext string) (*output, error) {
	name := fileName(w.info.Name, ext)
	o, err := newOutput(w.dir, name, ext, w.info.ID, w.ioctx)
	if err != nil {
		return nil, err
	}
	w.files = append(w.files, name)
	w.outs = append(w.outs, o)
	return o, nil
}

// cleanup removes every file created by a failed write.
func (w *segmentWriter) cleanup() {
	for _, o := range w.outs {
		o.abort()
	}
	for _, f := range w.files {
		w.dir.DeleteFile(f)
	}
}

func (w *segmentWriter) write() error {
	var err error
	for _, p := range []struct {
		o   **output
		ext string
	}{{&w.meta, extMeta}, {&w.tim, extTerms}, {&w.doc, extDocs}, {&w.pos, extPos}, {&w.nvd, extNorms}, {&w.dvd, extDV}, {&w.fdt, extStored}} {
		if *p.o, err = w.create(p.ext); err != nil {
			return err
		}
	}
	fis := w.src.FieldInfos()
	maxDoc := w.src.MaxDoc()
	w.meta.uvarint(uint64(maxDoc))
	w.meta.uvarint(uint64(fis.Len()))
	for n := 0; n < fis.Len(); n++ {
		fi := fis.ByNumber(n)
		w.meta.uvarint(uint64(len(fi.Name)))
		w.meta.buf = append(w.meta.buf, fi.Name...)
		w.meta.uvarint(uint64(fi.Number))
		w.meta.byte1(byte(fi.Type))
		w.meta.byte1(byte(fi.IndexOptions))
		w.meta.byte1(boolByte(fi.HasNorms))
		w.meta.byte1(byte(fi.DocValues))
	}
	w.docsWithTerm = index.NewFixedBitSet(maxDoc)
	for n := 0; n < fis.Len(); n++ {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		fi := fis.ByNumber(n)
		if fi.IndexOptions != index.IndexNone {
			if err := w.writeTerms(fi); err != nil {
				return fmt.Errorf("field %q: %w", fi.Name, err)
			}
		}
		if fi.HasNorms {
			w.writeNorms(fi)
		}
		switch fi.DocValues {
		case index.DocValuesNumeric:
			w.writeNumeric(fi)
		case index.DocValuesSorted:
			w.writeSorted(fi)
		}
		w.meta.maybeFlush()
	}
	if err := w.writeStored(); err != nil {
		return err
	}
	for _, o := range w.outs {
		if err := o.finish(); err != nil {
			return err
		}
	}
	w.outs = nil
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (w *segmentWriter) writeTerms(fi *index.FieldInfo) error {
	terms := w.src.Terms(fi.Name)
	if terms == nil {
		w.meta.byte1(0)
		return nil
	}
	opts := fi.IndexOptions
	hasFreqs, hasPos := opts.HasFreqs(), opts.HasPositions()
	flags := index.PostingsDocs
	if hasPos {
		flags = index.PostingsPositions
	} else if hasFreqs {
		flags = index.PostingsFreqs
	}
	var norms index.NormsReader
	if fi.HasNorms {
		// The term metadata layout follows HasNorms, so a source without
		// norms for the field writes zeros (what its readers report).
		if norms = w.src.Norms(fi.Name); norms == nil {
			norms = constNorms(0)
		}
	}
	w.fstBuf.Reset()
	if w.fst == nil {
		b, err := vellum.New(&w.fstBuf, nil)
		if err != nil {
			return err
		}
		w.fst = b
	} else if err := w.fst.Reset(&w.fstBuf); err != nil {
		return err
	}
	w.termMeta = w.termMeta[:0]
	dw := w.docsWithTerm
	clear(dw.Words())
	var numTerms, sumDocFreq, sumTTF int64
	te := terms.Iterator()
	// A source whose position streams are already encoded as ours (a DWPT)
	// hands them over whole: only docs and freqs are decoded.
	raw, isRaw := te.(rawPositionsEnum)
	if !hasPos {
		isRaw = false
	} else if isRaw {
		flags = index.PostingsFreqs
	}
	var pe index.PostingsEnum
	maxDoc := w.src.MaxDoc()
	for te.Next() {
		pe = te.Postings(pe, flags)
		w.docs, w.freqs, w.blockPosFP = w.docs[:0], w.freqs[:0], w.blockPosFP[:0]
		posStart := w.pos.pos()
		prev := -1
		var ttf int64
		for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
			if d <= prev || d >= maxDoc {
				return fmt.Errorf("term %q: doc %d out of order or range", te.Term(), d)
			}
			prev = d
			f := 1
			if hasFreqs {
				if f = pe.Freq(); f < 1 {
					return fmt.Errorf("term %q doc %d: freq %d", te.Term(), d, f)
				}
			}
			if hasPos && !isRaw {
				if len(w.docs)%packed.BlockSize == 0 {
					w.blockPosFP = append(w.blockPosFP, w.pos.pos()-posStart)
				}
				last := 0
				for i := 0; i < f; i++ {
					p := pe.NextPosition()
					if p < last {
						return fmt.Errorf("term %q doc %d: positions out of order", te.Term(), d)
					}
					w.pos.uvarint(uint64(p - last))
					last = p
				}
				w.pos.maybeFlush()
			}
			dw.Set(d)
			w.docs = append(w.docs, uint32(d))
			w.freqs = append(w.freqs, uint32(f))
			ttf += int64(f)
		}
		df := len(w.docs)
		if df == 0 {
			continue // every doc of the term deleted (merges)
		}
		if isRaw {
			if err := w.copyRawPositions(raw, ttf); err != nil {
				return fmt.Errorf("term %q: %w", te.Term(), err)
			}
		}
		if err := w.fst.Insert(te.Term(), uint64(len(w.termMeta))); err != nil {
			return fmt.Errorf("term %q: %w", te.Term(), err)
		}
		w.writePostings(hasFreqs, hasPos, norms, posStart, ttf)
		numTerms++
		sumDocFreq += int64(df)
		sumTTF += ttf
	}
	if err := w.fst.Close(); err != nil {
		return err
	}
	if numTerms == 0 {
		w.meta.byte1(0)
		return nil
	}
	w.meta.byte1(1)
	w.meta.uvarint(uint64(numTerms))
	w.meta.uvarint(uint64(dw.Cardinality()))
	w.meta.uvarint(uint64(sumDocFreq))
	w.meta.uvarint(uint64(sumTTF))
	w.meta.uvarint(uint64(w.tim.pos()))
	w.meta.uvarint(uint64(len(w.termMeta)))
	w.tim.write(w.termMeta)
	w.meta.uvarint(uint64(w.tim.pos()))
	w.meta.uvarint(uint64(w.fstBuf.Len()))
	w.tim.write(w.fstBuf.Bytes())
	return w.tim.err
}

// rawPositionsEnum is a TermsEnum that can append the current term's whole
// position stream in this codec's .pos encoding: per doc in order, its freq
// positions as uvarint deltas from 0.
type rawPositionsEnum interface {
	AppendRawPositions(dst []byte) []byte
}

// copyRawPositions writes the current term's raw positions to .pos and
// records where each block of packed.BlockSize docs starts in them (the
// freqs say how many varints each doc has). The stream must hold exactly ttf
// positions.
func (w *segmentWriter) copyRawPositions(raw rawPositionsEnum, ttf int64) error {
	b := raw.AppendRawPositions(w.posRaw[:0])
	w.posRaw = b
	if n := countVarints(b); int64(n) != ttf || (len(b) > 0 && b[len(b)-1] >= 0x80) {
		return fmt.Errorf("raw positions: %d complete varints in %d bytes, want %d", n, len(b), ttf)
	}
	off, want := 0, 0
	for lo := 0; lo < len(w.freqs); lo += packed.BlockSize {
		for _, f := range w.freqs[max(lo-packed.BlockSize, 0):lo] {
			want += int(f)
		}
		var skipped int
		off, skipped = skipVarints(b, off, want)
		want -= skipped
		w.blockPosFP = append(w.blockPosFP, off)
	}
	w.pos.write(b)
	return nil
}

const varintHighBits = 0x8080808080808080

// countVarints counts the bytes that end a varint (high bit clear).
func countVarints(b []byte) int {
	n, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		n += bits.OnesCount64(^binary.LittleEndian.Uint64(b[i:]) & varintHighBits)
	}
	for ; i < len(b); i++ {
		if b[i] < 0x80 {
			n++
		}
	}
	return n
}

// skipVarints returns the offset just past the first n varints of b from
// off, and how many it skipped (n unless b ends first).
func skipVarints(b []byte, off, n int) (int, int) {
	left := n
	for left > 0 && off < len(b) {
		if off+8 <= len(b) {
			if t := bits.OnesCount64(^binary.LittleEndian.Uint64(b[off:]) & varintHighBits); t < left {
				left -= t
				off += 8
				continue
			}
		}
		if b[off] < 0x80 {
			left--
		}
		off++
	}
	return off, n - left
}

func (w *segmentWriter) appendMeta(v uint64) { w.termMeta = appendUvarint(w.termMeta, v) }

// writePostings writes the buffered docs/freqs of one term: its metadata
// entry, and unless it is a singleton, its blocks and skip entries.
func (w *segmentWriter) writePostings(hasFreqs, hasPos bool, norms index.NormsReader, posStart int, ttf int64) {
	docs, freqs := w.docs, w.freqs
	df := len(docs)
	w.appendMeta(uint64(df))
	if hasFreqs {
		w.appendMeta(uint64(ttf - int64(df)))
	}
	if df == 1 {
		// Singleton ("pulsing"): the doc lives in the term metadata, so an
		// _id lookup is one FST seek and no postings read.
		w.appendMeta(uint64(docs[0]))
		if hasPos {
			w.appendMeta(uint64(posStart))
		}
		if norms != nil {
			w.termMeta = append(w.termMeta, norms.Norm(int(docs[0])))
		}
		return
	}
	docStart := w.doc.pos()
	w.appendMeta(uint64(docStart))
	if hasPos {
		w.appendMeta(uint64(posStart))
	}
	nBlocks := (df + packed.BlockSize - 1) / packed.BlockSize
	// Per block: skip entry (last doc, maxFreq, offsets, minNorm, impacts
	// offset) kept in scratch, competitive impacts in the impacts region;
	// both written after the blocks.
	skip := w.scratch[:0]
	imp := &w.impacts
	imp.region = imp.region[:0]
	prev := -1
	o := w.doc
	for b := 0; b < nBlocks; b++ {
		lo, hi := b*packed.BlockSize, min((b+1)*packed.BlockSize, df)
		blockStart := o.pos() - docStart
		impacts := imp.block(docs[lo:hi], freqs[lo:hi], norms)
		// The competitive set's last freq is the block's max freq, its
		// first norm the block's min norm.
		maxFreq, minNorm := uint32(impacts[len(impacts)-1].Freq), impacts[0].Norm
		if hi-lo == packed.BlockSize {
			blk := &w.block
			for i := range blk {
				d := int(docs[lo+i])
				blk[i] = uint32(d - prev - 1)
				prev = d
			}
			width := packed.MaxWidth(blk)
			o.byte1(byte(width))
			o.buf = packed.Pack(o.buf, blk, width)
			if hasFreqs {
				for i := range blk {
					blk[i] = freqs[lo+i] - 1
				}
				width := packed.MaxWidth(blk)
				o.byte1(byte(width))
				o.buf = packed.Pack(o.buf, blk, width)
			}
		} else {
			for i := lo; i < hi; i++ {
				d := int(docs[i])
				delta := uint64(d - prev - 1)
				prev = d
				if !hasFreqs {
					o.uvarint(delta)
				} else if freqs[i] == 1 {
					o.uvarint(delta<<1 | 1)
				} else {
					o.uvarint(delta << 1)
					o.uvarint(uint64(freqs[i]))
				}
			}
		}
		o.maybeFlush()
		if nBlocks == 1 {
			// One block: its impacts live in the term metadata, so a
			// rare term's bound costs no .doc read.
			if hasFreqs || norms != nil {
				w.termMeta = appendImpacts(w.termMeta, impacts)
			}
			return
		}
		var posOff int
		if hasPos {
			posOff = w.blockPosFP[b]
		}
		skip = appendU32(skip, docs[hi-1])
		skip = appendU32(skip, maxFreq)
		skip = appendU64(skip, uint64(blockStart))
		skip = appendU64(skip, uint64(posOff))
		skip = append(skip, minNorm)
		skip = appendU32(skip, uint32(len(imp.region)))
		imp.region = appendImpacts(imp.region, impacts)
	}
	w.appendMeta(uint64(o.pos()))
	o.write(skip)
	o.write(imp.region)
	w.scratch = skip[:0]
}

// block returns the competitive (freq, norm) pairs of one block's docs;
// norm 0 for every doc when the field has no norms.
func (p *postingsImpacts) block(docs, freqs []uint32, norms index.NormsReader) []index.Impact {
	for i, d := range docs {
		var n uint8
		if norms != nil {
			n = norms.Norm(int(d))
		}
		p.acc.add(freqs[i], n)
	}
	return p.acc.finish()
}
