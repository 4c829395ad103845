package index

import "math/bits"

// FixedBitSet is a fixed-length bitset; live docs use one bit per doc (set =
// live). Not safe for concurrent mutation; readers share an immutable one and
// writers Clone before changing it (copy-on-write live docs at refresh).
type FixedBitSet struct {
	words []uint64
	n     int
}

// NewFixedBitSet returns a bitset of n bits, all clear.
func NewFixedBitSet(n int) *FixedBitSet {
	return &FixedBitSet{words: make([]uint64, (n+63)/64), n: n}
}

// NewFixedBitSetAllSet returns a bitset of n bits, all set.
func NewFixedBitSetAllSet(n int) *FixedBitSet {
	b := NewFixedBitSet(n)
	for i := range b.words {
		b.words[i] = ^uint64(0)
	}
	b.clearTail()
	return b
}

// FixedBitSetFromWords wraps words (len >= (n+63)/64) as an n-bit set; bits
// past n are cleared. Used by decoders.
func FixedBitSetFromWords(words []uint64, n int) *FixedBitSet {
	b := &FixedBitSet{words: words[:(n+63)/64], n: n}
	b.clearTail()
	return b
}

func (b *FixedBitSet) clearTail() {
	if r := b.n % 64; r != 0 {
		b.words[len(b.words)-1] &= (uint64(1) << r) - 1
	}
}

// Len is the number of bits.
func (b *FixedBitSet) Len() int { return b.n }

// Get reports whether bit i is set.
func (b *FixedBitSet) Get(i int) bool { return b.words[i>>6]&(1<<(uint(i)&63)) != 0 }

// Set sets bit i.
func (b *FixedBitSet) Set(i int) { b.words[i>>6] |= 1 << (uint(i) & 63) }

// Clear clears bit i and reports whether it was set.
func (b *FixedBitSet) Clear(i int) bool {
	w, m := i>>6, uint64(1)<<(uint(i)&63)
	was := b.words[w]&m != 0
	b.words[w] &^= m
	return was
}

// Cardinality counts set bits.
func (b *FixedBitSet) Cardinality() int {
	c := 0
	for _, w := range b.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// NextSetBit returns the first set bit >= i, or NoMoreDocs.
func (b *FixedBitSet) NextSetBit(i int) int {
	if i >= b.n {
		return NoMoreDocs
	}
	w := i >> 6
	word := b.words[w] >> (uint(i) & 63)
	if word != 0 {
		return i + bits.TrailingZeros64(word)
	}
	for w++; w < len(b.words); w++ {
		if b.words[w] != 0 {
			return w*64 + bits.TrailingZeros64(b.words[w])
		}
	}
	return NoMoreDocs
}

// Clone returns an independent copy.
func (b *FixedBitSet) Clone() *FixedBitSet {
	return &FixedBitSet{words: append([]uint64(nil), b.words...), n: b.n}
}

// Words exposes the backing words (for encoders); do not modify.
func (b *FixedBitSet) Words() []uint64 { return b.words }
