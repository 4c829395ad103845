package codec

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// storedMeta locates the stored-fields blocks: an index of (first doc u32,
// offset u64) per block at the end of .fdt.
//
// A doc in a block is uvarint(len(_id)<<1 | hasRouting), _id, [uvarint
// len(_routing), _routing], uvarint len(_source), _source: only docs with a
// routing pay for it. Format version 1 has no flag bit: uvarint len(_id).
type storedMeta struct {
	file      string
	comp      Compression
	body      []byte
	index     []byte
	numBlocks int
	maxDoc    int
	routing   bool // docs carry the routing flag (format version >= 2)
}

const storedIndexEntry = 12

func readStoredMeta(r *reader, body []byte, maxDoc int, file string, routing bool) storedMeta {
	m := storedMeta{file: file, body: body, maxDoc: maxDoc, routing: routing}
	m.comp = Compression(r.byte1())
	m.numBlocks = r.uint(maxDoc, "stored block count")
	m.index = r.region2(body, storedIndexEntry*m.numBlocks, "stored index")
	if r.err == nil && m.comp != CompressionZstd && m.comp != CompressionS2 {
		r.fail("unknown stored-fields compression %d", m.comp)
	}
	if r.err == nil && (maxDoc > 0) != (m.numBlocks > 0) {
		r.fail("%d stored blocks for %d docs", m.numBlocks, maxDoc)
	}
	return m
}

func (m *storedMeta) firstDoc(b int) int {
	return int(binary.LittleEndian.Uint32(m.index[storedIndexEntry*b:]))
}

// storedReader decompresses one block at a time and keeps the last one, so
// reading docs in order decompresses each block once.
type storedReader struct {
	m      *storedMeta
	block  int // cached block, -1 if none
	first  int // first doc of the cached block
	numDoc int
	raw    []byte
	starts []int32 // offset in raw of each doc of the cached block
}

func (s *storedReader) corrupt(off int, format string, args ...any) error {
	s.block = -1
	return corruptf(s.m.file, off, format, args...)
}

// loadBlock decompresses block b into s.raw.
func (s *storedReader) loadBlock(b int) error {
	m := s.m
	off64 := binary.LittleEndian.Uint64(m.index[storedIndexEntry*b+4:])
	if off64 >= uint64(len(m.body)) {
		return s.corrupt(0, "block %d offset %d out of range", b, off64)
	}
	r := reader{b: m.body, off: int(off64), file: m.file}
	numDoc := r.uint(m.maxDoc, "block doc count")
	rawLen := r.uint(maxStoredBlock, "block length")
	compLen := r.uint(len(m.body), "compressed length")
	comp := r.bytes(compLen)
	if r.err != nil {
		s.block = -1
		return r.err
	}
	first := m.firstDoc(b)
	if numDoc == 0 || first+numDoc > m.maxDoc {
		return s.corrupt(int(off64), "block %d: docs %d+%d past maxDoc %d", b, first, numDoc, m.maxDoc)
	}
	raw, err := decompress(m.comp, s.raw, comp, rawLen)
	if err != nil {
		return s.corrupt(int(off64), "block %d: %v", b, err)
	}
	s.raw, s.block, s.first, s.numDoc = raw, b, first, numDoc
	// Index the docs once per block, so each Document is O(1).
	s.starts = s.starts[:0]
	br := reader{b: raw, file: m.file}
	for i := 0; i < numDoc; i++ {
		s.starts = append(s.starts, int32(br.off))
		m.readDoc(&br, len(raw))
	}
	if br.err != nil || br.off != len(raw) {
		return s.corrupt(int(off64), "block %d: docs do not fill the block", b)
	}
	return nil
}

// Document implements index.StoredFieldsReader.
func (s *storedReader) Document(doc int, dst *index.StoredDoc) error {
	m := s.m
	if doc < 0 || doc >= m.maxDoc {
		return fmt.Errorf("codec: stored fields: doc %d out of range [0,%d)", doc, m.maxDoc)
	}
	if s.block < 0 || doc < s.first || doc >= s.first+s.numDoc {
		b := sort.Search(m.numBlocks, func(i int) bool { return m.firstDoc(i) > doc }) - 1
		if b < 0 {
			return s.corrupt(0, "no block holds doc %d", doc)
		}
		if err := s.loadBlock(b); err != nil {
			return err
		}
		if doc < s.first || doc >= s.first+s.numDoc {
			return s.corrupt(0, "block %d does not hold doc %d", b, doc)
		}
	}
	r := reader{b: s.raw, off: int(s.starts[doc-s.first]), file: s.m.file}
	id, routing, src := m.readDoc(&r, len(s.raw))
	if r.err != nil {
		s.block = -1
		return fmt.Errorf("stored block %d: %w", s.block, r.err)
	}
	// Copied into dst's buffers (allocation-free once they have grown)
	// so callers may keep or modify them without touching the cache.
	dst.ID = append(dst.ID[:0], id...)
	dst.Routing = append(dst.Routing[:0], routing...)
	dst.Source = append(dst.Source[:0], src...)
	return nil
}

// readDoc decodes one doc of a block; r.err is set if it does not fit.
func (m *storedMeta) readDoc(r *reader, limit int) (id, routing, src []byte) {
	n := r.uint(2*limit+1, "id length")
	if m.routing {
		id = r.bytes(n >> 1)
		if n&1 != 0 {
			routing = r.bytes(r.uint(limit, "routing length"))
		}
	} else {
		id = r.bytes(n)
	}
	src = r.bytes(r.uint(limit, "source length"))
	return id, routing, src
}

// appendStoredDoc encodes one doc of a block (the format storedMeta reads).
func appendStoredDoc(raw []byte, sd *index.StoredDoc) []byte {
	n := uint64(len(sd.ID)) << 1
	if len(sd.Routing) > 0 {
		n |= 1
	}
	raw = appendUvarint(raw, n)
	raw = append(raw, sd.ID...)
	if len(sd.Routing) > 0 {
		raw = appendUvarint(raw, uint64(len(sd.Routing)))
		raw = append(raw, sd.Routing...)
	}
	raw = appendUvarint(raw, uint64(len(sd.Source)))
	return append(raw, sd.Source...)
}
