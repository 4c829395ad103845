package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice-search/sluice/node/engine/codec/packed"
	"github.com/sluice-search/sluice/node/engine/index"
)

// postingsEnum decodes one term's postings straight from the mmap'd .doc
// and .pos bodies: 128-doc packed blocks (or the vint tail) into docBuf /
// freqBuf, positions lazily, skip entries for Advance and impacts. It is
// reused across terms of the same field (Postings' reuse) and allocates
// nothing after construction.
type postingsEnum struct {
	f       *fieldReader
	ts      termState
	nBlocks int

	wantFreqs, wantPos bool
	maxDoc             int

	docBuf  [packed.BlockSize]uint32
	freqBuf [packed.BlockSize]uint32
	bufLen  int
	bufIdx  int // index of the next doc in the buffer
	block   int // index of the buffered block; -1 before the first
	blockFP int // offset in .doc of the next block to decode
	prevDoc int // last doc of the block before the buffered one

	doc int

	// Positions are accounted lazily so NextDoc/Advance do no per-doc
	// position work: posIdx is the buffer index of the first doc whose
	// positions are not yet counted, posSkip the vints at posFP to skip
	// before the next doc's positions, posLeft the unread positions of the
	// doc being read.
	posFP    int
	posIdx   int
	posSkip  int
	posLeft  int
	position int

	shallow  int // block AdvanceShallow is on
	skipSize int // the segment's skip entry size
	err      error
}

// Err reports corruption met while decoding (the enum then ends with
// NoMoreDocs). Not part of index.PostingsEnum; CheckIntegrity and callers
// that care type-assert interface{ Err() error }.
func (p *postingsEnum) Err() error { return p.err }

func (p *postingsEnum) reset(ts *termState, flags index.PostingsFlags) {
	p.ts = *ts
	p.nBlocks = ts.blocks()
	p.wantFreqs = flags&index.PostingsFreqs != 0 && p.f.hasFreqs
	p.wantPos = flags&index.PostingsPositions == index.PostingsPositions && p.f.hasPos
	p.maxDoc = p.f.seg.maxDoc
	p.bufLen, p.bufIdx, p.block = 0, 0, -1
	p.blockFP = ts.docStart
	p.prevDoc = -1
	p.doc = -1
	p.posFP, p.posIdx, p.posSkip, p.posLeft, p.position = ts.posStart, 0, 0, 0, 0
	p.shallow = 0
	p.skipSize = p.f.seg.skipSize
	p.err = nil
}

func (p *postingsEnum) fail(format string, args ...any) int {
	if p.err == nil {
		p.err = corruptf(fileName(p.f.seg.info.Name, extDocs), p.blockFP, "%s", fmt.Sprintf(format, args...))
	}
	p.doc = index.NoMoreDocs
	p.bufLen, p.bufIdx = 0, 0
	p.block = p.nBlocks
	return index.NoMoreDocs
}

func (p *postingsEnum) failErr(format string, args ...any) error {
	p.fail(format, args...)
	return p.err
}

func (p *postingsEnum) DocID() int  { return p.doc }
func (p *postingsEnum) Cost() int64 { return int64(p.ts.docFreq) }
func (p *postingsEnum) Freq() int {
	if p.wantFreqs && p.bufIdx > 0 {
		return int(p.freqBuf[p.bufIdx-1])
	}
	return 1
}
func (p *postingsEnum) blockLen(b int) int {
	return min(packed.BlockSize, p.ts.docFreq-b*packed.BlockSize)
}

