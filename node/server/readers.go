package server

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
)

// readerCtx is a pinned point-in-time reader of one shard.
type readerCtx struct {
	id       uint64
	shard    *shard.Shard
	reader   *engine.Reader
	searcher *search.Searcher
	docBases []int

	// guarded by registry.mu
	keepAlive time.Duration
	expires   time.Time
	uses      int  // handlers currently using it
	closed    bool // removed from the registry; released at uses == 0

	selMu      sync.Mutex
	selections map[string]*selection // by slice and query
}

// leafOf maps a shard-local doc to its leaf and leaf doc.
func (c *readerCtx) leafOf(doc int) (leaf, local int, ok bool) {
	if doc < 0 || doc >= c.reader.MaxDoc() {
		return 0, 0, false
	}
	leaf = sort.Search(len(c.docBases), func(i int) bool { return c.docBases[i] > doc }) - 1
	return leaf, doc - c.docBases[leaf], true
}

// document reads a doc's stored _id, _routing and _source (copies).
func (c *readerCtx) document(doc int) (index.StoredDoc, error) {
	leaf, local, ok := c.leafOf(doc)
	if !ok {
		return index.StoredDoc{}, fmt.Errorf("%w: doc %d is outside the reader (max %d)", errBadRequest, doc, c.reader.MaxDoc())
	}
	// A fresh StoredDoc: the reader copies into its buffers, which are
	// then ours.
	var sd index.StoredDoc
	if err := c.reader.Document(leaf, local, &sd); err != nil {
		return index.StoredDoc{}, err
	}
	return sd, nil
}

// registry holds the node's pinned readers.
type registry struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]*readerCtx
	max    int
	stop   chan struct{}
	reaped chan struct{}
	closed bool
}

func newRegistry(max int, reapEvery time.Duration) *registry {
	g := &registry{open: map[uint64]*readerCtx{}, max: max, stop: make(chan struct{}), reaped: make(chan struct{})}
	go g.reaper(reapEvery)
	return g
}

// pin registers r (whose reference the registry takes over) with a
// keep-alive; the context is returned in use (call done).
func (g *registry) pin(s *shard.Shard, r *engine.Reader, keepAlive time.Duration) (*readerCtx, error) {
	g.mu.Lock()
	if g.closed || len(g.open) >= g.max {
		n := len(g.open)
		g.mu.Unlock()
		r.Release()
		return nil, fmt.Errorf("%w: %d of %d point-in-time readers are open on this node; close some or wait for their keep-alive", errTooManyReaders, n, g.max)
	}
	g.next++
	c := &readerCtx{id: g.next, shard: s, reader: r, keepAlive: keepAlive, expires: time.Now().Add(keepAlive), uses: 1}
	g.open[c.id] = c
	g.mu.Unlock()
	leaves := r.Leaves()
	c.docBases = make([]int, len(leaves))
	for i, l := range leaves {
		c.docBases[i] = l.DocBase
	}
	c.searcher = r.Searcher()
	return c, nil
}

// use looks a reader up for shard s and marks it in use, extending its
// keep-alive (to extend if longer than its own).
func (g *registry) use(s *shard.Shard, id uint64, extend time.Duration) (*readerCtx, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.open[id]
	if c == nil || c.shard != s {
		return nil, fmt.Errorf("reader %d of shard %v: %w", id, s.ID(), errReaderGone)
	}
	c.uses++
	c.keepAlive = max(c.keepAlive, extend)
	c.expires = time.Now().Add(c.keepAlive)
	return c, nil
}

// done ends a use; a closed context is released by its last user.
func (g *registry) done(c *readerCtx) {
	g.mu.Lock()
	c.uses--
	release := c.closed && c.uses == 0
	g.mu.Unlock()
	if release {
		c.reader.Release()
	}
}

// close removes a reader; ok is false if it was not open.
func (g *registry) close(s *shard.Shard, id uint64) bool {
	g.mu.Lock()
	c := g.open[id]
	if c == nil || (s != nil && c.shard != s) {
		g.mu.Unlock()
		return false
	}
	g.removeLocked(c)
	g.mu.Unlock()
	return true
}

// removeLocked drops c from the map; it is released now if unused, else by
// its last user.
func (g *registry) removeLocked(c *readerCtx) {
	delete(g.open, c.id)
	c.closed = true
	if c.uses == 0 {
		c.reader.Release()
	}
}

// count is the number of open readers.
func (g *registry) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.open)
}

func (g *registry) reaper(every time.Duration) {
	defer close(g.reaped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case now := <-t.C:
			g.reap(now, nil)
		}
	}
}

// reap releases readers that expired by now, or (with s set) all readers of
// a shard that is going away.
func (g *registry) reap(now time.Time, s *shard.Shard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.open {
		if (s == nil && c.uses == 0 && now.After(c.expires)) || (s != nil && c.shard == s) {
			g.removeLocked(c)
		}
	}
}

// shutdown stops the reaper and releases every reader.
func (g *registry) shutdown() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	for _, c := range g.open {
		g.removeLocked(c)
	}
	g.mu.Unlock()
	close(g.stop)
	<-g.reaped
}

// touch extends an in-use reader's keep-alive.
func (g *registry) touch(c *readerCtx, keepAlive time.Duration) {
	g.mu.Lock()
	c.keepAlive = max(c.keepAlive, keepAlive)
	c.expires = time.Now().Add(c.keepAlive)
	g.mu.Unlock()
}
