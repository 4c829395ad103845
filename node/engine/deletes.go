package engine

import (
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// delNode is one buffered delete-by-id in the global delete queue (Lucene's
// DocumentsWriterDeleteQueue, as a singly linked list). Nodes are appended
// under the writer's lock with increasing sequence numbers and never
// change afterwards. Every consumer — each DWPT, and each segment not yet
// brought up to date — holds a cursor to the last node it has applied, so
// consumed nodes become garbage by themselves.
type delNode struct {
	seq int64
	id  []byte
	// dv, when set, makes the node an in-place doc-values update of the
	// live docs with id (Lucene's DocValuesUpdate in the same queue): in
	// queue order with deletes, so a delete or re-index before it hides
	// the doc from it and one after it wins. DWPTs skip such nodes: the
	// writer only queues one when no buffered doc has the id.
	dv   []mapping.DocValueUpdate
	term int64 // with dv: the update's primary term
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
	n := 0
	s.docsOf(id, func(doc int) {
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
	})
	s.delCount += n
	return n
}

// docsOf calls fn with every doc (live or not) whose _id is id.
func (s *segState) docsOf(id []byte, fn func(doc int)) {
	if !s.bloom.mayContain(id) {
		return
	}
	if s.ids.te == nil {
		t := s.reader.Terms(index.IDField)
		if t == nil {
			return
		}
		s.ids.te = t.Iterator()
	}
	if !s.ids.te.SeekExact(id) {
		return
	}
	s.ids.pe = s.ids.te.Postings(s.ids.pe, index.PostingsDocs)
	for doc := s.ids.pe.NextDoc(); doc != index.NoMoreDocs; doc = s.ids.pe.NextDoc() {
		fn(doc)
	}
}

// bufferDocValuesUpdate records the update n for the live docs with its
// id — its fields, and its seqNo and term as the docs' _seq_no and
// _primary_term — to become runs at the refresh's freezeDocValues.
func (s *segState) bufferDocValuesUpdate(n *delNode) {
	s.docsOf(n.id, func(doc int) {
		if s.live != nil && !s.live.Get(doc) {
			return
		}
		for _, u := range n.dv {
			s.addPendingUpdate(u.Field, u.Type, doc, u.Value, u.Keyword)
		}
		s.addPendingUpdate(index.SeqNoField, document.Long, doc, n.seq, nil)
		s.addPendingUpdate(index.PrimaryTermField, document.Long, doc, n.term, nil)
	})
}

// freezeDocValues turns the updates buffered since the last freeze into a
// new run per field and a new layered leaf reader (readers published
// before keep theirs); it reports whether there were any.
func (s *segState) freezeDocValues() bool {
	if len(s.dvPending) == 0 {
		return false
	}
	s.setDocValuesUpdates(s.dv.withPending(s.dvPending))
	s.dvPending = nil
	return true
}

// setDocValuesUpdates makes dv the segment's updates.
func (s *segState) setDocValuesUpdates(dv *docValuesUpdates) {
	s.dv = dv
	s.leaf = newUpdatedLeafReader(s.reader, dv, s.info.ForeignVersions)
}

// leafReader is what readers search: the segment with its updates.
func (s *segState) leafReader() index.LeafReader {
	if s.leaf != nil {
		return s.leaf
	}
	return s.reader
}

// applyDeletes brings s up to date with every delete up to and including
// node upto, and reports how many docs it deleted.
func (s *segState) applyDeletes(upto *delNode) int {
	n := 0
	for s.delCursor != upto {
		next := s.delCursor.next.Load()
		if next.dv != nil {
			s.bufferDocValuesUpdate(next)
		} else {
			n += s.deleteID(next.id)
		}
		s.delCursor = next
	}
	return n
}
