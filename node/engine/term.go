package engine

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrStaleTerm is wrapped by errors that refuse a primary term older than
// the one this copy knows (fencing): a replica refusing an old primary's
// operations or checkpoints, a term that would go backwards, an engine
// opened as the primary of a term its own log has seen superseded.
var ErrStaleTerm = errors.New("engine: stale primary term")

// UserDataPrimaryTerm is the commit point user-data key of the primary
// term the committing engine (or replica) knew.
const UserDataPrimaryTerm = "primary_term"

// termCounterFloor is the least segment counter a primary of term uses:
// the primaries of different terms name segments (and live-docs
// generations, which come from the same counter) from disjoint ranges, so
// a new primary never writes a file under a name an old primary gave
// other bytes — a replica that copied the old primary's file still has it.
// Term 1 starts at 0, so an index written before terms keeps its names.
func termCounterFloor(term int64) int64 { return (term - 1) << 32 }

// PrimaryTerm is the term the engine logs its operations with.
func (e *Engine) PrimaryTerm() int64 { return e.term.Load() }

// SetPrimaryTerm raises the term of the operations the engine logs from
// now on (the shard's primary term moved on while this copy stayed
// primary) and jumps the segment counter to the new term's range. A lower
// term is refused with an error wrapping ErrStaleTerm; the same term is a
// no-op.
func (e *Engine) SetPrimaryTerm(term int64) error {
	for {
		cur := e.term.Load()
		switch {
		case term < cur:
			return fmt.Errorf("%w: term %d is older than the engine's %d", ErrStaleTerm, term, cur)
		case term == cur:
			return nil
		}
		if e.term.CompareAndSwap(cur, term) {
			e.w.segments.raiseCounter(termCounterFloor(term))
			return nil
		}
	}
}

// knownTerm is the highest primary term a commit point records (0: none).
func commitTerm(si *SegmentInfos) int64 {
	if si == nil {
		return 0
	}
	t, _ := strconv.ParseInt(si.UserData[UserDataPrimaryTerm], 10, 64)
	return t
}

// adoptTerm settles the engine's term at open: want (0: adopt known),
// never below known, the highest term the commit and the translog hold.
func adoptTerm(want, known int64) (int64, error) {
	known = max(known, 1)
	switch {
	case want == 0:
		return known, nil
	case want < known:
		return 0, fmt.Errorf("%w: opened as primary of term %d, but this copy has seen term %d", ErrStaleTerm, want, known)
	}
	return want, nil
}
