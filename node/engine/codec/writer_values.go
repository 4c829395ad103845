package codec

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Norms encodings.
const (
	normsConst  = 0 // every doc has the same byte (incl. no norms at all: 0)
	normsDense  = 1 // one byte per doc
	normsSparse = 2 // docs u32 sorted + one byte each, for docs with a nonzero norm
)

func (w *segmentWriter) writeNorms(fi *index.FieldInfo) {
	maxDoc := w.src.MaxDoc()
	nr := w.src.Norms(fi.Name)
	if nr == nil || maxDoc == 0 {
		w.meta.byte1(normsConst)
		w.meta.byte1(0)
		return
	}
	buf := slices.Grow(w.scratch[:0], maxDoc)[:maxDoc]
	nonzero := 0
	allSame := true
	for d := range buf {
		b := nr.Norm(d)
		buf[d] = b
		if b != 0 {
			nonzero++
		}
		if b != buf[0] {
			allSame = false
		}
	}
	w.scratch = buf[:0]
	switch {
	case allSame:
		w.meta.byte1(normsConst)
		w.meta.byte1(buf[0])
	case nonzero*8 < maxDoc: // 5 bytes per doc with norms beats 1 per doc
		w.meta.byte1(normsSparse)
		w.meta.uvarint(uint64(w.nvd.pos()))
		w.meta.uvarint(uint64(nonzero))
		for d, b := range buf {
			if b != 0 {
				w.nvd.u32(uint32(d))
			}
		}
		for _, b := range buf {
			if b != 0 {
				w.nvd.byte1(b)
			}
		}
	default:
		w.meta.byte1(normsDense)
		w.meta.uvarint(uint64(w.nvd.pos()))
		w.nvd.write(buf)
	}
	w.nvd.maybeFlush()
}

// Numeric doc values: which docs have a value ...
const (
	dvAll    = 0 // every doc
	dvBitset = 1 // a presence bitset; values stored for every doc
	dvSparse = 2 // sorted u32 doc list; values only for those docs
	dvNone   = 3 // no doc has a value
)

// ... and how values are encoded.
const (
	dvDeltaGCD = 0 // (v - min) / gcd, bit-packed
	dvTable    = 1 // index into a table of <= 256 distinct values, bit-packed
)

// packedWidth rounds a bit width up to one random access can read with a
// single unaligned 8-byte load (<= 57 bits), else 64.
func packedWidth(w int) int {
	if w > 57 {
		return 64
	}
	return w
}

