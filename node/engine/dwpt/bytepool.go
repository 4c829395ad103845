package dwpt

import (
	"encoding/binary"
	"sync"
)

// Byte blocks: all variable-length in-memory data of a DWPT (term bytes and
// postings streams) lives in fixed 32 KiB blocks addressed by a global int32
// offset (block<<blockShift | offset). Few, large, pointer-free allocations
// keep the GC's work independent of the number of postings, and RAM
// accounting is a block count.
const (
	blockShift = 15
	BlockSize  = 1 << blockShift
	blockMask  = BlockSize - 1
	// maxPoolBytes caps one pool below the int32 address space; the writer
	// flushes a DWPT long before (Lucene's per-thread hard limit is ~1.9 GB).
	maxPoolBytes = 1<<31 - BlockSize
)

// Allocator recycles zeroed byte blocks between DWPTs, so a steady indexing
// load does not hand 32 KiB blocks to the GC after every flush. It is safe for
// concurrent use; the free list is bounded.
type Allocator struct {
	mu   sync.Mutex
	free [][]byte
	max  int
}

// NewAllocator returns an allocator that keeps at most maxFreeBytes of
// released blocks for reuse.
func NewAllocator(maxFreeBytes int64) *Allocator {
	return &Allocator{max: int(maxFreeBytes / BlockSize)}
}

func (a *Allocator) get() []byte {
	if a != nil {
		a.mu.Lock()
		if n := len(a.free); n > 0 {
			b := a.free[n-1]
			a.free = a.free[:n-1]
			a.mu.Unlock()
			return b
		}
		a.mu.Unlock()
	}
	return make([]byte, BlockSize)
}

// put takes back blocks; they are zeroed here because the slice writer
// relies on unwritten bytes being zero (see bytePool.writeByte).
func (a *Allocator) put(blocks [][]byte) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range blocks {
		if len(a.free) >= a.max {
			return
		}
		clear(b)
		a.free = append(a.free, b)
	}
}

// bytePool is an append-only arena of byte blocks. Postings streams are
// written as chains of growing "slices" inside it (Lucene's ByteBlockPool
// idea): a slice is zero-filled except its last byte, a non-zero level
// marker, so a writer needs only its current address to know when the slice
// is full; it then allocates the next, larger slice and overwrites the last
// four bytes of the full one with the new slice's address.
type bytePool struct {
	blocks [][]byte
	cur    []byte // blocks[len-1]
	upto   int    // next free offset in cur
	alloc  *Allocator
}

// Slice levels: sizes grow so that rare terms waste little and frequent
// terms need few hops. The marker byte is markerBit|level.
var (
	levelSize = [...]int32{5, 14, 20, 30, 40, 40, 80, 80, 120, 200}
	nextLevel = [...]uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 9}
)

const (
	markerBit    = 16
	firstLevel   = 5 // levelSize[0]
	maxSliceSize = 200
)

func (p *bytePool) nextBlock() {
	b := p.alloc.get()
	p.blocks = append(p.blocks, b)
	p.cur = b
	p.upto = 0
}

// base is the global address of cur[0].
func (p *bytePool) base() int32 { return int32(len(p.blocks)-1) << blockShift }

// reserve returns the global address of n contiguous bytes (n <= BlockSize).
func (p *bytePool) reserve(n int) int32 {
	if p.cur == nil || p.upto+n > BlockSize {
		p.nextBlock()
	}
	addr := p.base() + int32(p.upto)
	p.upto += n
	return addr
}

// bytes returns the backing bytes at a global address, to the block end.
func (p *bytePool) at(addr int32) []byte {
	return p.blocks[addr>>blockShift][addr&blockMask:]
}

// newSlices reserves n first-level slices back to back and returns the
// address of the first; slice i starts at addr+i*firstLevel.
func (p *bytePool) newSlices(n int) int32 {
	addr := p.reserve(n * firstLevel)
	b := p.at(addr)
	for i := 1; i <= n; i++ {
		b[i*firstLevel-1] = markerBit
	}
	return addr
}

