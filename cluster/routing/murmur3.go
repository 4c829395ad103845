package routing

import (
	"math/bits"
)

// Hash is 32-bit MurmurHash3 (x86_32) with seed 0 over the bytes of s.
// It does not allocate.
func Hash(s string) uint32 { return murmur3(s, 0) }

// Murmur3 is 32-bit MurmurHash3 (x86_32) of b with the given seed.
func Murmur3(b []byte, seed uint32) uint32 { return murmur3(string(b), seed) }

const (
	c1 = 0xcc9e2d51
	c2 = 0x1b873593
)

func murmur3(s string, seed uint32) uint32 {
	h := seed
	n := len(s)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch n - i {
	case 3:
		k ^= uint32(s[i+2]) << 16
		fallthrough
	case 2:
		k ^= uint32(s[i+1]) << 8
		fallthrough
	case 1:
		k ^= uint32(s[i])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
