package engine

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
)

// segmentSet is the index's list of live segments, as the writer keeps it
// between refreshes (Lucene's IndexWriter.segmentInfos with its merge
// registration; tantivy's SegmentUpdater and SegmentManager): a refresh
// adds flushed segments and applies queued deletes to every segment, a
// merge registers its inputs (pinned, marked merging) and commits by
// replacing them with the merged segment, AddIndexes queues segments and
// markers for the next refresh, and Commit snapshots the list with the
// markers it holds.
type segmentSet struct {
	counter atomic.Int64 // names new segments (SegmentInfos.counter)

	// mu serialises changes to the list, as tantivy's SegmentUpdater runs
	// them one at a time: a refresh holds it from its swap to its
	// publication, a merge to commit or unregister, AddIndexes to queue
	// its segments, Commit to snapshot. It guards the fields below and
	// segState's writer fields.
	mu      sync.Mutex
	segs    []*segState // as of the last refresh
	dirty   bool        // a merge changed segs since the last refresh
	merging map[*segState]bool
	// AddIndexes: segments waiting for the next refresh to publish them,
	// with their markers; markers published (or loaded from the last
	// commit), which every commit records.
	pendingAdds    []*segState
	pendingMarkers map[string]string
	addMarkers     map[string]string
}

func newSegmentSet() *segmentSet {
	return &segmentSet{merging: make(map[*segState]bool)}
}

// nextName names a new segment (Lucene's "_" + base-36 counter).
func (ss *segmentSet) nextName() string { return segmentName(ss.counter.Add(1)) }

// raiseCounter makes the counter at least n.
func (ss *segmentSet) raiseCounter(n int64) {
	for {
		c := ss.counter.Load()
		if c >= n || ss.counter.CompareAndSwap(c, n) {
			return
		}
	}
}

// load makes a commit's segments the list (a new writer's).
func (ss *segmentSet) load(segs []*segState, si *SegmentInfos) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.segs = segs
	ss.addMarkers = addMarkersFrom(si)
	ss.counter.Store(si.Counter)
}

// anyMergingLocked reports whether a merge is running.
func (ss *segmentSet) anyMergingLocked() bool { return len(ss.merging) > 0 }

// publishLocked is a refresh's change to the list: the segments AddIndexes
// queued, then the refresh's flushed segments, are appended (the queued
// markers become published); if applyDeletes, deletes up to boundary reach
// every segment's live docs; segments left without a live doc are dropped
// unless a merge holds them. It reports whether the list or any live docs
// changed since the last refresh.
func (ss *segmentSet) publishLocked(flushed []*segState, boundary *delNode, applyDeletes bool) bool {
	changed := len(flushed) > 0 || ss.dirty || len(ss.pendingAdds) > 0
	ss.dirty = false
	segs := make([]*segState, 0, len(ss.segs)+len(ss.pendingAdds)+len(flushed))
	segs = append(append(append(segs, ss.segs...), ss.pendingAdds...), flushed...)
	ss.pendingAdds = nil
	if len(ss.pendingMarkers) > 0 {
		if ss.addMarkers == nil {
			ss.addMarkers = map[string]string{}
		}
		maps.Copy(ss.addMarkers, ss.pendingMarkers)
		ss.pendingMarkers = nil
	}
	kept := segs[:0]
	for _, s := range segs {
		if applyDeletes && s.applyDeletes(boundary) > 0 {
			changed = true
		}
		if s.freezeDocValues() {
			changed = true
		}
		if s.numDocs() == 0 && !ss.merging[s] { // fully deleted: drop without merging
			s.decRef()
			changed = true
			continue
		}
		kept = append(kept, s)
	}
	ss.segs = kept
	return changed
}

// mergeCandidatesLocked describes the list for the merge policy.
func (ss *segmentSet) mergeCandidatesLocked() ([]mergepolicy.Segment, map[string]bool) {
	segs := make([]mergepolicy.Segment, len(ss.segs))
	merging := make(map[string]bool, len(ss.merging))
	for i, s := range ss.segs {
		segs[i] = mergepolicy.Segment{Name: s.info.Name, SizeBytes: s.sizeBytes, MaxDoc: s.info.MaxDoc, DelCount: s.delCount}
		if ss.merging[s] {
			merging[s.info.Name] = true
		}
	}
	return segs, merging
}

