package dwpt

import (
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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
		idlePools.filled(time.Now())
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

// Releasing the pools when indexing stops. A sync.Pool empties only after
// two GC cycles without reuse, and an idle Go process runs a GC only every
// 2 minutes, so after a bulk load the recycled arrays (hundreds of MB for a
// few shards) stayed resident for up to 4 minutes. Once nothing has been
// put back for IdleRelease, a watcher runs the two collections itself and
// returns the memory to the OS. It costs two GCs per idle period, on a heap
// that has just stopped growing.
const IdleRelease = 30 * time.Second

type idleRelease struct {
	once   sync.Once
	last   atomic.Int64 // unix nanos of the last put
	pooled atomic.Bool  // something was pooled since the last release
}

var idlePools idleRelease

func (r *idleRelease) filled(now time.Time) {
	r.last.Store(now.UnixNano())
	r.pooled.Store(true)
	r.once.Do(func() { go r.watch(IdleRelease) })
}

// due reports whether the pools were filled and then left alone for idle;
// it clears the flag, so one idle period releases once.
func (r *idleRelease) due(now time.Time, idle time.Duration) bool {
	if !r.pooled.Load() || now.Sub(time.Unix(0, r.last.Load())) < idle {
		return false
	}
	return r.pooled.CompareAndSwap(true, false)
}

func (r *idleRelease) watch(idle time.Duration) {
	for range time.Tick(idle / 3) {
		if r.due(time.Now(), idle) {
			runtime.GC()         // pooled arrays move to the pools' victim caches
			debug.FreeOSMemory() // which this cycle drops, then unmaps
		}
	}
}
