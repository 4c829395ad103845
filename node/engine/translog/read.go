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
	maxTerm        uint64 // of its records, trim records included
	lastCRC        uint32 // the chain's tail: prev of the next record
}

func emptyGen(gen uint64, headerSize int64, headerCRC uint32) genInfo {
	return genInfo{gen: gen, size: headerSize, minSeq: math.MaxUint64, lastCRC: headerCRC}
}

// add counts a record. A trim record's SeqNo is a bound, not an
// operation's number: it leaves the seqno range alone.
func (g *genInfo) add(op *Op, recordSize int64, crc uint32) {
	g.ops++
	g.size += recordSize
	if op.Type != OpTrim {
		g.minSeq = min(g.minSeq, op.SeqNo)
		g.maxSeq = max(g.maxSeq, op.SeqNo)
	}
	g.maxTerm = max(g.maxTerm, op.PrimaryTerm)
	g.lastCRC = crc
}

// trimPoint is a trim record: where it is, and what it voids.
type trimPoint struct {
	gen         uint64
	off         int64
	term, above uint64
}

// voids reports whether the trim record voids op, read at offset off of
// generation gen: op was appended before it, by an older term, above its
// bound.
func (tp *trimPoint) voids(gen uint64, off int64, op *Op) bool {
	before := gen < tp.gen || gen == tp.gen && off < tp.off
	return before && op.PrimaryTerm < tp.term && op.SeqNo > tp.above
}

// badRecord says where and why reading stopped before the end of a file.
type badRecord struct {
	off    int64
	reason string
	// incomplete: the record runs past the end of the file, as a write cut
	// short leaves it.
	incomplete bool
}

// recordReader reads the records of one generation file up to a size.
type recordReader struct {
	f    *os.File
	r    *bufio.Reader
	hdr  genHeader
	off  int64 // offset of the next record
	size int64
	info genInfo
	buf  []byte
	op   Op
}

func newRecordReader(f *os.File, gen uint64, uuid UUID, size int64) (*recordReader, error) {
	hdr, err := readFileHeader(f, gen, uuid)
	if err != nil {
		return nil, err
	}
	return &recordReader{
		f:    f,
		r:    bufio.NewReaderSize(io.NewSectionReader(f, hdr.size, size-hdr.size), 256<<10),
		hdr:  hdr,
		off:  hdr.size,
		size: size,
		info: emptyGen(gen, hdr.size, hdr.crc),
	}, nil
}

// next returns the next op (aliasing the reader's buffer), io.EOF at the
// end, or a *badRecord.
func (rr *recordReader) next() (*Op, error) {
	if rr.off == rr.size {
		return nil, io.EOF
	}
	bad := func(reason string, incomplete bool) error {
		return &badRecord{off: rr.off, reason: reason, incomplete: incomplete}
	}
	if rr.size-rr.off < recordHeaderSize {
		return nil, bad("incomplete record header", true)
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
		return nil, bad("record runs past the end of the file", true)
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
		return nil, bad(fmt.Sprintf("record chain broken (prev %08x, want %08x)", prev, rr.info.lastCRC), false)
	}
	if err := decodeOp(payload, &rr.op); err != nil {
		return nil, bad(err.Error(), false)
	}
	if rr.hdr.version < firstTermVersion && rr.op.PrimaryTerm == 0 {
		rr.op.PrimaryTerm = 1
	}
	rr.info.add(&rr.op, recordHeaderSize+n, crc)
	rr.off += recordHeaderSize + n
	return &rr.op, nil
}

// zeroToEnd reports whether f holds only zero bytes from off to size: a
// write whose data never reached the disk while the file size did.
func zeroToEnd(f *os.File, off, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off == size) {
			return false, fmt.Errorf("translog: reading %s: %w", f.Name(), err)
		}
	}
	return true, nil
}

func (b *badRecord) Error() string {
	return fmt.Sprintf("bad record at offset %d: %s", b.off, b.reason)
}

func asBad(err error) (*badRecord, bool) {
	var b *badRecord
	ok := errors.As(err, &b)
	return b, ok
}
