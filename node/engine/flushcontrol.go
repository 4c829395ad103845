package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// flushControl decides when DWPTs are flushed (Lucene's
// DocumentsWriterFlushControl with FlushByRamOrCountsPolicy and
// DocumentsWriterStallControl): it accounts the RAM of active and
// flushing DWPTs, marks DWPTs flush-pending when the budget is exceeded,
// hands pending ones to goroutines to flush, stalls checkouts while
// flushing is far behind, counts operations in flight so a refresh's full
// flush can wait for them, and collects flushed segments, by refresh
// generation, until a refresh publishes them. Writing a segment is the
// writer's (flush); a failed flush is a tragedy that fails every later
// checkout and refresh.
type flushControl struct {
	pool           *perThreadPool
	ramBufferBytes int64
	stats          *writerStats
	log            *slog.Logger
	// flush writes a DWPT taken for flushing as a segment and reports to
	// doAfterFlush; called without mu.
	flush func(ctx context.Context, pt *perThread)

	mu          sync.Mutex
	cond        *sync.Cond   // inFlight, stalls, flush completions
	pending     []*perThread // flush-pending DWPTs nobody holds
	inFlight    int          // operations holding a DWPT
	fullFlush   bool         // a refresh waits for in-flight operations to drain
	closed      bool
	tragedy     error
	activeBytes int64 // RAM of DWPTs not pending or flushing
	dvBytes     int64 // heap of the published doc-values updates (their share of the budget)
	flushBytes  int64 // RAM of DWPTs pending or flushing
	flushGen    int64 // incremented at each full flush
	flushing    map[int64]int
	flushed     []*segState // flushed since the last full flush's wait
}

func newFlushControl(pool *perThreadPool, ramBufferBytes int64, stats *writerStats, log *slog.Logger, flush func(context.Context, *perThread)) *flushControl {
	fc := &flushControl{pool: pool, ramBufferBytes: ramBufferBytes, stats: stats, log: log, flush: flush,
		flushing: make(map[int64]int)}
	fc.cond = sync.NewCond(&fc.mu)
	return fc
}

// obtain admits one operation that will check out a DWPT, counting it in
// flight until doAfterDocument. It waits while a refresh marks a full
// flush or while flushing is far behind (stall control); a stalled
// goroutine helps by flushing a pending DWPT.
func (fc *flushControl) obtain(ctx context.Context) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var stallStart time.Time
	for {
		if fc.closed {
			return ErrClosed
		}
		if fc.tragedy != nil {
			return fmt.Errorf("engine: writer failed earlier: %w", fc.tragedy)
		}
		if fc.fullFlush {
			fc.cond.Wait()
			continue
		}
		if fc.stalledLocked() {
			if stallStart.IsZero() {
				stallStart = time.Now()
				fc.stats.stalls.Add(1)
			}
			if pt := fc.takePendingLocked(); pt != nil {
				fc.mu.Unlock()
				fc.flush(ctx, pt)
				fc.mu.Lock()
				continue
			}
			fc.cond.Wait()
			continue
		}
		break
	}
	if !stallStart.IsZero() {
		fc.stats.stallNanos.Add(int64(time.Since(stallStart)))
	}
	fc.inFlight++
	return nil
}

// stalledLocked: indexing waits when DWPTs waiting to be flushed or being
// flushed hold more than twice the budget (Lucene's
// DocumentsWriterStallControl), i.e. flushing cannot keep up.
func (fc *flushControl) stalledLocked() bool { return fc.flushBytes > 2*fc.ramBufferBytes }

func (fc *flushControl) takePendingLocked() *perThread {
	n := len(fc.pending)
	if n == 0 {
		return nil
	}
	pt := fc.pending[n-1]
	fc.pending = fc.pending[:n-1]
	fc.startFlushLocked(pt)
	return pt
}

// doAfterDocument checks pt back in after an operation: it accounts pt's
// RAM, applies the flush policy (marking pt pending if forceFlush), returns
// pt to the pool unless it is to be flushed, and ends the operation. It
// returns a DWPT the caller must flush: its own if it became pending, else
// any other pending one nobody holds (helping), or nil.
func (fc *flushControl) doAfterDocument(pt *perThread, forceFlush bool) *perThread {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	ram := pt.dwpt.RAMBytesUsed()
	if pt.flushPending {
		fc.flushBytes += ram - pt.ram
	} else {
		fc.activeBytes += ram - pt.ram
	}
	pt.ram = ram
	pt.numDocs = pt.dwpt.NumDocs()
	fc.inFlight--
	if forceFlush && !pt.flushPending {
		fc.markPendingLocked(pt)
	}
	// FlushByRamOrCountsPolicy: over budget, the largest DWPT not already
	// pending is marked; if another goroutine holds it, that goroutine
	// flushes it when it checks it in. DWPTs nearly as large are marked
	// with it: goroutines indexing at the same rate fill theirs together,
	// and flushing only the largest staggers them, so that at a commit one
	// DWPT holds most of the buffer and its single-threaded flush is a
	// serial tail (2 goroutines: 1.9 s of flush on one core while the
	// other idled). Flushed together, they restart together and stay even.
	if fc.activeBytes+fc.dvBytes > fc.ramBufferBytes {
		var largest *perThread
		fc.pool.each(func(c *perThread) {
			if !c.flushPending && c.numDocs > 0 && (largest == nil || c.ram > largest.ram) {
				largest = c
			}
		})
		if largest != nil {
			var near []*perThread
			fc.pool.each(func(c *perThread) {
				if c != largest && !c.flushPending && c.numDocs > 0 && c.ram*4 >= largest.ram*3 {
					near = append(near, c)
				}
			})
			fc.markPendingLocked(largest)
			for _, c := range near {
				fc.markPendingLocked(c)
			}
		}
	}
	if !pt.flushPending {
		fc.pool.marksAsFree(pt)
	} else {
		fc.pending = append(fc.pending, pt)
	}
	if fc.inFlight == 0 || pt.flushPending {
		fc.cond.Broadcast()
	}
	// Its own first, else help with any other.
	if pt.flushPending {
		if i := slices.Index(fc.pending, pt); i >= 0 {
			fc.pending = slices.Delete(fc.pending, i, i+1)
			fc.startFlushLocked(pt)
			return pt
		}
	}
	return fc.takePendingLocked()
}