// refill decodes block p.block+1 from p.blockFP. It reports false at the end
// of the postings or on corruption.
func (p *postingsEnum) refill() bool {
	b := p.block + 1
	if b >= p.nBlocks {
		p.doc = index.NoMoreDocs
		return false
	}
	p.block = b
	if p.wantPos {
		for i := p.posIdx; i < p.bufLen; i++ {
			p.posSkip += int(p.freqBuf[i])
		}
		p.posSkip += p.posLeft
		p.posIdx, p.posLeft = 0, 0
	}
	if p.ts.docFreq == 1 {
		p.docBuf[0], p.freqBuf[0] = uint32(p.ts.single), uint32(p.ts.ttf)
		p.bufLen, p.bufIdx = 1, 0
		return true
	}
	n := p.blockLen(b)
	data := p.f.seg.doc
	off := p.blockFP
	if off < 0 || off >= len(data) {
		p.fail("block offset %d out of range", off)
		return false
	}
	if n == packed.BlockSize {
		w := int(data[off])
		off++
		if w > 32 || len(data)-off < packed.BlockBytes(w)+int(boolByte(p.f.hasFreqs)) {
			p.fail("bad block width %d", w)
			return false
		}
		packed.Unpack(&p.docBuf, data[off:], w)
		off += packed.BlockBytes(w)
		d := p.prevDoc
		for i := range p.docBuf {
			d += int(p.docBuf[i]) + 1
			p.docBuf[i] = uint32(d)
		}
		if d >= p.maxDoc {
			p.fail("doc %d >= maxDoc %d", d, p.maxDoc)
			return false
		}
		if p.f.hasFreqs {
			w := int(data[off])
			off++
			if w > 32 || len(data)-off < packed.BlockBytes(w) {
				p.fail("bad freq block width %d", w)
				return false
			}
			if p.wantFreqs {
				packed.Unpack(&p.freqBuf, data[off:], w)
				for i := range p.freqBuf {
					p.freqBuf[i]++
				}
			}
			off += packed.BlockBytes(w)
		}
	} else {
		d := p.prevDoc
		for i := 0; i < n; i++ {
			v, k := uvarintAt(data, off)
			if k <= 0 {
				p.fail("bad vint")
				return false
			}
			off += k
			f := uint64(1)
			if p.f.hasFreqs {
				if v&1 == 0 {
					if f, k = uvarintAt(data, off); k <= 0 {
						p.fail("bad vint")
						return false
					}
					off += k
				}
				v >>= 1
			}
			if v >= uint64(p.maxDoc) {
				p.fail("doc delta %d too large", v)
				return false
			}
			d += int(v) + 1
			p.docBuf[i], p.freqBuf[i] = uint32(d), uint32(f)
		}
		if d >= p.maxDoc {
			p.fail("doc %d >= maxDoc %d", d, p.maxDoc)
			return false
		}
	}
	p.blockFP = off
	p.prevDoc = int(p.docBuf[n-1])
	p.bufLen, p.bufIdx = n, 0
	return true
}

func (p *postingsEnum) NextDoc() int {
	i := p.bufIdx
	if i == p.bufLen {
		if !p.refill() {
			return p.doc
		}
		i = 0
	}
	p.doc = int(p.docBuf[i])
	p.bufIdx = i + 1
	return p.doc
}

// skipLastDoc is the last doc of block b, from its skip entry.
func (p *postingsEnum) skipLastDoc(b int) int {
	return int(binary.LittleEndian.Uint32(p.f.seg.doc[p.ts.skip+b*p.skipSize:]))
}

