package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/dwpt"
)

// perThread is a DWPT with the writer's bookkeeping. At most one goroutine
// uses it at a time (checked out of the perThreadPool); it is not tied to
// any goroutine, but a worker with an affinity (WithAffinity) gets the one
// it used last back when it is free.
type perThread struct {
	dwpt      *dwpt.DWPT
	delCursor *delNode // last buffered delete applied to the DWPT (IndexWriter.mu); nil: new
	affinity  uint64   // of its last checkout (WithAffinity); 0 none; perThreadPool.mu

	// Guarded by flushControl.mu.
	ram          int64 // bytes last accounted in activeBytes/flushBytes
	numDocs      int   // docs as of the last check-in
	flushGen     int64 // refresh generation when taken for flushing
	flushPending bool
}

// perThreadPool hands out DWPTs (Lucene's DocumentsWriterPerThreadPool):
// an idle one for each operation, preferring the one the caller's affinity
// used last, or a new one. It knows every DWPT not yet taken for flushing,
// for the flush policy to pick from; which of them are flush-pending, and
// how much RAM each holds, is the flushControl's business. Its lock is
// innermost: the flushControl calls it with its own held.
type perThreadPool struct {
	alloc *dwpt.Allocator

	mu    sync.Mutex
	free  []*perThread            // idle and not flush-pending (may be empty)
	dwpts map[*perThread]struct{} // every DWPT not taken for flushing
}

func newPerThreadPool(alloc *dwpt.Allocator) *perThreadPool {
	return &perThreadPool{alloc: alloc, dwpts: make(map[*perThread]struct{})}
}

// getAndLock checks out an idle DWPT for one operation: the free one last
// used with affinity aff, else the last one checked in, else a new one.
func (p *perThreadPool) getAndLock(aff uint64) *perThread {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := len(p.free) - 1
	if aff != 0 { // a handful of free DWPTs at most: one per concurrent worker
		for j := i; j >= 0; j-- {
			if p.free[j].affinity == aff {
				i = j
				break
			}
		}
	}
	if i < 0 {
		pt := &perThread{dwpt: dwpt.New(p.alloc), affinity: aff}
		p.dwpts[pt] = struct{}{}
		return pt
	}
	pt := p.free[i]
	p.free = slices.Delete(p.free, i, i+1)
	pt.affinity = aff
	return pt
}

// marksAsFree returns a checked-out DWPT to the free list.
func (p *perThreadPool) marksAsFree(pt *perThread) {
	p.mu.Lock()
	p.free = append(p.free, pt)
	p.mu.Unlock()
}

// removeFree takes pt off the free list and reports whether it was there
// (idle) rather than checked out.
func (p *perThreadPool) removeFree(pt *perThread) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.free, pt)
	if i < 0 {
		return false
	}
	p.free = slices.Delete(p.free, i, i+1)
	return true
}

// takeFree takes off the free list the idle DWPTs take accepts (a full
// flush: those holding docs), keeping the order of the others.
func (p *perThreadPool) takeFree(take func(*perThread) bool) []*perThread {
	p.mu.Lock()
	defer p.mu.Unlock()
	var taken []*perThread
	kept := p.free[:0:0]
	for _, pt := range p.free {
		if take(pt) {
			taken = append(taken, pt)
		} else {
			kept = append(kept, pt)
		}
	}
	p.free = kept
	return taken
}

// checkoutForFlush forgets pt: it is being flushed and will not come back.
func (p *perThreadPool) checkoutForFlush(pt *perThread) {
	p.mu.Lock()
	delete(p.dwpts, pt)
	p.mu.Unlock()
}

// each calls fn for every DWPT not taken for flushing, checked out or
// not; fn must not call the pool.
func (p *perThreadPool) each(fn func(*perThread)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pt := range p.dwpts {
		fn(pt)
	}
}

// close empties the free list and returns what it held.
func (p *perThreadPool) close() []*perThread {
	p.mu.Lock()
	defer p.mu.Unlock()
	free := p.free
	p.free = nil
	return free
}

type affinityKey struct{}

var affinities atomic.Uint64

// WithAffinity returns ctx carrying a new writer affinity: the operations
// of one worker (a goroutine indexing documents one after another, such as
// one bulk request's items on a shard) keep filling the DWPT it used last,
// as Lucene's thread affinity did, instead of whichever DWPT was checked in
// last. A DWPT's term hash and postings then stay in one core's cache:
// handed between two goroutines, they moved between cores with nearly
// every document, and two goroutines spent 19 % more CPU than one on the
// same documents (docs/benchmarks.md section 1).
func WithAffinity(ctx context.Context) context.Context {
	return context.WithValue(ctx, affinityKey{}, affinities.Add(1))
}

// affinityOf returns ctx's writer affinity, 0 if none.
func affinityOf(ctx context.Context) uint64 {
	aff, _ := ctx.Value(affinityKey{}).(uint64)
	return aff
}
