package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// Leaf is one segment of a point-in-time Reader: its LeafReader, its live
// docs (nil: all live; immutable, later deletes go to a copy) and the
// index-wide id of its doc 0. It is the searcher's Leaf, so a Reader's
// leaves are searched as they are.
type Leaf = search.Leaf

// Reader is a ref-counted point-in-time view of the index (Lucene's
// StandardDirectoryReader as handed out by a SearcherManager). It stays
// valid, and its segment files stay on disk, until its last Release.
type Reader struct {
	leaves  []Leaf
	segs    []*segState
	refs    atomic.Int32
	numDocs int
	maxDoc  int
	// SeqNo: every operation with a sequence number <= SeqNo is visible
	// (with deletes applied unless the refresh skipped them).
	seqNo atomic.Int64
	// appliedSeqNo: deletes of every operation up to it are applied (equal
	// to seqNo unless refreshes skipped deletes); checkpoints use it.
	appliedSeqNo atomic.Int64
	// addMarkers are the AddIndexes markers published with the segments
	// (immutable).
	addMarkers map[string]string
	version    int64
	lookups    sync.Pool // *idLookup

	searcherOnce sync.Once
	searcher     *search.Searcher
}

func newReader(segs []*segState, seqNo, version int64) *Reader {
	r := &Reader{segs: segs, version: version}
	r.seqNo.Store(seqNo)
	r.refs.Store(1)
	r.leaves = make([]Leaf, len(segs))
	for i, s := range segs {
		s.incRef()
		s.liveShared = true
		r.leaves[i] = Leaf{Reader: s.leafReader(), Live: s.live, DocBase: r.maxDoc}
		r.maxDoc += s.info.MaxDoc
		r.numDocs += s.numDocs()
	}
	return r
}

// Leaves returns the segments, in index order. Do not modify.
func (r *Reader) Leaves() []Leaf { return r.leaves }

// Searcher returns the reader's searcher. Every search on this point in
// time shares it, and with it the scorers' postings enums, which searches
// recycle per searcher: a searcher made per search allocated them afresh
// for every term and segment, the biggest source of garbage under query
// load.
func (r *Reader) Searcher() *search.Searcher {
	r.searcherOnce.Do(func() { r.searcher = search.NewSearcher(r.leaves) })
	return r.searcher
}

// NumDocs is the number of live docs.
func (r *Reader) NumDocs() int { return r.numDocs }

// MaxDoc is the number of docs, deleted ones included.
func (r *Reader) MaxDoc() int { return r.maxDoc }

// SeqNo is the highest sequence number whose operation the reader reflects.
// A refresh that changes nothing raises it on the current reader.
func (r *Reader) SeqNo() int64 { return r.seqNo.Load() }

// Version increases with every reader the writer publishes.
func (r *Reader) Version() int64 { return r.version }

// tryIncRef takes a reference unless the reader is already closed.
func (r *Reader) tryIncRef() bool {
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference taken by Acquire. The last release closes
// segment readers no newer reader uses and lets their files be deleted.
func (r *Reader) Release() {
	switch n := r.refs.Add(-1); {
	case n == 0:
		for _, s := range r.segs {
			s.decRef()
		}
	case n < 0:
		panic("engine: Reader released too often")
	}
}

// idLookup holds one reusable terms enum and postings enum per leaf, so an
// id lookup costs one term-dictionary seek per segment and no allocations.
type idLookup struct {
	tes []index.TermsEnum
	pes []index.PostingsEnum
}

func (r *Reader) getLookup() *idLookup {
	if l, ok := r.lookups.Get().(*idLookup); ok {
		return l
	}
	l := &idLookup{tes: make([]index.TermsEnum, len(r.leaves)), pes: make([]index.PostingsEnum, len(r.leaves))}
	for i, lf := range r.leaves {
		if t := lf.Reader.Terms(index.IDField); t != nil {
			l.tes[i] = t.Iterator()
		}
	}
	return l
}

// LookupID returns the leaf index and leaf-local doc of the live doc with
// id, or ok=false.
func (r *Reader) LookupID(id []byte) (leaf, doc int, ok bool) {
	l := r.getLookup()
	defer r.lookups.Put(l)
	// Newest segments first: an id updated recently lives there.
	for i := len(r.leaves) - 1; i >= 0; i-- {
		te := l.tes[i]
		if te == nil || !r.segs[i].bloom.mayContain(id) || !te.SeekExact(id) {
			continue
		}
		l.pes[i] = te.Postings(l.pes[i], index.PostingsDocs)
		live := r.leaves[i].Live
		for d := l.pes[i].NextDoc(); d != index.NoMoreDocs; d = l.pes[i].NextDoc() {
			if live == nil || live.Get(d) {
				return i, d, true
			}
		}
	}
	return 0, 0, false
}

// Document reads the stored _id and _source of a live doc found by
// LookupID into dst.
func (r *Reader) Document(leaf, doc int, dst *index.StoredDoc) error {
	if leaf < 0 || leaf >= len(r.leaves) {
		return fmt.Errorf("engine: leaf %d out of range", leaf)
	}
	lr := r.leaves[leaf].Reader
	if d, ok := lr.(index.DocumentReader); ok {
		return d.Document(doc, dst)
	}
	return lr.StoredFields().Document(doc, dst)
}