// oneMerge is a registered merge: its inputs are pinned (ref-counted) and
// marked merging until it commits or fails.
type oneMerge struct {
	inputs    []*segState
	snapLive  []*index.FixedBitSet
	snapDV    []*docValuesUpdates // the inputs' updates the merge reads
	readers   []index.LeafReader  // the inputs as the merge reads them
	estimated int64
}

// registerMergeLocked pins the named segments for a merge and snapshots
// their live docs, or returns nil if one is gone or already merging.
func (ss *segmentSet) registerMergeLocked(names []string, estimated int64) *oneMerge {
	m := &oneMerge{estimated: estimated}
	for _, name := range names {
		i := slices.IndexFunc(ss.segs, func(s *segState) bool { return s.info.Name == name })
		if i < 0 || ss.merging[ss.segs[i]] {
			return nil
		}
		m.inputs = append(m.inputs, ss.segs[i])
	}
	if len(m.inputs) == 0 {
		return nil
	}
	for _, s := range m.inputs {
		s.incRef() // pinned by the merge
		s.liveShared = true
		m.snapLive = append(m.snapLive, s.live)
		m.snapDV = append(m.snapDV, s.dv)
		m.readers = append(m.readers, s.leafReader())
		ss.merging[s] = true
	}
	return m
}

// releaseMergeLocked unpins a merge's inputs.
func (ss *segmentSet) releaseMergeLocked(m *oneMerge) {
	for _, s := range m.inputs {
		delete(ss.merging, s)
		s.decRef()
	}
}

// releaseMerge unpins the inputs of a merge that failed.
func (ss *segmentSet) releaseMerge(m *oneMerge) {
	ss.mu.Lock()
	ss.releaseMergeLocked(m)
	ss.mu.Unlock()
}

// commitMergeLocked replaces m's inputs by seg in the list (visible at the
// next refresh). Inputs are first brought up to the most advanced delete
// cursor among them, then every doc deleted since the merge started is
// deleted in seg through docMap: no delete lost, no doc resurrected.
func (ss *segmentSet) commitMergeLocked(m *oneMerge, seg *segState, docMap DocMap) {
	cursor := m.inputs[0].delCursor
	for _, s := range m.inputs[1:] {
		if s.delCursor.seq > cursor.seq {
			cursor = s.delCursor
		}
	}
	for i, s := range m.inputs {
		s.applyDeletes(cursor)
		s.freezeDocValues()
		carryDocValuesUpdates(seg, i, m.snapDV[i], s.dv, docMap)
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
	seg.freezeDocValues()
	seg.delCursor = cursor
	first := slices.Index(ss.segs, m.inputs[0])
	if first < 0 {
		first = len(ss.segs) // cannot happen: merging segments are never dropped
	}
	segs := make([]*segState, 0, len(ss.segs)+1)
	for i, s := range ss.segs {
		if i == first {
			segs = append(segs, seg)
		}
		if !slices.Contains(m.inputs, s) {
			segs = append(segs, s)
		}
	}
	if first == len(ss.segs) {
		segs = append(segs, seg)
	}
	ss.segs = segs
	ss.dirty = true
	for _, s := range m.inputs {
		s.decRef() // the list's reference
	}
	ss.releaseMergeLocked(m)
}

// addPendingLocked queues AddIndexes segments for the next refresh, which
// publishes them with the marker (its value: the live docs added).
func (ss *segmentSet) addPendingLocked(segs []*segState, marker string, docs int) {
	ss.pendingAdds = append(ss.pendingAdds, segs...)
	if ss.pendingMarkers == nil {
		ss.pendingMarkers = map[string]string{}
	}
	ss.pendingMarkers[marker] = strconv.Itoa(docs)
}

// addMarkerLocked reports whether an AddIndexes with this marker is
// published or queued, and the live docs it added.
func (ss *segmentSet) addMarkerLocked(marker string) (int, bool) {
	v, ok := ss.addMarkers[marker]
	if !ok {
		v, ok = ss.pendingMarkers[marker]
	}
	if !ok {
		return 0, false
	}
	docs, _ := strconv.Atoi(v)
	return docs, true
}

// withAddMarkersLocked returns user data with every published marker
// added, for a commit of the published segments.
func (ss *segmentSet) withAddMarkersLocked(ud map[string]string) map[string]string {
	return withAddMarkers(ud, ss.addMarkers)
}

// closeLocked empties the list and returns the segments whose list
// reference the caller drops.
func (ss *segmentSet) closeLocked() []*segState {
	out := slices.Concat(ss.segs, ss.pendingAdds)
	ss.segs, ss.pendingAdds = nil, nil
	return out
}
