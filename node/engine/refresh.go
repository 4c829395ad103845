package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
)

// RefreshResult describes one refresh.
type RefreshResult struct {
	// Changed is false when nothing changed since the last refresh: the
	// same Reader stays current.
	Changed bool
	// SeqNo: every operation up to it is now visible.
	SeqNo       int64
	NewSegments int
	Took        time.Duration
	// Phases of Took: waiting for in-flight operations at the swap,
	// flushing (including flushes other goroutines had started), applying
	// deletes.
	SwapWait, Flush, ApplyDeletes time.Duration
}

// Refresh makes every operation completed before it visible in a new
// point-in-time Reader (Lucene's openIfChanged on an NRT writer):
//
//  1. swap: wait for in-flight operations to finish (new ones wait, for the
//     length of one document's inversion at most), take every non-empty
//     DWPT, record the boundary — the highest sequence number and the tail
//     of the delete queue — and start a new generation;
//  2. flush the taken DWPTs as segments, in parallel, without fsync (the
//     Directory decides where bytes go; an NRTCachingDirectory keeps small
//     ones in RAM), and wait for flushes other goroutines started before
//     the swap;
//  3. if applyDeletes, apply buffered deletes up to the boundary to every
//     segment's live docs (copy-on-write: published readers keep theirs);
//     segments with no live docs left are dropped;
//  4. publish a new Reader sharing unchanged segments, or keep the current
//     one if nothing changed.
//
// Without applyDeletes the new reader may still show docs deleted or
// replaced by operations up to the boundary (an updated id may appear in
// both versions); the next applying refresh hides them.
//
// The flushes of a Refresh call run at once; those of the periodic
// refresh take turns for the CPU budget (see scheduledRefresh).
func (w *IndexWriter) Refresh(ctx context.Context, applyDeletes bool) (RefreshResult, error) {
	return w.refresh(ctx, applyDeletes, false)
}

// scheduledRefresh is the periodic refresh (Options.RefreshInterval): its
// flushes each wait for a slot of the CPU budget, ahead of any merge, so
// the refreshes of many shards take turns on part of the cores instead of
// all of them at once. A Refresh a caller asked for (an explicit refresh,
// refresh=true, a commit) is foreground work someone waits on: its
// flushes run in parallel at once.
func (w *IndexWriter) scheduledRefresh(ctx context.Context, applyDeletes bool) (RefreshResult, error) {
	return w.refresh(ctx, applyDeletes, true)
}

func (w *IndexWriter) refresh(ctx context.Context, applyDeletes, budgeted bool) (RefreshResult, error) {
	// A flush that fails leaves the writer unusable (its documents would be
	// lost), so a caller giving up must not abort one: the work is bounded
	// by the RAM budget.
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	w.segments.mu.Lock()
	defer w.segments.mu.Unlock()
	// Running merges pause until we publish (see mergeYield).
	resume := w.yield.begin(w.segments.anyMergingLocked(), w.mergesBehind)
	defer resume()

	// 1. Swap: with no operation holding a DWPT, the boundary is every
	// operation sequenced so far, and every DWPT holding docs is taken.
	if err := w.flushControl.markForFullFlush(); err != nil {
		return RefreshResult{}, err
	}
	swapped := time.Now()
	w.mu.Lock()
	boundarySeq, boundary := w.seqNo, w.delTail
	w.versions.rotate()
	w.deleteBytes = 0
	w.mu.Unlock()
	toFlush, swapGen := w.flushControl.takeFullFlush()

	// 2. Flush them, and wait for flushes others started before the swap.
	var wg sync.WaitGroup
	for _, pt := range toFlush {
		wg.Go(func() {
			if budgeted {
				slot, waited := w.opts.CPUBudget.Acquire(ctx, cpubudget.Flush, pt.ram)
				defer slot.Release()
				w.stats.flushBudgetWaitNanos.Add(int64(waited))
			}
			w.flushOne(ctx, pt)
		})
	}
	wg.Wait()
	newSegs, err := w.flushControl.waitForFlush(swapGen)
	if err != nil {
		return RefreshResult{}, fmt.Errorf("engine: refresh: %w", err)
	}
	flushed := time.Now()

	// 3. Add them to the segments and apply deletes up to the boundary.
	changed := w.segments.publishLocked(newSegs, boundary, applyDeletes)
	if w.writeOutDocValuesUpdatesLocked() {
		changed = true
	}

	// 4. Publish.
	old := w.current.Load()
	res := RefreshResult{Changed: changed, SeqNo: boundarySeq, NewSegments: len(newSegs),
		SwapWait: swapped.Sub(start), Flush: flushed.Sub(swapped), ApplyDeletes: time.Since(flushed)}
	w.mu.Lock()
	applied := old.appliedSeqNo.Load()
	if applyDeletes {
		applied = boundarySeq
	}
	if changed {
		w.version++
		nr := newReader(w.segments.segs, boundarySeq, w.version)
		nr.appliedSeqNo.Store(applied)
		nr.addMarkers = cloneMarkers(w.segments.addMarkers)
		w.current.Store(nr)
	} else {
		old.appliedSeqNo.Store(applied)
		old.seqNo.Store(boundarySeq)
	}
	w.versions.published(applyDeletes)
	w.bufferedBytes.Store(w.versions.bytes + w.deleteBytes)
	w.refreshed.Store(boundarySeq)
	close(w.refreshedCh)
	w.refreshedCh = make(chan struct{})
	w.mu.Unlock()
	resume()
	if changed {
		w.releaseAsync(old)
		w.maybeMergeLocked()
	}
	res.Took = time.Since(start)
	w.stats.refreshes.Add(1)
	w.stats.refreshNanos.Add(int64(res.Took))
	w.stats.observeRefresh(res.Took)
	return res, nil
}

// releaseAsync drops the writer's reference to a replaced reader off the
// refresh path: if no search holds it, that closes the segment readers only
// it used (unmapping them) and deletes their files, which for large
// merged-away segments takes long enough to show in refresh latency.
func (w *IndexWriter) releaseAsync(r *Reader) { w.releasing.Go(r.Release) }

// RefreshedSeqNo is the highest sequence number visible in the current
// reader.
func (w *IndexWriter) RefreshedSeqNo() int64 { return w.refreshed.Load() }

// WaitForGeneration blocks until operation seq is visible, or ctx ends. It
// does not trigger a refresh itself; the Engine's refresher does.
func (w *IndexWriter) WaitForGeneration(ctx context.Context, seq int64) error {
	for {
		w.mu.Lock()
		ch := w.refreshedCh
		closed := w.closed
		w.mu.Unlock()
		if w.refreshed.Load() >= seq {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("engine: waiting for seq %d: %w", seq, ctx.Err())
		}
	}
}
