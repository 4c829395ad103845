package dwpt

import (
	"math/bits"
	"sync"
)

// Recycling of a DWPT's large arrays other than byte blocks. Bulk indexing
// releases a whole DWPT per flush: its posting rows, hash tables, stored
// chunks and flush-time sort arrays would be garbage, and while the GC has
// not run (a heap with much live data has a far-off GC goal) every new DWPT
// would take fresh memory from the OS, so peak RSS grew by about a DWPT per
// flush. Full-size pages, tables and chunks go to sync.Pools when a DWPT is
// released (or a hash table is outgrown) and later DWPTs take them back. A
// sync.Pool drops what nobody reused within two GC cycles, so an idle writer
// pins none of it, unlike the Allocator's bounded block list.

// slabPool recycles slices of one element type and one capacity.
type slabPool[T any] struct{ p sync.Pool }

// get returns a slice of length 0 and capacity n, reused if one is pooled.
// Its elements are undefined: callers overwrite or clear them.
func (s *slabPool[T]) get(n int) []T {
	if v, ok := s.p.Get().(*[]T); ok && cap(*v) == n {
		return (*v)[:0]
	}
	return make([]T, 0, n)
}

// put offers b for reuse if its capacity is n; others are left to the GC.
func (s *slabPool[T]) put(b []T, n int) {
	if cap(b) == n {
		s.p.Put(&b)
	}
}

// classPool recycles slices whose capacity is a power of two, one slabPool
// per capacity, for arrays sized by a DWPT's term or doc count.
type classPool[T any] [48]slabPool[T]

// get returns a slice of length n and capacity n rounded up to a power of
// two; its elements are undefined.
func (c *classPool[T]) get(n int) []T {
	k := bits.Len(uint(max(n, 1) - 1))
	return c[k].get(1 << k)[:n]
}

func (c *classPool[T]) put(s []T) {
	if n := cap(s); n > 0 && n&(n-1) == 0 {
		c[bits.Len(uint(n-1))].put(s, n)
	}
}

var (
	postingPages slabPool[posting]
	int32Pages   slabPool[int32]
	refPages     slabPool[storedRef]
	chunkPool    slabPool[byte]
	slotTables   classPool[hslot]
	sortKeys     classPool[sortKey]
	int32Arrays  classPool[int32]
)
