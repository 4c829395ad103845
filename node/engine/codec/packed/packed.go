// Package packed is frame-of-reference bit packing of blocks of 128 uint32
// values, the building block of postings (doc deltas, freqs).
//
// A block of width w (0..32) is 2*w little-endian uint64 words = 16*w bytes;
// value i occupies bits [i*w, i*w+w) of the words read as one bit stream.
// Unpacking is generated straight-line code per width (gen.go), so decoding
// a block costs a few shifts per value; packing (the write path) is a loop.
package packed

//go:generate go run gen.go

import (
	"encoding/binary"
	"math/bits"
)

// BlockSize is the number of values in a packed block.
const BlockSize = 128

// BlockBytes is the encoded size of a block of width bits.
func BlockBytes(width int) int { return 16 * width }

// BitsRequired is the width needed for v.
func BitsRequired(v uint32) int { return 32 - bits.LeadingZeros32(v) }

// MaxWidth is the width needed for the largest value of block.
func MaxWidth(block *[BlockSize]uint32) int {
	var or uint32
	for _, v := range block {
		or |= v
	}
	return BitsRequired(or)
}

// Pack appends block packed with width bits (every value must fit) to dst.
func Pack(dst []byte, block *[BlockSize]uint32, width int) []byte {
	if width == 0 {
		return dst
	}
	var words [64]uint64
	w := uint(width)
	bit := uint(0)
	for _, v := range block {
		k, s := bit>>6, bit&63
		words[k] |= uint64(v) << s
		if s+w > 64 {
			words[k+1] |= uint64(v) >> (64 - s)
		}
		bit += w
	}
	for _, x := range words[:2*width] {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst
}

// Unpack decodes a block of width bits from src into dst. src must hold at
// least BlockBytes(width) bytes and width must be in 0..32; callers that
// read untrusted files check both first.
func Unpack(dst *[BlockSize]uint32, src []byte, width int) {
	unpackers[width](dst, src)
}
