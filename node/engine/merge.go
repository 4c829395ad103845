package engine

import (
	"context"
	"fmt"
	"slices"
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

// oneMerge is a registered merge: its inputs are pinned (ref-counted) and
// marked merging until it commits or fails.
type oneMerge struct {
	inputs    []*segState
	snapLive  []*index.FixedBitSet
	estimated int64
}

func (w *IndexWriter) mergingEnabled() bool {
	return w.opts.MergePolicy != nil && w.opts.MergeScheduler != nil && w.opts.Merger != nil
}

// maybeMergeLocked asks the policy for merges over the current segments and
// submits them. Called with refreshMu held, after a refresh or a merge
// changed the segment list.
func (w *IndexWriter) maybeMergeLocked() {
	if !w.mergingEnabled() || w.isClosed() {
		return
	}
	segs := make([]mergepolicy.Segment, len(w.segs))
	merging := make(map[string]bool, len(w.merging))
	byName := make(map[string]*segState, len(w.segs))
	for i, s := range w.segs {
		segs[i] = mergepolicy.Segment{Name: s.info.Name, SizeBytes: s.sizeBytes, MaxDoc: s.info.MaxDoc, DelCount: s.delCount}
		byName[s.info.Name] = s
		if w.merging[s] {
			merging[s.info.Name] = true
		}
	}
	spec, err := w.opts.MergePolicy.FindMerges(segs, merging)
	if err != nil {
		w.log.Error("engine: merge policy failed", "err", err)
		return
	}
	for _, om := range spec.Merges {
		m := &oneMerge{estimated: om.EstimatedBytes}
		for _, name := range om.Segments {
			s := byName[name]
			if s == nil || w.merging[s] {
				m = nil
				break
			}
			m.inputs = append(m.inputs, s)
		}
		if m == nil || len(m.inputs) == 0 {
			continue
		}
		for _, s := range m.inputs {
			s.incRef() // pinned by the merge
			s.liveShared = true
			m.snapLive = append(m.snapLive, s.live)
			w.merging[s] = true
		}
		w.mergesRunning.Add(1)
		err := w.opts.MergeScheduler.Submit(mergescheduler.Merge{
			Name:           m.inputs[0].info.Name + "+",
			EstimatedBytes: om.EstimatedBytes,
			Run:            func(ctx context.Context, rl *mergescheduler.RateLimiter) error { return w.runMerge(ctx, m, rl) },
		})
		if err != nil {
			w.releaseMergeLocked(m)
			w.mergesRunning.Done()
			w.log.Warn("engine: submitting merge", "err", err)
		}
	}
}

// releaseMergeLocked unpins a merge's inputs (refreshMu held).
func (w *IndexWriter) releaseMergeLocked(m *oneMerge) {
	for _, s := range m.inputs {
		delete(w.merging, s)
		s.decRef()
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
	// hold one while it waits for refreshMu or for a refresh, whose
	// flushes may be waiting for that slot.
	slot := cpubudget.FromContext(ctx)
	var seg *segState
	defer func() {
		if err != nil {
			if seg != nil {
				seg.decRef()
			}
			slot.Release()
			w.refreshMu.Lock()
			w.releaseMergeLocked(m)
			w.refreshMu.Unlock()
			w.stats.mergesFailed.Add(1)
			w.noteCorruption("merge", err)
		}
	}()
	start := time.Now()
	inputs := make([]MergeInput, len(m.inputs))
	for i, s := range m.inputs {
		inputs[i] = MergeInput{Reader: s.reader, Live: m.snapLive[i]}
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
	w.refreshMu.Lock()
	defer w.refreshMu.Unlock()
	if w.isClosed() {
		return fmt.Errorf("engine: merge into %s: %w", name, ErrClosed)
	}
	w.commitMergeLocked(m, seg, docMap)
	w.stats.merges.Add(1)
	w.stats.mergeNanos.Add(int64(time.Since(start)))
	w.maybeMergeLocked()
	return nil
}

// commitMergeLocked replaces m's inputs by seg in the segment list
// (visible at the next refresh). Inputs are first brought up to the most
// advanced delete cursor among them, then every doc deleted since the merge
// started is deleted in seg through docMap: no delete lost, no doc
// resurrected.
func (w *IndexWriter) commitMergeLocked(m *oneMerge, seg *segState, docMap DocMap) {
	cursor := m.inputs[0].delCursor
	for _, s := range m.inputs[1:] {
		if s.delCursor.seq > cursor.seq {
			cursor = s.delCursor
		}
	}
	for i, s := range m.inputs {
		s.applyDeletes(cursor)
		snap, now := m.snapLive[i], s.live
		if now == snap {
			continue
		}
		for d := range s.info.MaxDoc {
			if (snap == nil || snap.Get(d)) && !now.Get(d) {
				if nd := docMap(i, d); nd >= 0 {
					if seg.live == nil {
						seg.live = index.NewFixedBitSetAllSet(seg.info.MaxDoc)
					}
					if seg.live.Clear(nd) {
						seg.delCount++
					}
				}
			}
		}
	}
	seg.delCursor = cursor
	first := slices.Index(w.segs, m.inputs[0])
	if first < 0 {
		first = len(w.segs) // cannot happen: merging segments are never dropped
	}
	segs := make([]*segState, 0, len(w.segs)+1)
	for i, s := range w.segs {
		if i == first {
			segs = append(segs, seg)
		}
		if !slices.Contains(m.inputs, s) {
			segs = append(segs, s)
		}
	}
	if first == len(w.segs) {
		segs = append(segs, seg)
	}
	w.segs = segs
	w.segsDirty = true
	for _, s := range m.inputs {
		s.decRef() // the writer's list reference
	}
	w.releaseMergeLocked(m)
}
