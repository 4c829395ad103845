package translog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// OpType is what an operation does.
type OpType uint8

const (
	OpIndex  OpType = iota + 1 // index (add or replace) a document
	OpDelete                   // delete a document by _id
	OpNoOp                     // fill a sequence-number gap (Source may hold a reason)
	// OpTrim is a trim record, not an operation: operations appended
	// before it whose PrimaryTerm is below its PrimaryTerm and whose SeqNo
	// is above its SeqNo are void (a new primary's resync: they came from
	// an older primary and were never acknowledged). It has no ID, Source
	// or Routing. Snapshots apply trim records and never return them.
	OpTrim
	// OpUpdateDocValues sets doc-value fields of the live document with
	// ID in place; Source holds the fields as a JSON object.
	OpUpdateDocValues
)

func (t OpType) String() string {
	switch t {
	case OpIndex:
		return "index"
	case OpDelete:
		return "delete"
	case OpNoOp:
		return "noop"
	case OpTrim:
		return "trim"
	case OpUpdateDocValues:
		return "update_doc_values"
	}
	return fmt.Sprintf("OpType(%d)", uint8(t))
}

// Op is one translog operation. Ops returned by a Snapshot alias its
// buffer until the next call to Next.
type Op struct {
	Type  OpType
	SeqNo uint64
	// PrimaryTerm is the term of the primary that assigned SeqNo. Records
	// of generations written before version 3 carry 0, which reads as 1:
	// the shard's first and, then, only primary.
	PrimaryTerm uint64
	ID          []byte
	Source      []byte // _source for OpIndex
	Routing     []byte // optional custom routing
}

// Record framing, little endian:
//
//	length u32 | crc u32 | prev u32 | payload[length]
//
// crc is CRC-32C over length, prev and payload; prev is the crc of the
// record before (for the first record, the file header's crc). Each record
// can be checked alone, which recovery uses to look for valid data after a
// bad record, and the chain of prev values proves the order: a record
// spliced in from elsewhere breaks it.
const (
	recordHeaderSize = 12
	// minPayload is the smallest payload: type and five one-byte varints.
	minPayload = 6
	// MaxOpSize bounds one encoded operation.
	MaxOpSize = 1 << 28
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// validate rejects ops appendRecord cannot encode.
func (op *Op) validate() error {
	if op.Type < OpIndex || op.Type > OpUpdateDocValues {
		return fmt.Errorf("translog: unknown op type %d", op.Type)
	}
	if op.Type == OpTrim && len(op.ID)+len(op.Source)+len(op.Routing) > 0 {
		return errors.New("translog: a trim record carries no id, source or routing")
	}
	if n := 1 + 5*binary.MaxVarintLen64 + len(op.ID) + len(op.Source) + len(op.Routing); n > MaxOpSize {
		return fmt.Errorf("translog: operation of about %d bytes exceeds %d", n, MaxOpSize)
	}
	return nil
}

// appendRecord appends op, framed and chained to prev, to dst; it returns
// the record's crc (the next record's prev).
func appendRecord(dst []byte, op *Op, prev uint32) ([]byte, uint32, error) {
	if err := op.validate(); err != nil {
		return dst, 0, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize)...)
	dst = append(dst, byte(op.Type))
	dst = binary.AppendUvarint(dst, op.SeqNo)
	dst = binary.AppendUvarint(dst, op.PrimaryTerm)
	for _, b := range [...][]byte{op.ID, op.Source, op.Routing} {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	n := len(dst) - start - recordHeaderSize
	h := dst[start : start+recordHeaderSize]
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint32(h[8:], prev)
	crc := recordCRC(h, dst[start+recordHeaderSize:])
	binary.LittleEndian.PutUint32(h[4:], crc)
	return dst, crc, nil
}

// recordCRC computes a record's crc from its header (crc field ignored) and
// payload.
func recordCRC(header, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, header[0:4])
	c = crc32.Update(c, castagnoli, header[8:12])
	return crc32.Update(c, castagnoli, payload)
}

var errBadPayload = errors.New("malformed operation")

// decodeOp parses a payload into op; op's byte slices alias payload.
func decodeOp(payload []byte, op *Op) error {
	if len(payload) < minPayload {
		return errBadPayload
	}
	op.Type = OpType(payload[0])
	if op.Type < OpIndex || op.Type > OpUpdateDocValues {
		return fmt.Errorf("%w: unknown type %d", errBadPayload, payload[0])
	}
	p := payload[1:]
	var ok bool
	if op.SeqNo, p, ok = uvarint(p); !ok {
		return errBadPayload
	}
	if op.PrimaryTerm, p, ok = uvarint(p); !ok {
		return errBadPayload
	}
	for _, dst := range [...]*[]byte{&op.ID, &op.Source, &op.Routing} {
		var n uint64
		if n, p, ok = uvarint(p); !ok || n > uint64(len(p)) {
			return errBadPayload
		}
		*dst, p = p[:n:n], p[n:]
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errBadPayload, len(p))
	}
	if op.Type == OpTrim && len(op.ID)+len(op.Source)+len(op.Routing) > 0 {
		return fmt.Errorf("%w: trim record with a body", errBadPayload)
	}
	return nil
}

func uvarint(p []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, p, false
	}
	return v, p[n:], true
}