// setDocValuesBytes records the heap the segments' doc-values updates
// hold, which the flush policy counts with the DWPTs' RAM: a refresh keeps
// it within a quarter of the budget (writeOutDocValuesUpdatesLocked).
func (fc *flushControl) setDocValuesBytes(n int64) {
	fc.mu.Lock()
	// Capped: should writing them out fail, DWPTs still get half.
	fc.dvBytes = min(n, fc.ramBufferBytes/2)
	fc.mu.Unlock()
}

// markPendingLocked marks pt flush-pending; an idle pt moves from the free
// list to the pending list, a checked-out one is flushed by its holder.
func (fc *flushControl) markPendingLocked(pt *perThread) {
	if pt.flushPending || pt.numDocs == 0 {
		return
	}
	pt.flushPending = true
	fc.activeBytes -= pt.ram
	fc.flushBytes += pt.ram
	if fc.pool.removeFree(pt) {
		fc.pending = append(fc.pending, pt)
	}
}

// startFlushLocked records that pt is being flushed within the current
// generation, so the next full flush waits for it.
func (fc *flushControl) startFlushLocked(pt *perThread) {
	fc.pool.checkoutForFlush(pt)
	pt.flushGen = fc.flushGen
	fc.flushing[pt.flushGen]++
}

// doAfterFlush records the outcome of flushing pt: its segment waits for
// the refresh of its generation; an error is a tragedy.
func (fc *flushControl) doAfterFlush(pt *perThread, seg *segState, err error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.flushBytes -= pt.ram
	gen := pt.flushGen
	if fc.flushing[gen]--; fc.flushing[gen] == 0 {
		delete(fc.flushing, gen)
	}
	if err != nil {
		fc.tragedy = err
		fc.log.Error("engine: flush failed; writer closed for writes", "err", err)
	} else {
		seg.flushGen = gen
		fc.flushed = append(fc.flushed, seg)
	}
	fc.cond.Broadcast()
}

// onTragicEvent fails the writer for writes, unless it failed already,
// and wakes whoever waits (stalled checkouts, a refresh waiting for
// flushes) to see it.
func (fc *flushControl) onTragicEvent(err error) {
	fc.mu.Lock()
	if fc.tragedy == nil {
		fc.tragedy = err
	}
	fc.cond.Broadcast()
	fc.mu.Unlock()
}

// markForFullFlush begins a refresh's full flush: new checkouts wait, and
// it returns once no operation holds a DWPT. takeFullFlush ends it.
func (fc *flushControl) markForFullFlush() error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.closed {
		return ErrClosed
	}
	fc.fullFlush = true
	for fc.inFlight > 0 {
		fc.cond.Wait()
	}
	return nil
}

// takeFullFlush takes every DWPT holding docs, idle or pending, for
// flushing within the current generation, which it returns; starts the
// next generation; and lets checkouts continue.
func (fc *flushControl) takeFullFlush() (toFlush []*perThread, gen int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	toFlush = fc.pool.takeFree(func(pt *perThread) bool { return pt.numDocs > 0 })
	for _, pt := range toFlush {
		pt.flushPending = true
		fc.activeBytes -= pt.ram
		fc.flushBytes += pt.ram
	}
	toFlush = append(toFlush, fc.pending...)
	fc.pending = nil
	gen = fc.flushGen
	for _, pt := range toFlush {
		fc.startFlushLocked(pt)
	}
	fc.flushGen++
	fc.fullFlush = false
	fc.cond.Broadcast()
	return toFlush, gen
}

// waitForFlush waits for every flush of generation gen or older, then
// returns their segments; the tragedy if one failed.
func (fc *flushControl) waitForFlush(gen int64) ([]*segState, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for fc.flushingThroughLocked(gen) && fc.tragedy == nil {
		fc.cond.Wait()
	}
	if fc.tragedy != nil {
		return nil, fc.tragedy
	}
	var segs, later []*segState
	for _, s := range fc.flushed {
		if s.flushGen <= gen {
			segs = append(segs, s)
		} else {
			later = append(later, s)
		}
	}
	fc.flushed = later
	return segs, nil
}

// flushingThroughLocked reports whether a flush of generation <= gen is
// running.
func (fc *flushControl) flushingThroughLocked(gen int64) bool {
	for g, n := range fc.flushing {
		if g <= gen && n > 0 {
			return true
		}
	}
	return false
}

// close refuses further checkouts and full flushes, waits for operations
// and flushes in flight, releases the buffered DWPTs (their documents are
// discarded) and returns the flushed segments no refresh published.
func (fc *flushControl) close() []*segState {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.closed = true
	for fc.inFlight > 0 || len(fc.flushing) > 0 {
		fc.cond.Wait()
	}
	for _, pt := range fc.pool.close() {
		pt.dwpt.Release()
	}
	for _, pt := range fc.pending {
		pt.dwpt.Release()
	}
	fc.pending = nil
	flushed := fc.flushed
	fc.flushed = nil
	fc.cond.Broadcast()
	return flushed
}

// ramBytesUsed is the memory of buffered documents (active and flushing
// DWPTs).
func (fc *flushControl) ramBytesUsed() int64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.activeBytes + fc.flushBytes
}
