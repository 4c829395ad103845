package index

import "math/bits"

// Norms quantise a field's length (token count) to one byte, as Lucene's
// SmallFloat.intToByte4: lengths below 24 are exact, larger ones keep a
// 4-bit mantissa. The byte order is the length order, so the smallest byte
// in a block is its shortest doc (the best BM25 case).

const normFreeValues = 255 - 231 // 231 = longToInt4(math.MaxInt32)

func longToInt4(i uint64) uint8 {
	numBits := 64 - bits.LeadingZeros64(i)
	if numBits < 4 {
		return uint8(i)
	}
	shift := numBits - 4
	encoded := (i >> uint(shift)) & 0x07
	encoded |= uint64(shift+1) << 3
	return uint8(encoded)
}

func int4ToLong(b uint8) uint64 {
	bits := uint64(b & 0x07)
	shift := int(b>>3) - 1
	if shift == -1 {
		return bits
	}
	return (bits | 0x08) << uint(shift)
}

// EncodeNorm encodes a field length (>= 0) as a norm byte.
func EncodeNorm(length int) uint8 {
	if length < 0 {
		length = 0
	}
	if length < normFreeValues {
		return uint8(length)
	}
	return normFreeValues + longToInt4(uint64(length-normFreeValues))
}

// DecodeNorm returns the (lower-bound) length a norm byte stands for.
func DecodeNorm(b uint8) int {
	if b < normFreeValues {
		return int(b)
	}
	return normFreeValues + int(int4ToLong(b-normFreeValues))
}

// NormTable is DecodeNorm for every byte, for scorers' per-byte caches.
var NormTable = func() (t [256]int) {
	for i := range t {
		t[i] = DecodeNorm(uint8(i))
	}
	return t
}()
