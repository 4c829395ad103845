package translog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// genInfo summarizes one generation file's records.
type genInfo struct {
	gen            uint64
	size           int64 // header and records
	ops            int64
	minSeq, maxSeq uint64 // minSeq > maxSeq when there are no ops
	lastCRC        uint32 // the chain's tail: prev of the next record
}

func emptyGen(gen uint64, headerCRC uint32) genInfo {
	return genInfo{gen: gen, size: fileHeaderSize, minSeq: math.MaxUint64, lastCRC: headerCRC}
}

func (g *genInfo) add(op *Op, recordSize int64, crc uint32) {
	g.ops++
	g.size += recordSize
	g.minSeq = min(g.minSeq, op.SeqNo)
	g.maxSeq = max(g.maxSeq, op.SeqNo)
	g.lastCRC = crc
}

// badRecord says where and why reading stopped before the end of a file.
type badRecord struct {
	off    int64
	reason string
	// fatal: the record is intact but wrong (broken chain, malformed op),
	// which no torn write produces.
	fatal bool
}

// recordReader reads the records of one generation file up to a size.
type recordReader struct {
	f    *os.File
	r    *bufio.Reader
	off  int64 // offset of the next record
	size int64
	info genInfo
	buf  []byte
	op   Op
}

func newRecordReader(f *os.File, gen uint64, uuid UUID, size int64) (*recordReader, error) {
	crc, err := readFileHeader(f, gen, uuid)
	if err != nil {
		return nil, err
	}
	return &recordReader{
		f:    f,
		r:    bufio.NewReaderSize(io.NewSectionReader(f, fileHeaderSize, size-fileHeaderSize), 256<<10),
		off:  fileHeaderSize,
		size: size,
		info: emptyGen(gen, crc),
	}, nil
}

// next returns the next op (aliasing the reader's buffer), io.EOF at the
// end, or a *badRecord.
func (rr *recordReader) next() (*Op, error) {
	if rr.off == rr.size {
		return nil, io.EOF
	}
	bad := func(reason string, fatal bool) error { return &badRecord{off: rr.off, reason: reason, fatal: fatal} }
	if rr.size-rr.off < recordHeaderSize {
		return nil, bad("incomplete record header", false)
	}
	var h [recordHeaderSize]byte
	if _, err := io.ReadFull(rr.r, h[:]); err != nil {
		return nil, fmt.Errorf("translog: reading %s: %w", rr.f.Name(), err)
	}
	n := int64(binary.LittleEndian.Uint32(h[0:]))
	switch {
	case n < minPayload || n > MaxOpSize:
		return nil, bad(fmt.Sprintf("bad record length %d", n), false)
	case rr.off+recordHeaderSize+n > rr.size:
		return nil, bad("record runs past the end of the file", false)
	}
	if int64(cap(rr.buf)) < n {
		rr.buf = make([]byte, n)
	}
	payload := rr.buf[:n]
	if _, err := io.ReadFull(rr.r, payload); err != nil {
		return nil, fmt.Errorf("translog: reading %s: %w", rr.f.Name(), err)
	}
	crc := binary.LittleEndian.Uint32(h[4:])
	if recordCRC(h[:], payload) != crc {
		return nil, bad("checksum mismatch", false)
	}
	if prev := binary.LittleEndian.Uint32(h[8:]); prev != rr.info.lastCRC {
		return nil, bad(fmt.Sprintf("record chain broken (prev %08x, want %08x)", prev, rr.info.lastCRC), true)
	}
	if err := decodeOp(payload, &rr.op); err != nil {
		return nil, bad(err.Error(), true)
	}
	rr.info.add(&rr.op, recordHeaderSize+n, crc)
	rr.off += recordHeaderSize + n
	return &rr.op, nil
}

// tornTail decides whether the bad record at off in a file of size bytes is
// a torn write (true: truncate there) or corruption. It is torn when the
// record reaches past the end of the file or holds a whole zeroed 512-byte
// sector (the write never reached it, as etcd's WAL reasons), or when no
// valid record follows it; a valid record after a damaged one means the
// damage is in the middle.
func tornTail(f *os.File, off, size int64, b *badRecord) (bool, string, error) {
	if b.fatal {
		return false, b.reason, nil
	}
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil {
		return false, "", fmt.Errorf("translog: reading %s: %w", f.Name(), err)
	}
	if len(tail) >= recordHeaderSize {
		n := int64(binary.LittleEndian.Uint32(tail))
		if n >= minPayload && n <= MaxOpSize {
			end := recordHeaderSize + n
			if end > int64(len(tail)) {
				return true, b.reason, nil
			}
			if hasZeroSector(tail[:end], off) {
				return true, b.reason + " (a zeroed sector: torn write)", nil
			}
		}
	}
	if at := nextValidRecord(tail); at >= 0 {
		return false, fmt.Sprintf("%s, followed by a valid record at offset %d", b.reason, off+int64(at)), nil
	}
	return true, b.reason, nil
}

const sectorSize = 512

// hasZeroSector reports whether rec, which starts at file offset off,
// contains an aligned all-zero sector.
func hasZeroSector(rec []byte, off int64) bool {
	first := (sectorSize - off%sectorSize) % sectorSize
	for s := first; s+sectorSize <= int64(len(rec)); s += sectorSize {
		zero := true
		for _, c := range rec[s : s+sectorSize] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
	}
	return false
}

// nextValidRecord returns the offset in tail (after 0) of the first record
// that checks out on its own — sane length, known op type, matching crc —
// or -1.
func nextValidRecord(tail []byte) int {
	for o := 1; o+recordHeaderSize+minPayload <= len(tail); o++ {
		n := int(binary.LittleEndian.Uint32(tail[o:]))
		if n < minPayload || o+recordHeaderSize+n > len(tail) {
			continue
		}
		if t := OpType(tail[o+recordHeaderSize]); t < OpIndex || t > OpNoOp {
			continue
		}
		h := tail[o : o+recordHeaderSize]
		if recordCRC(h, tail[o+recordHeaderSize:o+recordHeaderSize+n]) == binary.LittleEndian.Uint32(h[4:]) {
			return o
		}
	}
	return -1
}

func (b *badRecord) Error() string {
	return fmt.Sprintf("bad record at offset %d: %s", b.off, b.reason)
}

func asBad(err error) (*badRecord, bool) {
	var b *badRecord
	ok := errors.As(err, &b)
	return b, ok
}
