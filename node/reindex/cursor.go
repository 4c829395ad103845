package reindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
)

// cursor is a slice's checkpoint: the next shard-wide doc to read in the
// reader whose segment layout hashes to fingerprint. Doc ids are only
// meaningful in that layout; a resume against another layout starts over.
type cursor struct {
	fingerprint uint64
	next        int
}

const cursorVersion = 1

// ErrBadCursor says a cursor is not one this package wrote.
var ErrBadCursor = errors.New("malformed reindex cursor")

func (c cursor) encode() []byte {
	b := make([]byte, 0, 1+8+binary.MaxVarintLen64)
	b = append(b, cursorVersion)
	b = binary.LittleEndian.AppendUint64(b, c.fingerprint)
	return binary.AppendUvarint(b, uint64(c.next))
}

// decodeCursor parses a cursor; an empty one means "from the start".
func decodeCursor(b []byte) (c cursor, ok bool, err error) {
	if len(b) == 0 {
		return cursor{}, false, nil
	}
	if len(b) < 10 || b[0] != cursorVersion {
		return cursor{}, false, ErrBadCursor
	}
	v, n := binary.Uvarint(b[9:])
	// Only the canonical varint: one position, one cursor.
	if n <= 0 || 9+n != len(b) || v > math.MaxInt32 || len(binary.AppendUvarint(nil, v)) != n {
		return cursor{}, false, ErrBadCursor
	}
	return cursor{fingerprint: binary.LittleEndian.Uint64(b[1:9]), next: int(v)}, true, nil
}

// fingerprint identifies a reader's segment layout: per leaf its size, live
// count and the _ids of its first and last docs. A shard reopened from a
// commit with the same segments has the same fingerprint, so a slice can
// resume by doc position even after its node restarted.
func fingerprint(r *engine.Reader) (uint64, error) {
	h := xxhash.New()
	var buf [8]byte
	var sd index.StoredDoc
	for _, l := range r.Leaves() {
		maxDoc := l.Reader.MaxDoc()
		live := maxDoc
		if l.Live != nil {
			live = l.Live.Cardinality()
		}
		binary.LittleEndian.PutUint32(buf[:4], uint32(maxDoc))
		binary.LittleEndian.PutUint32(buf[4:], uint32(live))
		h.Write(buf[:])
		if maxDoc == 0 {
			continue
		}
		stored := l.Reader.StoredFields()
		for _, d := range []int{0, maxDoc - 1} {
			if err := stored.Document(d, &sd); err != nil {
				return 0, fmt.Errorf("fingerprint: doc %d: %w", l.DocBase+d, err)
			}
			binary.LittleEndian.PutUint32(buf[:4], uint32(len(sd.ID)))
			h.Write(buf[:4])
			h.Write(sd.ID)
		}
	}
	return h.Sum64(), nil
}
