package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

var (
	// ErrReaderGone: the reader id is unknown (expired, closed, never
	// pinned, or its shard closed).
	ErrReaderGone = errors.New("reader not found (expired or closed)")
	// ErrTooManyReaders: the node's cap on pinned readers is reached.
	ErrTooManyReaders = errors.New("too many open readers")
)

// PinnedReader is a point-in-time reader of one shard, held by id with a
// keep-alive so that later calls (a search's fetch phase, a point-in-time's
// pages, a scan's batches) read the very same view — Elasticsearch's
// ReaderContext. A reader handed out by PinReader or Reader is in use until
// Done; only then can it expire or be released.
type PinnedReader struct {
	id       uint64
	reg      *pinned // the node's registry, which holds it
	reader   *engine.Reader
	searcher *search.Searcher
	docBases []int

	// guarded by pinned.mu
	shard     *Shard // changes when a replica is promoted (rehome)
	keepAlive time.Duration
	expires   time.Time
	uses      int  // callers currently using it
	closed    bool // unpinned; released at uses == 0

	memoMu sync.Mutex
	memo   map[string]any
}

// ID is the reader's id, unique on the node.
func (r *PinnedReader) ID() uint64 { return r.id }

// Reader is the engine reader.
func (r *PinnedReader) Reader() *engine.Reader { return r.reader }

// Searcher searches the reader.
func (r *PinnedReader) Searcher() *search.Searcher { return r.searcher }

// LeafOf maps a shard-local doc to its leaf and leaf doc.
func (r *PinnedReader) LeafOf(doc int) (leaf, local int, ok bool) {
	if doc < 0 || doc >= r.reader.MaxDoc() {
		return 0, 0, false
	}
	leaf = sort.Search(len(r.docBases), func(i int) bool { return r.docBases[i] > doc }) - 1
	return leaf, doc - r.docBases[leaf], true
}

// Document reads a doc's stored _id, _routing and _source (copies).
func (r *PinnedReader) Document(doc int) (index.StoredDoc, error) {
	leaf, local, ok := r.LeafOf(doc)
	if !ok {
		return index.StoredDoc{}, fmt.Errorf("%w: doc %d is outside the reader (max %d)", ErrInvalid, doc, r.reader.MaxDoc())
	}
	// A fresh StoredDoc: the reader copies into its buffers, which are
	// then ours.
	var sd index.StoredDoc
	if err := r.reader.Document(leaf, local, &sd); err != nil {
		return index.StoredDoc{}, err
	}
	return sd, nil
}

// maxMemo bounds the values memoized per reader.
const maxMemo = 16

// Memo returns the value memoized under key for this reader, building it
// with build on first use: what callers derive from one view of the shard
// (a scan's selection of documents, say) is computed once per reader, as
// Elasticsearch keeps such state in its ReaderContext. At most maxMemo
// values are kept; beyond, the memo starts afresh.
func (r *PinnedReader) Memo(key string, build func() (any, error)) (any, error) {
	r.memoMu.Lock()
	defer r.memoMu.Unlock()
	if v, ok := r.memo[key]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	if r.memo == nil || len(r.memo) >= maxMemo {
		r.memo = map[string]any{}
	}
	r.memo[key] = v
	return v, nil
}

// Done ends a use of the reader; an unpinned reader is released by its
// last user.
func (r *PinnedReader) Done() { r.reg.done(r) }

// Touch extends the keep-alive of a reader in use (a long scan between
// batches).
func (r *PinnedReader) Touch(keepAlive time.Duration) { r.reg.touch(r, keepAlive) }

// Unpin releases the reader once nobody uses it.
func (r *PinnedReader) Unpin() { r.reg.unpin(nil, r.id) } // ids are unique on the node

// PinReader pins the shard's latest reader for keepAlive after its last
// use; it is returned in use (call Done). Beyond the node's cap it fails
// with ErrTooManyReaders.
func (s *Shard) PinReader(keepAlive time.Duration) (*PinnedReader, error) {
	rd := s.Acquire()
	if err := s.stillOpen(); err != nil {
		rd.Release()
		return nil, err
	}
	return s.pinned.pin(s, rd, keepAlive)
}

