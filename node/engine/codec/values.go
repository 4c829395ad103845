package codec

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Norms readers, one per field, built at open and shared (immutable).

type constNorms uint8

func (c constNorms) Norm(int) uint8 { return uint8(c) }

type denseNorms []byte

func (d denseNorms) Norm(doc int) uint8 { return d[doc] }

type sparseNorms struct {
	docs  []byte // u32 each
	norms []byte
}

func (s *sparseNorms) Norm(doc int) uint8 {
	n := len(s.norms)
	i := sort.Search(n, func(i int) bool { return int(binary.LittleEndian.Uint32(s.docs[4*i:])) >= doc })
	if i < n && int(binary.LittleEndian.Uint32(s.docs[4*i:])) == doc {
		return s.norms[i]
	}
	return 0
}

func readNormsMeta(r *reader, body []byte, maxDoc int) index.NormsReader {
	switch kind := r.byte1(); kind {
	case normsConst:
		return constNorms(r.byte1())
	case normsDense:
		off := r.uint(len(body), "norms offset")
		if r.err == nil && len(body)-off < maxDoc {
			r.fail("dense norms past end")
		}
		if r.err != nil {
			return nil
		}
		return denseNorms(body[off : off+maxDoc])
	case normsSparse:
		off := r.uint(len(body), "norms offset")
		n := r.uint(maxDoc, "norms count")
		if r.err == nil && (len(body)-off)/5 < n {
			r.fail("sparse norms past end")
		}
		if r.err != nil {
			return nil
		}
		return &sparseNorms{docs: body[off : off+4*n], norms: body[off+4*n : off+5*n]}
	default:
		r.fail("unknown norms encoding %d", kind)
		return nil
	}
}

// packedInts reads n values of width bits written by appendPacked.
type packedInts struct {
	data  []byte
	width uint
	mask  uint64
}

func readPacked(r *reader, body []byte, n, width int) packedInts {
	if width > 64 || (width > 57 && width != 64) {
		r.fail("bad packed width %d", width)
		return packedInts{}
	}
	off := r.uint(len(body), "packed values offset")
	need := (n*width+7)/8 + 8
	if r.err == nil && len(body)-off < need {
		r.fail("packed values past end")
	}
	if r.err != nil {
		return packedInts{}
	}
	p := packedInts{data: body[off : off+need], width: uint(width)}
	if width < 64 {
		p.mask = 1<<uint(width) - 1
	} else {
		p.mask = math.MaxUint64
	}
	return p
}

func (p *packedInts) get(i int) uint64 {
	switch p.width {
	case 0:
		return 0
	case 64:
		return binary.LittleEndian.Uint64(p.data[8*i:])
	}
	bit := uint(i) * p.width
	return binary.LittleEndian.Uint64(p.data[bit>>3:]) >> (bit & 7) & p.mask
}

type numericValues struct {
	layout   byte
	has      []byte // bitset words (dvBitset)
	docs     []byte // u32 doc list (dvSparse)
	count    int
	table    []byte // u64 values (dvTable)
	min, gcd uint64
	vals     packedInts
}

func (nv *numericValues) value(i int) int64 {
	v := nv.vals.get(i)
	if nv.table != nil {
		// .dvd is not checksummed at open: a corrupt index must not read
		// past the table (CheckIntegrity reports it).
		if v >= uint64(len(nv.table)/8) {
			return 0
		}
		return int64(binary.LittleEndian.Uint64(nv.table[8*v:]))
	}
	return int64(nv.min + v*nv.gcd)
}