// findBlock returns the first block >= from whose last doc is >= target,
// or nBlocks: a gallop then a binary search over the fixed-size skip
// entries, so skipping is logarithmic in the distance.
func (p *postingsEnum) findBlock(from, target int) int {
	if p.nBlocks == 1 {
		return from
	}
	lo, step := from, 1
	hi := from
	for hi < p.nBlocks && p.skipLastDoc(hi) < target {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, p.nBlocks)
	for lo < hi {
		m := (lo + hi) / 2
		if p.skipLastDoc(m) < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (p *postingsEnum) Advance(target int) int {
	if p.bufIdx == p.bufLen || int(p.docBuf[p.bufLen-1]) < target {
		// Target is past the buffered block: jump with the skip entries.
		b := p.findBlock(p.block+1, target)
		if b >= p.nBlocks {
			p.doc = index.NoMoreDocs
			p.block, p.bufLen, p.bufIdx = p.nBlocks, 0, 0
			return p.doc
		}
		if b > p.block+1 {
			e := p.f.seg.doc[p.ts.skip+(b-1)*p.skipSize:]
			p.prevDoc = int(binary.LittleEndian.Uint32(e))
			cur := p.f.seg.doc[p.ts.skip+b*p.skipSize:]
			docOff, posOff := binary.LittleEndian.Uint64(cur[8:]), binary.LittleEndian.Uint64(cur[16:])
			if docOff >= uint64(len(p.f.seg.doc)) || posOff > uint64(len(p.f.seg.pos)) {
				return p.fail("skip entry %d points past the end", b)
			}
			p.blockFP = p.ts.docStart + int(docOff)
			p.posFP = p.ts.posStart + int(posOff)
			p.posIdx, p.posSkip, p.posLeft = 0, 0, 0
			p.bufLen, p.bufIdx = 0, 0
			p.block = b - 1
		}
		if !p.refill() {
			return p.doc
		}
	}
	for i := p.bufIdx; i < p.bufLen; i++ {
		if d := int(p.docBuf[i]); d >= target {
			p.bufIdx = i + 1
			p.doc = d
			return d
		}
	}
	// Unreachable with consistent skip data: the block's last doc >= target.
	return p.fail("skip entry disagrees with block")
}

func (p *postingsEnum) NextPosition() int {
	if !p.wantPos || p.bufIdx == 0 {
		return -1
	}
	data := p.f.seg.pos
	if p.posIdx != p.bufIdx {
		// First position of this doc: skip the positions of the docs
		// passed over and of the previous doc's unread ones.
		skip := p.posSkip + p.posLeft
		for i := p.posIdx; i < p.bufIdx-1; i++ {
			skip += int(p.freqBuf[i])
		}
		off := p.posFP
		if off < 0 || off > len(data) {
			p.err = corruptf(fileName(p.f.seg.info.Name, extPos), 0, "positions offset %d out of range", off)
			return -1
		}
		for skip > 0 && off < len(data) {
			if data[off] < 0x80 {
				skip--
			}
			off++
		}
		p.posFP, p.posSkip = off, 0
		p.posIdx = p.bufIdx
		p.posLeft = int(p.freqBuf[p.bufIdx-1])
		p.position = 0
	}
	if p.posLeft <= 0 {
		return -1 // more calls than Freq()
	}
	v, k := uvarintAt(data, p.posFP)
	if k <= 0 {
		p.err = corruptf(fileName(p.f.seg.info.Name, extPos), p.posFP, "bad position")
		return -1
	}
	p.posFP += k
	p.posLeft--
	p.position += int(v)
	return p.position
}

// AdvanceShallow implements index.ImpactsEnum.
func (p *postingsEnum) AdvanceShallow(target int) int {
	b := p.findBlock(max(p.shallow, p.block, 0), target)
	if b >= p.nBlocks-1 {
		p.shallow = p.nBlocks - 1
		return index.NoMoreDocs
	}
	p.shallow = b
	return p.skipLastDoc(b)
}

// BlockMax implements index.ImpactsEnum.
func (p *postingsEnum) BlockMax() (maxFreq int, minNorm uint8) { return p.blockMax(p.shallow) }

func (p *postingsEnum) blockMax(b int) (maxFreq int, minNorm uint8) {
	if p.nBlocks == 1 {
		return p.ts.maxFreq, p.ts.minNorm
	}
	e := p.f.seg.doc[p.ts.skip+b*p.skipSize:]
	return int(binary.LittleEndian.Uint32(e[4:])), e[24]
}

// BlockImpacts implements index.BlockImpactsEnum: the competitive impacts
// of the block AdvanceShallow is on, appended to dst. Segments of format
// version 2 have none stored and give the BlockMax pair, a valid but looser
// bound. Corrupt impacts end the enum (Err) and give the BlockMax pair.
func (p *postingsEnum) BlockImpacts(dst []index.Impact) []index.Impact {
	return p.blockImpacts(p.shallow, dst)
}

func (p *postingsEnum) blockImpacts(b int, dst []index.Impact) []index.Impact {
	seg := p.f.seg
	switch {
	case p.ts.docFreq == 1 || !seg.impacts || p.ts.impacts < 0:
	case p.nBlocks == 1:
		if out, _, ok := decodeImpacts(p.f.termMeta, p.ts.impacts, dst); ok {
			return out
		}
		p.fail("bad impacts in term metadata")
	default:
		e := seg.doc[p.ts.skip+b*p.skipSize:]
		off := uint64(p.ts.impacts) + uint64(binary.LittleEndian.Uint32(e[25:]))
		if off < uint64(len(seg.doc)) {
			if out, _, ok := decodeImpacts(seg.doc, int(off), dst); ok {
				return out
			}
		}
		p.fail("bad impacts of block %d", b)
	}
	f, n := p.blockMax(b)
	return append(dst, index.Impact{Freq: f, Norm: n})
}