// appendPacked appends values bit-packed LSB-first with width bits each and 8
// bytes of padding, so readers can always load 8 bytes.
func appendPacked(dst []byte, n int, width int, value func(i int) uint64) []byte {
	if width == 64 {
		for i := 0; i < n; i++ {
			dst = appendU64(dst, value(i))
		}
		return append(dst, make([]byte, 8)...)
	}
	var acc uint64
	var nbits int
	for i := 0; i < n && width > 0; i++ {
		v := value(i)
		acc |= v << uint(nbits)
		nbits += width
		if nbits >= 64 {
			dst = appendU64(dst, acc)
			nbits -= 64
			acc = 0
			if nbits > 0 {
				acc = v >> uint(width-nbits)
			}
		}
	}
	for nbits > 0 {
		dst = append(dst, byte(acc))
		acc >>= 8
		nbits -= 8
	}
	return append(dst, make([]byte, 8)...)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (w *segmentWriter) writeNumeric(fi *index.FieldInfo) {
	maxDoc := w.src.MaxDoc()
	ndv := w.src.NumericDocValues(fi.Name)
	vals := make([]int64, 0, maxDoc)
	var docs []uint32
	has := index.NewFixedBitSet(maxDoc)
	minV, maxV := int64(math.MaxInt64), int64(math.MinInt64)
	if ndv != nil {
		for d := 0; d < maxDoc; d++ {
			if v, ok := ndv.Get(d); ok {
				has.Set(d)
				docs = append(docs, uint32(d))
				vals = append(vals, v)
				minV, maxV = min(minV, v), max(maxV, v)
			}
		}
	}
	count := len(vals)
	layout := dvBitset
	switch {
	case count == 0:
		w.meta.byte1(dvNone)
		return
	case count == maxDoc:
		layout = dvAll
	case count*16 < maxDoc:
		layout = dvSparse
	}
	w.meta.byte1(byte(layout))
	w.meta.uvarint(uint64(count))
	switch layout {
	case dvBitset:
		w.meta.uvarint(uint64(w.dvd.pos()))
		for _, x := range has.Words() {
			w.dvd.u64(x)
		}
		// Values for every doc: missing ones take minV (delta 0).
		full := make([]int64, maxDoc)
		for i := range full {
			full[i] = minV
		}
		for i, d := range docs {
			full[d] = vals[i]
		}
		vals = full
	case dvSparse:
		w.meta.uvarint(uint64(w.dvd.pos()))
		for _, d := range docs {
			w.dvd.u32(d)
		}
	}
	// Table encoding when few distinct values (booleans, enums, dates
	// rounded to days) and it is narrower than delta/gcd.
	distinct := map[int64]struct{}{}
	var g uint64
	for _, v := range vals {
		if len(distinct) <= 256 {
			distinct[v] = struct{}{}
		}
		g = gcd(g, uint64(v)-uint64(minV))
	}
	if g == 0 {
		g = 1
	}
	deltaWidth := packedWidth(bits.Len64((uint64(maxV) - uint64(minV)) / g))
	if len(distinct) <= 256 && bits.Len(uint(len(distinct)-1)) < deltaWidth {
		table := make([]int64, 0, len(distinct))
		for v := range distinct {
			table = append(table, v)
		}
		slices.Sort(table)
		width := bits.Len(uint(len(table) - 1))
		w.meta.byte1(dvTable)
		w.meta.uvarint(uint64(len(table)))
		w.meta.uvarint(uint64(w.dvd.pos()))
		for _, v := range table {
			w.dvd.u64(uint64(v))
		}
		w.meta.byte1(byte(width))
		w.meta.uvarint(uint64(w.dvd.pos()))
		w.dvd.buf = appendPacked(w.dvd.buf, len(vals), width, func(i int) uint64 {
			j, _ := slices.BinarySearch(table, vals[i])
			return uint64(j)
		})
	} else {
		w.meta.byte1(dvDeltaGCD)
		w.meta.u64(uint64(minV))
		w.meta.u64(g)
		w.meta.byte1(byte(deltaWidth))
		w.meta.uvarint(uint64(w.dvd.pos()))
		w.dvd.buf = appendPacked(w.dvd.buf, len(vals), deltaWidth, func(i int) uint64 {
			return (uint64(vals[i]) - uint64(minV)) / g
		})
	}
	w.dvd.maybeFlush()
}

func (w *segmentWriter) writeSorted(fi *index.FieldInfo) {
	maxDoc := w.src.MaxDoc()
	sdv := w.src.SortedDocValues(fi.Name)
	n := 0
	if sdv != nil {
		n = sdv.ValueCount()
	}
	w.meta.uvarint(uint64(n))
	if n == 0 {
		return
	}
	// Terms: u32 offsets (n+1) then the concatenated bytes.
	w.meta.uvarint(uint64(w.dvd.pos()))
	off := uint32(0)
	w.dvd.u32(0)
	for o := 0; o < n; o++ {
		off += uint32(len(sdv.LookupOrd(o)))
		w.dvd.u32(off)
		w.dvd.maybeFlush()
	}
	w.meta.uvarint(uint64(w.dvd.pos()))
	w.meta.uvarint(uint64(off))
	for o := 0; o < n; o++ {
		w.dvd.write(sdv.LookupOrd(o))
	}
	// Ords + 1 per doc, 0 = no value.
	width := packedWidth(bits.Len(uint(n)))
	w.meta.byte1(byte(width))
	w.meta.uvarint(uint64(w.dvd.pos()))
	w.dvd.buf = appendPacked(w.dvd.buf, maxDoc, width, func(d int) uint64 {
		return uint64(sdv.Ord(d) + 1)
	})
	w.dvd.maybeFlush()
}

func (w *segmentWriter) writeStored() error {
	maxDoc := w.src.MaxDoc()
	comp := w.opts.StoredCompression
	w.meta.byte1(byte(comp))
	sf := w.src.StoredFields()
	var sd index.StoredDoc
	raw := make([]byte, 0, w.opts.StoredBlockSize+1024)
	var compBuf []byte
	var index []byte
	first, numBlocks := 0, 0
	flush := func(end int) error {
		if len(raw) > maxStoredBlock {
			return fmt.Errorf("stored fields of docs %d..%d: %d bytes, over the %d limit", first, end-1, len(raw), maxStoredBlock)
		}
		var err error
		compBuf, err = compress(comp, compBuf[:0], raw)
		if err != nil {
			return err
		}
		index = appendU32(index, uint32(first))
		index = appendU64(index, uint64(w.fdt.pos()))
		w.fdt.uvarint(uint64(end - first))
		w.fdt.uvarint(uint64(len(raw)))
		w.fdt.uvarint(uint64(len(compBuf)))
		w.fdt.write(compBuf)
		w.fdt.maybeFlush()
		numBlocks++
		first = end
		raw = raw[:0]
		return nil
	}
	for d := 0; d < maxDoc; d++ {
		if err := sf.Document(d, &sd); err != nil {
			return fmt.Errorf("stored fields of doc %d: %w", d, err)
		}
		raw = appendStoredDoc(raw, &sd)
		if len(raw) >= w.opts.StoredBlockSize {
			if err := flush(d + 1); err != nil {
				return err
			}
			if err := w.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if first < maxDoc {
		if err := flush(maxDoc); err != nil {
			return err
		}
	}
	w.meta.uvarint(uint64(numBlocks))
	w.meta.uvarint(uint64(w.fdt.pos()))
	w.fdt.write(index)
	return nil
}
