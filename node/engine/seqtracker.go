package engine

import "sync"

// seqTracker is a copy's local checkpoint (Elasticsearch's
// LocalCheckpointTracker): the highest seqNo such that the copy holds the
// operation of every seqNo up to it — in its translog or its last commit —
// and the highest seqNo it received. Operations arrive out of order (one
// ReplicateOps per primary bulk, bulks in flight concurrently), so the
// seqNos above the checkpoint are kept, with their terms, until the gap
// below them closes. Safe for concurrent use.
type seqTracker struct {
	mu         sync.Mutex
	checkpoint int64
	maxSeqNo   int64
	above      map[int64]uint64 // received above checkpoint: seqNo -> term
}

func newSeqTracker(checkpoint int64) *seqTracker {
	return &seqTracker{checkpoint: checkpoint, maxSeqNo: checkpoint, above: map[int64]uint64{}}
}

// mark records an operation received.
func (t *seqTracker) mark(seq int64, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markLocked(seq, term)
	t.advanceLocked()
}

func (t *seqTracker) markLocked(seq int64, term uint64) {
	t.maxSeqNo = max(t.maxSeqNo, seq)
	if seq > t.checkpoint {
		t.above[seq] = max(t.above[seq], term)
	}
}

func (t *seqTracker) advanceLocked() {
	for {
		if _, ok := t.above[t.checkpoint+1]; !ok {
			return
		}
		delete(t.above, t.checkpoint+1)
		t.checkpoint++
	}
}

// raiseTo records that every operation up to seq is held (a commit of a
// checkpoint that contains them).
func (t *seqTracker) raiseTo(seq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq <= t.checkpoint {
		return
	}
	t.checkpoint = seq
	t.maxSeqNo = max(t.maxSeqNo, seq)
	for s := range t.above {
		if s <= seq {
			delete(t.above, s)
		}
	}
	t.advanceLocked()
}

// trim forgets the operations a trim record voids (term below term, seqNo
// above aboveSeqNo). Below the checkpoint their terms are no longer known,
// so the checkpoint drops to aboveSeqNo at most: the local checkpoint stays
// a lower bound, and operations the new primary sends again are
// duplicates, which replay drops.
func (t *seqTracker) trim(term uint64, aboveSeqNo int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checkpoint = min(t.checkpoint, aboveSeqNo)
	t.maxSeqNo = t.checkpoint
	for s, tm := range t.above {
		switch {
		case s <= t.checkpoint:
			delete(t.above, s)
		case s > aboveSeqNo && tm < term:
			delete(t.above, s)
		default:
			t.maxSeqNo = max(t.maxSeqNo, s)
		}
	}
	t.advanceLocked()
}

// get returns the local checkpoint and the highest seqNo received.
func (t *seqTracker) get() (checkpoint, maxSeqNo int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkpoint, t.maxSeqNo
}

// reset starts over at checkpoint (a recovery's fresh translog).
func (t *seqTracker) reset(checkpoint int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checkpoint, t.maxSeqNo = checkpoint, checkpoint
	clear(t.above)
}