// Get implements index.NumericDocValues.
func (nv *numericValues) Get(doc int) (int64, bool) {
	switch nv.layout {
	case dvAll:
		return nv.value(doc), true
	case dvBitset:
		if binary.LittleEndian.Uint64(nv.has[8*(doc>>6):])&(1<<(uint(doc)&63)) == 0 {
			return 0, false
		}
		return nv.value(doc), true
	case dvSparse:
		i := sort.Search(nv.count, func(i int) bool { return int(binary.LittleEndian.Uint32(nv.docs[4*i:])) >= doc })
		if i < nv.count && int(binary.LittleEndian.Uint32(nv.docs[4*i:])) == doc {
			return nv.value(i), true
		}
	}
	return 0, false
}

func readNumericMeta(r *reader, body []byte, maxDoc int) index.NumericDocValues {
	nv := &numericValues{layout: r.byte1()}
	if nv.layout == dvNone {
		return nil
	}
	if nv.layout > dvNone {
		r.fail("unknown doc values layout %d", nv.layout)
		return nil
	}
	nv.count = r.uint(maxDoc, "doc values count")
	n := maxDoc
	switch nv.layout {
	case dvBitset:
		nv.has = r.region2(body, 8*((maxDoc+63)/64), "doc values bitset")
	case dvSparse:
		nv.docs = r.region2(body, 4*nv.count, "doc values docs")
		n = nv.count
	}
	switch enc := r.byte1(); enc {
	case dvTable:
		size := r.uint(256, "table size")
		nv.table = r.region2(body, 8*size, "doc values table")
		width := int(r.byte1())
		if r.err == nil && (size == 0 || uint64(size-1)>>uint(min(width, 63)) != 0) {
			r.fail("table of %d values with width %d", size, width)
		}
		nv.vals = readPacked(r, body, n, width)
	case dvDeltaGCD:
		nv.min, nv.gcd = r.u64(), r.u64()
		nv.vals = readPacked(r, body, n, int(r.byte1()))
	default:
		r.fail("unknown doc values encoding %d", enc)
	}
	if r.err != nil {
		return nil
	}
	return nv
}

// region2 reads an offset and returns body[off:off+n].
func (r *reader) region2(body []byte, n int, what string) []byte {
	off := r.uint(len(body), what+" offset")
	if r.err == nil && len(body)-off < n {
		r.fail("%s past end", what)
	}
	if r.err != nil {
		return nil
	}
	return body[off : off+n]
}

type sortedValues struct {
	n       int
	offsets []byte // u32 * (n+1)
	blob    []byte
	ords    packedInts
}

// Ord implements index.SortedDocValues.
func (s *sortedValues) Ord(doc int) int {
	o := int(s.ords.get(doc)) - 1
	if o >= s.n {
		return -1 // corrupt (.dvd is verified by CheckIntegrity, not at open)
	}
	return o
}

// LookupOrd implements index.SortedDocValues (aliases the mmap'd file).
func (s *sortedValues) LookupOrd(ord int) []byte {
	a := binary.LittleEndian.Uint32(s.offsets[4*ord:])
	b := binary.LittleEndian.Uint32(s.offsets[4*ord+4:])
	return s.blob[a:b]
}

// ValueCount implements index.SortedDocValues.
func (s *sortedValues) ValueCount() int { return s.n }

func readSortedMeta(r *reader, body []byte, maxDoc int) index.SortedDocValues {
	s := &sortedValues{n: r.uint(len(body), "value count")}
	if s.n == 0 || r.err != nil {
		return nil
	}
	s.offsets = r.region2(body, 4*(s.n+1), "sorted offsets")
	s.blob = r.region(body, "sorted terms")
	width := int(r.byte1())
	s.ords = readPacked(r, body, maxDoc, width)
	if r.err != nil {
		return nil
	}
	// Offsets are checked once here so LookupOrd can slice without checks.
	prev := uint32(0)
	for i := 0; i <= s.n; i++ {
		o := binary.LittleEndian.Uint32(s.offsets[4*i:])
		if o < prev || int(o) > len(s.blob) || (i == 0 && o != 0) {
			r.fail("sorted term offsets not monotonic")
			return nil
		}
		prev = o
	}
	return s
}
