package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// ErrTranslogTrimmed: the translog no longer holds every operation asked
// for (a commit trimmed them); copy files instead.
var ErrTranslogTrimmed = errors.New("engine: translog trimmed past the requested seqNo")

// retention holds translog retention locks: commits keep every operation
// at or above the lowest locked seqNo (Elasticsearch's translog retention
// for peer recovery).
type retention struct {
	mu    sync.Mutex
	locks map[*int64]struct{}
}

// keepFrom is the lowest seqNo a lock retains (math.MaxInt64: none).
func (r *retention) keepFrom() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := int64(math.MaxInt64)
	for l := range r.locks {
		from = min(from, *l)
	}
	return from
}

// RetainTranslogFrom keeps every logged operation with a seqNo at or above
// seqNo in the translog until release is called: commits go on, and trim
// only below it. A primary takes one for a copy's peer recovery (from the
// recovery checkpoint's seqNo + 1) and streams the operations with
// TranslogSnapshot. It fails with ErrTranslogTrimmed if a commit has
// trimmed at or above seqNo already, and on an engine without a translog.
// release is idempotent.
func (e *Engine) RetainTranslogFrom(seqNo int64) (release func(), err error) {
	d := &e.dur
	if d.tl == nil {
		return nil, errors.New("engine: no translog to retain")
	}
	// Under commitMu: no trim runs between the check and the lock.
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	if trimmed := int64(d.tl.Stats().TrimmedBelow); seqNo < trimmed {
		return nil, fmt.Errorf("%w: operations below %d may be gone, %d asked for", ErrTranslogTrimmed, trimmed, seqNo)
	}
	r := &d.retain
	lock := new(int64)
	*lock = max(seqNo, 0)
	r.mu.Lock()
	if r.locks == nil {
		r.locks = map[*int64]struct{}{}
	}
	r.locks[lock] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.locks, lock)
			r.mu.Unlock()
		})
	}, nil
}

// TranslogSnapshot returns the logged operations with a seqNo above
// aboveSeqNo, with their terms, in the order they were logged (not seqNo
// order), without those trim records void — to stream to a copy that
// recovers (after its files) or to resync replicas after a promotion. It
// holds the files it reads: Close it. Hold a retention lock
// (RetainTranslogFrom) from before the point the copy's files cover, or
// a commit may trim what it should read; without one it fails with
// ErrTranslogTrimmed when operations above aboveSeqNo may be gone.
func (e *Engine) TranslogSnapshot(ctx context.Context, aboveSeqNo int64) (*translog.Snapshot, error) {
	d := &e.dur
	if d.tl == nil {
		return nil, errors.New("engine: no translog")
	}
	from := uint64(max(aboveSeqNo, 0)) + 1
	snap, err := d.tl.Snapshot(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("engine: translog snapshot: %w", err)
	}
	if trimmed := d.tl.Stats().TrimmedBelow; from < trimmed {
		snap.Close()
		return nil, fmt.Errorf("%w: operations below %d may be gone, above %d asked for", ErrTranslogTrimmed, trimmed, aboveSeqNo)
	}
	return snap, nil
}
