package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
)

// Defaults for merges yielding to refresh (Options.MergeYieldShare,
// Options.MaxMergeYield).
const (
	DefaultMergeYieldShare = 0.5
	DefaultMaxMergeYield   = time.Second
	// minMergeYield: with less budget left a refresh does not pause merges
	// at all; a pause that ends after a few ms buys the refresh nothing.
	minMergeYield = 5 * time.Millisecond
	// yieldCheckTerms: the merged view's term enums check for a pause every
	// this many terms. Merges otherwise pause only where they write, and
	// some stretches write nothing for a long time: singleton terms (every
	// _id) are inlined into the term dictionary, which is built in memory.
	yieldCheckTerms = 256
)

// mergeYield pauses running merges while a refresh runs. On a machine with
// few cores a merge competes with the refresh's flush for CPU, and the
// refresh is what searchers and refresh=wait_for callers are waiting on;
// a merge only loses the refresh's duration. Merges pause at their next
// checkpoint: every merge write (64 KiB, through the IOContext throttle),
// every yieldCheckTerms terms of the merged view, every yieldCheckTerms ids
// while the merged segment's _id bloom filter is built, and before warming.
//
// The pause is bounded so merges keep up: one refresh pauses merges for at
// most maxPause, and over time merges spend at most share of wall-clock
// time paused (a token bucket of maxPause, refilled at share). No pause
// starts while merging is behind (mergesBehind: indexing stalled waiting
// for merges, merges queued or stopped), so merges that indexing needs
// always run. A refresh never waits on a merge, so a pause cannot deadlock.
//
// The zero value is disabled; configure enables it.
type mergeYield struct {
	gate atomic.Pointer[chan struct{}] // non-nil while merges pause; closed on resume

	mu       sync.Mutex
	share    float64 // <= 0: disabled; >= 1: only maxPause bounds a pause
	maxPause time.Duration
	tokens   time.Duration // pause budget left
	refilled time.Time
	started  time.Time // start of the current pause
	timer    *time.Timer

	pauses   atomic.Int64 // refreshes that paused merges
	skipped  atomic.Int64 // refreshes during merges that did not: budget spent or merges behind
	pausedNS atomic.Int64 // time merges waited, summed over merges
}

// configure sets the budget; share <= 0 disables pausing.
func (y *mergeYield) configure(share float64, maxPause time.Duration) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.share, y.maxPause = share, maxPause
	y.tokens, y.refilled = maxPause, time.Time{}
}

// begin pauses merges for a refresh if any run (merging), the budget allows
// and merging is not behind. The returned func resumes them (idempotent);
// the budget may resume them earlier.
func (y *mergeYield) begin(merging bool, behind func() bool) (resume func()) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.share <= 0 || !merging || y.gate.Load() != nil {
		return func() {} // off, nothing to pause, or already paused
	}
	now := time.Now()
	y.refillLocked(now)
	if y.tokens < minMergeYield || behind() {
		y.skipped.Add(1)
		return func() {}
	}
	gate := make(chan struct{})
	y.gate.Store(&gate)
	y.started = now
	y.pauses.Add(1)
	// While paused the bucket refills at share and drains at 1.
	d := y.maxPause
	if y.share < 1 {
		d = min(d, time.Duration(float64(y.tokens)/(1-y.share)))
	}
	y.timer = time.AfterFunc(d, func() { y.resume(&gate) })
	return func() { y.resume(&gate) }
}

func (y *mergeYield) refillLocked(now time.Time) {
	if !y.refilled.IsZero() {
		y.tokens = min(y.maxPause, y.tokens+time.Duration(y.share*float64(now.Sub(y.refilled))))
	}
	y.refilled = now
}

// resume ends the pause gate belongs to, if it is still the current one.
func (y *mergeYield) resume(gate *chan struct{}) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.gate.Load() != gate {
		return
	}
	now := time.Now()
	y.refillLocked(now)
	y.tokens = max(0, y.tokens-now.Sub(y.started))
	y.timer.Stop()
	y.gate.Store(nil)
	close(*gate)
}

// pausing reports whether a pause is on: wait would block.
func (y *mergeYield) pausing() bool { return y.gate.Load() != nil }

// wait is a merge's checkpoint: it blocks while a pause is on, or until
// ctx ends (the caller then sees ctx's error at its next check). No pause:
// one atomic load.
func (y *mergeYield) wait(ctx context.Context) {
	gate := y.gate.Load()
	if gate == nil {
		return
	}
	start := time.Now()
	select {
	case <-*gate:
	case <-ctx.Done():
	}
	y.pausedNS.Add(int64(time.Since(start)))
}

// mergesBehind reports whether merging has a backlog, for schedulers that
// say (mergescheduler.ConcurrentMergeScheduler does): indexing blocked in
// MaybeStall, merges queued beyond MaxMergeCount, or big merges stopped
// beyond MaxThreadCount. Merges then get the cores, refresh or not.
func (w *IndexWriter) mergesBehind() bool {
	s, ok := w.opts.MergeScheduler.(interface{ Stats() mergescheduler.Stats })
	if !ok {
		return false
	}
	st := s.Stats()
	return st.Stalled > 0 || st.Pending > 0 || st.Stopped > 0
}

// yieldingReader is a merged view whose term enums are merge checkpoints.
// It embeds the merged LeafReader, so it has only LeafReader's methods.
type yieldingReader struct {
	index.LeafReader
	check func()
}

func (r yieldingReader) Terms(field string) index.Terms {
	t := r.LeafReader.Terms(field)
	if t == nil {
		return nil
	}
	return yieldingTerms{Terms: t, check: r.check}
}

type yieldingTerms struct {
	index.Terms
	check func()
}

func (t yieldingTerms) Iterator() index.TermsEnum {
	return &yieldingTermsEnum{TermsEnum: t.Terms.Iterator(), check: t.check}
}

type yieldingTermsEnum struct {
	index.TermsEnum
	check func()
	n     int
}

func (e *yieldingTermsEnum) Next() bool {
	if e.n++; e.n == yieldCheckTerms {
		e.n = 0
		e.check()
	}
	return e.TermsEnum.Next()
}