// Reader returns the shard's pinned reader id in use (call Done),
// extending its keep-alive to extend if that is longer; ErrReaderGone if
// there is none.
func (s *Shard) Reader(id uint64, extend time.Duration) (*PinnedReader, error) {
	return s.pinned.use(s, id, extend)
}

// pinned is the registry of a node's pinned readers, shared by its shards.
type pinned struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]*PinnedReader
	max    int
	closed bool
}

func newPinned(max int) *pinned {
	return &pinned{open: map[uint64]*PinnedReader{}, max: max}
}

// pin registers rd (whose reference the registry takes over).
func (g *pinned) pin(s *Shard, rd *engine.Reader, keepAlive time.Duration) (*PinnedReader, error) {
	g.mu.Lock()
	if g.closed || len(g.open) >= g.max {
		n := len(g.open)
		g.mu.Unlock()
		rd.Release()
		return nil, fmt.Errorf("%w: %d of %d point-in-time readers are open on this node; close some or wait for their keep-alive", ErrTooManyReaders, n, g.max)
	}
	g.next++
	r := &PinnedReader{id: g.next, reg: g, shard: s, reader: rd, keepAlive: keepAlive, expires: time.Now().Add(keepAlive), uses: 1}
	g.open[r.id] = r
	g.mu.Unlock()
	leaves := rd.Leaves()
	r.docBases = make([]int, len(leaves))
	for i, l := range leaves {
		r.docBases[i] = l.DocBase
	}
	r.searcher = rd.Searcher()
	return r, nil
}

func (g *pinned) use(s *Shard, id uint64, extend time.Duration) (*PinnedReader, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.open[id]
	if r == nil || r.shard != s {
		return nil, fmt.Errorf("reader %d of shard %v: %w", id, s.ID(), ErrReaderGone)
	}
	r.uses++
	r.keepAlive = max(r.keepAlive, extend)
	r.expires = time.Now().Add(r.keepAlive)
	return r, nil
}

func (g *pinned) done(r *PinnedReader) {
	g.mu.Lock()
	r.uses--
	release := r.closed && r.uses == 0
	g.mu.Unlock()
	if release {
		r.reader.Release()
	}
}

func (g *pinned) touch(r *PinnedReader, keepAlive time.Duration) {
	g.mu.Lock()
	r.keepAlive = max(r.keepAlive, keepAlive)
	r.expires = time.Now().Add(r.keepAlive)
	g.mu.Unlock()
}

// unpin removes reader id (of shard s, or of any shard when s is nil); ok
// is false if it was not pinned.
func (g *pinned) unpin(s *Shard, id uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.open[id]
	if r == nil || (s != nil && r.shard != s) {
		return false
	}
	g.removeLocked(r)
	return true
}

// removeLocked drops r from the registry; it is released now if unused,
// else by its last user.
func (g *pinned) removeLocked(r *PinnedReader) {
	delete(g.open, r.id)
	r.closed = true
	if r.uses == 0 {
		r.reader.Release()
	}
}

func (g *pinned) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.open)
}

// reap releases the readers that expired by now, or (with s set) every
// reader of a shard that is going away, while its files are still there.
func (g *pinned) reap(now time.Time, s *Shard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.open {
		if (s == nil && r.uses == 0 && now.After(r.expires)) || (s != nil && r.shard == s) {
			g.removeLocked(r)
		}
	}
}

// rehome moves the readers of shard from to shard to (a replica's Shard
// replaced by its promoted primary's).
func (g *pinned) rehome(from, to *Shard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.open {
		if r.shard == from {
			r.shard = to
		}
	}
}

// shutdown releases every reader and refuses new ones.
func (g *pinned) shutdown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, r := range g.open {
		g.removeLocked(r)
	}
}

// run releases expired readers every interval until ctx ends.
func (g *pinned) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.reap(now, nil)
		}
	}
}
