package engine

import (
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
)

// delNode is one buffered delete-by-id in the global delete queue (Lucene's
// DocumentsWriterDeleteQueue, as a singly linked list). Nodes are appended
// under the writer's lock with increasing sequence numbers and never
// change afterwards. Every consumer — each DWPT, and each segment not yet
// brought up to date — holds a cursor to the last node it has applied, so
// consumed nodes become garbage by themselves.
type delNode struct {
	seq  int64
	id   []byte
	next atomic.Pointer[delNode]
}

// idDeleter applies deletes by id to one segment through a reused terms enum
// (one term-dictionary seek per id), for the refresh goroutine only.
type idDeleter struct {
	te index.TermsEnum
	pe index.PostingsEnum
}

// deleteID clears the live bits of docs with id; live is cloned first via
// cow when it is shared with a published reader. It returns the number of
// docs newly deleted.
func (s *segState) deleteID(id []byte) int {
	if !s.bloom.mayContain(id) {
		return 0
	}
	if s.ids.te == nil {
		t := s.reader.Terms(index.IDField)
		if t == nil {
			return 0
		}
		s.ids.te = t.Iterator()
	}
	if !s.ids.te.SeekExact(id) {
		return 0
	}
	s.ids.pe = s.ids.te.Postings(s.ids.pe, index.PostingsDocs)
	n := 0
	for doc := s.ids.pe.NextDoc(); doc != index.NoMoreDocs; doc = s.ids.pe.NextDoc() {
		if s.live == nil {
			s.live = index.NewFixedBitSetAllSet(s.info.MaxDoc)
			s.liveShared = false
		} else if s.liveShared {
			s.live = s.live.Clone()
			s.liveShared = false
		}
		if s.live.Clear(doc) {
			n++
		}
	}
	s.delCount += n
	return n
}

// applyDeletes brings s up to date with every delete up to and including
// node upto, and reports how many docs it deleted.
func (s *segState) applyDeletes(upto *delNode) int {
	n := 0
	for s.delCursor != upto {
		next := s.delCursor.next.Load()
		n += s.deleteID(next.id)
		s.delCursor = next
	}
	return n
}
