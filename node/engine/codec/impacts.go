package codec

import (
	"math"
	"math/bits"

	"github.com/sluice-search/sluice/node/engine/index"
)

// maxBlockImpacts caps the competitive impacts stored for one block. A
// block of 128 docs rarely has more than a dozen (on the enwiki corpus the
// largest front of the frequent terms is far below the cap); beyond it the
// writer merges neighbouring pairs into one that dominates both, a coarser
// but still safe bound (Lucene bounds its impacts the same way, by
// falling back to coarser pairs).
const maxBlockImpacts = 32

// impactAccumulator collects the (freq, norm) pairs of one block and
// returns their competitive set (Lucene's CompetitiveImpactAccumulator):
// the pairs no other pair dominates, one with at least the freq and at
// most the norm. Norms are bytes, so the best freq per norm is a 256-entry
// table and a 256-bit set of the norms seen; finish walks the norms in
// increasing order and keeps a norm's freq only when it beats every
// shorter norm's. No sorting, no allocation once out has grown.
type impactAccumulator struct {
	best [256]uint32
	seen [4]uint64
	out  []index.Impact
}

func (a *impactAccumulator) add(freq uint32, norm uint8) {
	if freq > a.best[norm] {
		a.best[norm] = freq
	}
	a.seen[norm>>6] |= 1 << (norm & 63)
}

// finish returns the competitive impacts, freq and norm both strictly
// increasing, at most maxBlockImpacts of them, and resets the accumulator.
// The result aliases a.out until the next finish.
func (a *impactAccumulator) finish() []index.Impact {
	out := a.out[:0]
	var run uint32
	for w := range a.seen {
		for m := a.seen[w]; m != 0; m &= m - 1 {
			n := w<<6 | bits.TrailingZeros64(m)
			if f := a.best[n]; f > run {
				out = append(out, index.Impact{Freq: int(f), Norm: uint8(n)})
				run = f
			}
			a.best[n] = 0
		}
		a.seen[w] = 0
	}
	a.out = capImpacts(out, maxBlockImpacts)
	return a.out
}

// capImpacts shrinks a competitive set to at most n pairs by repeatedly
// merging the two neighbours closest in norm into (the larger freq, the
// smaller norm): the merged pair dominates both, so the set still bounds
// every doc's score, and the norm bytes are logarithmic in the length, so
// the closest norms lose the least. The first norm and the last freq (the
// block's min norm and max freq) are kept.
func capImpacts(imps []index.Impact, n int) []index.Impact {
	for len(imps) > n {
		best := 0
		for i := 1; i < len(imps)-1; i++ {
			if imps[i+1].Norm-imps[i].Norm < imps[best+1].Norm-imps[best].Norm {
				best = i
			}
		}
		imps[best].Freq = imps[best+1].Freq
		imps = append(imps[:best+1], imps[best+2:]...)
	}
	return imps
}

// appendImpacts encodes a competitive set: uvarint count, then per pair,
// as deltas from the previous pair (from freq 0, norm -1 for the first),
// uvarint((freqDelta-1)<<1 | normDelta != 1) and, when that bit is set,
// uvarint(normDelta-2). Along a competitive set both deltas are >= 1 and
// the norm delta is mostly 1 or small, so a pair takes one or two bytes.
func appendImpacts(b []byte, imps []index.Impact) []byte {
	b = appendUvarint(b, uint64(len(imps)))
	prevFreq, prevNorm := 0, -1
	for _, im := range imps {
		fd, nd := im.Freq-prevFreq, int(im.Norm)-prevNorm
		if nd == 1 {
			b = appendUvarint(b, uint64(fd-1)<<1)
		} else {
			b = appendUvarint(b, uint64(fd-1)<<1|1)
			b = appendUvarint(b, uint64(nd-2))
		}
		prevFreq, prevNorm = im.Freq, int(im.Norm)
	}
	return b
}

// decodeImpacts appends the competitive set encoded at b[off:] to dst. It
// reports false for anything appendImpacts cannot have written: a count
// outside 1..maxBlockImpacts, a truncated varint, a freq above MaxInt32 or
// a norm above 255 (freqs and norms are strictly increasing by
// construction); dst is then returned as it was. n is the number of bytes
// read.
func decodeImpacts(b []byte, off int, dst []index.Impact) (_ []index.Impact, n int, ok bool) {
	start, orig := off, dst
	cnt, k := uvarintAt(b, off)
	if k <= 0 || cnt == 0 || cnt > maxBlockImpacts {
		return orig, 0, false
	}
	off += k
	freq, norm := uint64(0), -1
	for range cnt {
		v, k := uvarintAt(b, off)
		if k <= 0 || v>>1 >= math.MaxInt32-freq {
			return orig, 0, false
		}
		off += k
		freq += v>>1 + 1
		nd := uint64(1)
		if v&1 != 0 {
			if nd, k = uvarintAt(b, off); k <= 0 || nd > 255 {
				return orig, 0, false
			}
			off += k
			nd += 2
		}
		if norm += int(nd); norm > 255 {
			return orig, 0, false
		}
		dst = append(dst, index.Impact{Freq: int(freq), Norm: uint8(norm)})
	}
	return dst, off - start, true
}
