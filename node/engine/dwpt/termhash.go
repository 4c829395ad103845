package dwpt

import (
	"bytes"
	"hash/maphash"
)

// MaxTermLength is the longest term, in bytes, a DWPT accepts (Lucene's
// IndexWriter.MAX_TERM_LENGTH); its length prefix fits in two bytes.
const MaxTermLength = 1<<15 - 2

var hashSeed = maphash.MakeSeed()

// termHash maps term bytes to dense term ids 0..n-1 (Lucene's BytesRefHash).
// Term bytes are stored once in the shared bytePool with a 1-2 byte length
// prefix; the table is open addressing over int32 ids with the hash kept
// beside each id so probes rarely touch term bytes. No Go string or per-term
// object is ever allocated.
type termHash struct {
	pool      *bytePool
	slots     []hslot
	textStart paged[int32] // term id -> address of its length-prefixed bytes
	mask      uint32
}

// hslot is one table entry; id and hash side by side cost one cache miss.
type hslot struct {
	id   int32 // term id + 1; 0 = empty
	hash uint32
}

const initialHashSize = 16

func (h *termHash) init(pool *bytePool) {
	h.pool = pool
	h.textStart.pool = &int32Pages
	h.slots = slotTables.get(initialHashSize)
	clear(h.slots)
	h.mask = initialHashSize - 1
}

func (h *termHash) size() int { return h.textStart.len() }

// term returns the bytes of term id, aliasing the pool.
func (h *termHash) term(id int32) []byte {
	b := h.pool.at(*h.textStart.at(id))
	if b[0] < 0x80 {
		return b[1 : 1+int(b[0])]
	}
	n := int(b[0]&0x7f) | int(b[1])<<7
	return b[2 : 2+n]
}

func hashTerm(t []byte) uint32 {
	h := maphash.Bytes(hashSeed, t)
	return uint32(h ^ h>>32)
}

// find returns the id of term, or -1.
func (h *termHash) find(t []byte) int32 {
	if h.slots == nil {
		return -1
	}
	code := hashTerm(t)
	for i := code & h.mask; ; i = (i + 1) & h.mask {
		s := h.slots[i]
		if s.id == 0 {
			return -1
		}
		if s.hash == code && bytes.Equal(h.term(s.id-1), t) {
			return s.id - 1
		}
	}
}

// add returns the id of term, adding it if new (isNew).
func (h *termHash) add(t []byte) (id int32, isNew bool) {
	code := hashTerm(t)
	i := code & h.mask
	for {
		s := h.slots[i]
		if s.id == 0 {
			break
		}
		if s.hash == code && bytes.Equal(h.term(s.id-1), t) {
			return s.id - 1, false
		}
		i = (i + 1) & h.mask
	}
	id = int32(h.textStart.len())
	h.textStart.append(h.storeTerm(t))
	h.slots[i] = hslot{id: id + 1, hash: code}
	if uint32(h.textStart.len())*2 > h.mask { // keep load <= 1/2
		h.rehash()
	}
	return id, true
}

func (h *termHash) storeTerm(t []byte) int32 {
	n := len(t)
	prefix := 1
	if n >= 0x80 {
		prefix = 2
	}
	addr := h.pool.reserve(n + prefix)
	b := h.pool.at(addr)
	if prefix == 1 {
		b[0] = byte(n)
	} else {
		b[0] = byte(n&0x7f) | 0x80
		b[1] = byte(n >> 7)
	}
	copy(b[prefix:], t)
	return addr
}

func (h *termHash) rehash() {
	n := uint32(len(h.slots)) * 2
	slots := slotTables.get(int(n))
	clear(slots)
	mask := n - 1
	for _, s := range h.slots {
		if s.id == 0 {
			continue
		}
		j := s.hash & mask
		for slots[j].id != 0 {
			j = (j + 1) & mask
		}
		slots[j] = s
	}
	slotTables.put(h.slots)
	h.slots, h.mask = slots, mask
}

func (h *termHash) ramBytes() int64 {
	return int64(cap(h.slots))*8 + h.textStart.ramBytes()
}

// release recycles the table and the term addresses.
func (h *termHash) release() {
	if h.slots != nil {
		slotTables.put(h.slots)
	}
	h.textStart.release()
	h.slots, h.mask = nil, 0
}