// writeByte appends v to the stream whose write address is addr and returns
// the new write address.
func (p *bytePool) writeByte(addr int32, v byte) int32 {
	blk := p.blocks[addr>>blockShift]
	off := addr & blockMask
	if blk[off] != 0 { // hit the level marker: the slice is full
		addr = p.growSlice(blk, off)
		blk = p.blocks[addr>>blockShift]
		off = addr & blockMask
	}
	blk[off] = v
	return addr + 1
}

// writeVInt appends v as a varint (7 bits per byte, low first). Most values
// (doc and position deltas) take one byte and the slice has room: that path
// is one load of the block and one store.
func (p *bytePool) writeVInt(addr int32, v uint32) int32 {
	if v < 0x80 {
		blk := p.blocks[addr>>blockShift]
		if off := addr & blockMask; blk[off] == 0 {
			blk[off] = byte(v)
			return addr + 1
		}
	}
	for v >= 0x80 {
		addr = p.writeByte(addr, byte(v)|0x80)
		v >>= 7
	}
	return p.writeByte(addr, byte(v))
}

// growSlice is called when the writer reached the marker at blk[off]. It
// allocates the next-level slice, moves the last three data bytes there,
// writes the forwarding address over them and the marker, and returns the
// write address in the new slice.
func (p *bytePool) growSlice(blk []byte, off int32) int32 {
	level := blk[off] & 15
	nl := nextLevel[level]
	size := int(levelSize[nl])
	addr := p.reserve(size)
	nb := p.at(addr)
	copy(nb[:3], blk[off-3:off])
	binary.LittleEndian.PutUint32(blk[off-3:], uint32(addr))
	nb[size-1] = markerBit | nl
	return addr + 3
}

// RAMBytes is the memory held by the pool's blocks.
func (p *bytePool) ramBytes() int64 { return int64(cap(p.blocks))*24 + int64(len(p.blocks))*BlockSize }

func (p *bytePool) release() {
	p.alloc.put(p.blocks)
	p.blocks, p.cur, p.upto = nil, nil, 0
}

// sliceReader reads one stream from its first slice up to the writer's
// current address end.
type sliceReader struct {
	pool  *bytePool
	buf   []byte // current slice's block
	upto  int32  // global read address
	limit int32  // global end of readable bytes in the current slice
	level uint8
	end   int32
}

func (r *sliceReader) init(p *bytePool, start, end int32) {
	r.pool, r.end, r.level = p, end, 0
	r.setSlice(start)
}

func (r *sliceReader) setSlice(start int32) {
	r.buf = r.pool.blocks[start>>blockShift]
	r.upto = start
	size := levelSize[r.level]
	// Later slices always sit at higher addresses, so end lies in this
	// slice exactly when it is not past the slice.
	if r.end <= start+size-1 {
		r.limit = r.end
	} else {
		r.limit = start + size - 4
	}
}

func (r *sliceReader) eof() bool { return r.upto == r.end }

func (r *sliceReader) readByte() byte {
	if r.upto == r.limit {
		next := int32(binary.LittleEndian.Uint32(r.buf[r.limit&blockMask:]))
		r.level = nextLevel[r.level]
		r.setSlice(next)
	}
	b := r.buf[r.upto&blockMask]
	r.upto++
	return b
}

func (r *sliceReader) readVInt() uint32 {
	if r.upto < r.limit { // one-byte values, the common case
		if b := r.buf[r.upto&blockMask]; b < 0x80 {
			r.upto++
			return uint32(b)
		}
	}
	b := r.readByte()
	v := uint32(b & 0x7f)
	for shift := 7; b >= 0x80; shift += 7 {
		b = r.readByte()
		v |= uint32(b&0x7f) << shift
	}
	return v
}

// appendRest appends the bytes from the read address to the end of the
// stream, a run of whole slices at a time.
func (r *sliceReader) appendRest(dst []byte) []byte {
	for {
		// A slice never crosses a block, so its readable bytes are one run.
		lo := r.upto & blockMask
		dst = append(dst, r.buf[lo:lo+(r.limit-r.upto)]...)
		r.upto = r.limit
		if r.eof() {
			return dst
		}
		next := int32(binary.LittleEndian.Uint32(r.buf[r.limit&blockMask:]))
		r.level = nextLevel[r.level]
		r.setSlice(next)
	}
}
