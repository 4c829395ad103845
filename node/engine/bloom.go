package engine

import (
	"hash/maphash"
	"math/bits"

	"github.com/sluice-search/sluice/node/engine/index"
)

// idBloom is a per-segment Bloom filter over _id terms. Every update and
// delete asks each segment whether it holds the id (for created/found and
// for applying the delete); without a filter that is one term-dictionary
// seek per segment per operation, which with tens of segments costs as much
// as inverting the document. ~10 bits per id and 3 probes give ~1% false
// positives, which fall through to the seek. Built once per segment from
// its terms (flush, merge, open), held on the Go heap (1.25 bytes/doc).
type idBloom struct {
	words []uint64
	mask  uint64
}

const bloomBitsPerID = 10

var bloomSeed = maphash.MakeSeed()

func newIDBloom(r index.LeafReader) *idBloom {
	t := r.Terms(index.IDField)
	if t == nil {
		return nil
	}
	n := uint64(max(t.Size(), 1)) * bloomBitsPerID
	nbits := uint64(1) << bits.Len64(n-1) // power of two >= n
	nbits = max(nbits, 64)
	b := &idBloom{words: make([]uint64, nbits/64), mask: nbits - 1}
	te := t.Iterator()
	for te.Next() {
		b.add(te.Term())
	}
	return b
}

// probes derives the three bit positions from one 64-bit hash (double
// hashing: h1 + i*h2).
func (b *idBloom) probes(id []byte) (uint64, uint64, uint64) {
	h := maphash.Bytes(bloomSeed, id)
	h1, h2 := h, h>>32|h<<32|1
	return h1 & b.mask, (h1 + h2) & b.mask, (h1 + 2*h2) & b.mask
}

func (b *idBloom) add(id []byte) {
	p1, p2, p3 := b.probes(id)
	b.words[p1>>6] |= 1 << (p1 & 63)
	b.words[p2>>6] |= 1 << (p2 & 63)
	b.words[p3>>6] |= 1 << (p3 & 63)
}

// mayContain is false only if the segment certainly has no doc with id.
func (b *idBloom) mayContain(id []byte) bool {
	if b == nil {
		return true
	}
	p1, p2, p3 := b.probes(id)
	return b.words[p1>>6]&(1<<(p1&63)) != 0 && b.words[p2>>6]&(1<<(p2&63)) != 0 && b.words[p3>>6]&(1<<(p3&63)) != 0
}

func (b *idBloom) ramBytes() int64 {
	if b == nil {
		return 0
	}
	return int64(len(b.words)) * 8
}
