package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
	"github.com/sluice-search/sluice/node/engine/store"
)

// MergeInput is one segment of a merge: its reader and its live docs as of
// the merge's start (nil: all live). Deleted docs are left out of the
// merged segment.
type MergeInput struct {
	Reader index.LeafReader
	Live   *index.FixedBitSet
}

// DocMap maps a doc of merge input i to its doc id in the merged segment,
// or -1 if it was deleted when the merge started.
type DocMap func(input, doc int) int

// SegmentMerger builds the merged view of inputs — a LeafReader over their
// live docs, inputs concatenated in order — for the codec to write
// (Lucene's SegmentMerger; node/engine/merge provides one).
type SegmentMerger func(ctx context.Context, inputs []MergeInput) (index.LeafReader, DocMap, error)

// MergePolicy picks merges (mergepolicy.TieredMergePolicy).
type MergePolicy interface {
	FindMerges(segs []mergepolicy.Segment, merging map[string]bool) (mergepolicy.MergeSpecification, error)
}

// MergeScheduler runs merges (mergescheduler.ConcurrentMergeScheduler).
type MergeScheduler interface {
	Submit(m mergescheduler.Merge) error
	// MaybeStall blocks indexing while merges fall too far behind.
	MaybeStall(ctx context.Context) error
}

func (w *IndexWriter) mergingEnabled() bool {
	return w.opts.MergePolicy != nil && w.opts.MergeScheduler != nil && w.opts.Merger != nil
}

// maybeMergeLocked asks the policy for merges over the current segments,
// registers them and submits them. Called with segments.mu held, after a
// refresh or a merge changed the segment list.
func (w *IndexWriter) maybeMergeLocked() {
	if !w.mergingEnabled() || w.isClosed() {
		return
	}
	spec, err := w.opts.MergePolicy.FindMerges(w.segments.mergeCandidatesLocked())
	if err != nil {
		w.log.Error("engine: merge policy failed", "err", err)
		return
	}
	for _, om := range spec.Merges {
		m := w.segments.registerMergeLocked(om.Segments, om.EstimatedBytes)
		if m == nil {
			continue
		}
		w.mergesRunning.Add(1)
		err := w.opts.MergeScheduler.Submit(mergescheduler.Merge{
			Name:           m.inputs[0].info.Name + "+",
			EstimatedBytes: om.EstimatedBytes,
			Run:            func(ctx context.Context, rl *mergescheduler.RateLimiter) error { return w.runMerge(ctx, m, rl) },
		})
		if err != nil {
			w.segments.releaseMergeLocked(m)
			w.mergesRunning.Done()
			w.log.Warn("engine: submitting merge", "err", err)
		}
	}
}

// runMerge writes the merged segment (throttled through rl), warms it, and
// swaps it in for its inputs. Deletes that reached the inputs while it ran
// are carried over through the doc map.
func (w *IndexWriter) runMerge(ctx context.Context, m *oneMerge, rl *mergescheduler.RateLimiter) (err error) {
	defer w.mergesRunning.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(w.closeCtx, cancel) // Close aborts merges
	defer stop()
	// A small merge holds a CPU budget slot (see cpubudget); it must never
	// hold one while it waits for segments.mu or for a refresh, whose
	// flushes may be waiting for that slot.
	slot := cpubudget.FromContext(ctx)
	var seg *segState
	defer func() {
		if err != nil {
			if seg != nil {
				seg.decRef()
			}
			slot.Release()
			w.segments.releaseMerge(m)
			w.stats.mergesFailed.Add(1)
			w.noteCorruption("merge", err)
		}
	}()
	start := time.Now()
	inputs := make([]MergeInput, len(m.inputs))
	for i := range m.inputs {
		inputs[i] = MergeInput{Reader: m.readers[i], Live: m.snapLive[i]}
	}
	merged, docMap, err := w.opts.Merger(ctx, inputs)
	if err != nil {
		return fmt.Errorf("engine: merge: %w", err)
	}
	check := func() {
		if w.yield.pausing() {
			slot.Release()
			w.yield.wait(ctx)
			slot.Reacquire(ctx)
			return
		}
		slot.Yield(ctx)
		if d := slot.StepAside(ctx, w.mergesBehind); d > 0 {
			w.stats.mergeStepAsideNanos.Add(int64(d))
		}
	}
	if err := w.verifyMergeInputs(ctx, m, check); err != nil {
		return err
	}
	merged = yieldingReader{LeafReader: merged, check: check}
	info, err := w.newSegmentInfo(merged.MaxDoc(), "merge", start)
	if err != nil {
		return err
	}
	name := info.Name
	ioctx := store.IOContext{Kind: store.IOMerge, EstimatedSize: m.estimated, Throttle: func(n int) error {
		check()
		_, err := rl.Pause(int64(n))
		return err
	}}
	if err := w.codec.WriteSegment(ctx, w.dir, info, merged, ioctx); err != nil {
		return fmt.Errorf("engine: merge into %s: %w", name, err)
	}
	r, err := w.codec.OpenSegment(w.dir, info)
	if err != nil {
		return fmt.Errorf("engine: open merged segment %s: %w", name, err)
	}
	// The _id bloom filter reads every id: as long as a merge's write of a
	// small field, so it pauses for refreshes too.
	seg = newSegStateNoBloom(info, r, w.fd, w.dir)
	seg.bloom = newIDBloom(yieldingReader{LeafReader: r, check: check})
	check()
	if warm := w.opts.MergedSegmentWarmer; warm != nil {
		if err := warm(ctx, r); err != nil {
			return fmt.Errorf("engine: warm merged segment %s: %w", name, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: merge into %s aborted: %w", name, err)
	}
	slot.Release()
	w.preCopyMerged(ctx, seg)
	w.segments.mu.Lock()
	defer w.segments.mu.Unlock()
	if w.isClosed() {
		return fmt.Errorf("engine: merge into %s: %w", name, ErrClosed)
	}
	w.segments.commitMergeLocked(m, seg, docMap)
	w.stats.merges.Add(1)
	w.stats.mergeNanos.Add(int64(time.Since(start)))
	w.maybeMergeLocked()
	return nil
}

// preCopyMerged hands a merged segment's files to the pre-copy hook
// (Options.MergedSegmentPreCopy) before the merge commits, bounded by its
// timeout; whatever it returns, the merge goes on. It holds no CPU slot
// and no lock: it waits on replicas.
func (w *IndexWriter) preCopyMerged(ctx context.Context, seg *segState) {
	hook := w.opts.MergedSegmentPreCopy
	if hook == nil {
		return
	}
	start := time.Now()
	files, err := seg.coreMetas(w.dir, w.codec)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, w.opts.MergePreCopyTimeout)
		err = hook(pctx, files)
		cancel()
	}
	if err != nil {
		w.log.Warn("engine: pre-copy of a merged segment failed; replicas copy it with the next checkpoint",
			"segment", seg.info.Name, "took", time.Since(start), "err", err)
	}
}
