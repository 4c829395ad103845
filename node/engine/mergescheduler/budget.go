package mergescheduler

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Budget caps how many small merges (under MinBigMergeBytes, the ones no
// IO throttle slows down) run at once across every scheduler that shares
// it. MaxThreadCount is per scheduler, that is per shard, and does not
// count small merges; a process hosting several shards (a data node, or
// all of `sluice dev`) could otherwise run one full-speed merge per shard
// and take every core from searches for the length of a merge burst. A
// merge waiting for the budget has started (it holds its goroutine and
// counts toward its scheduler's MaxMergeCount, so backpressure still
// works); the smallest waiting merge gets the next slot.
type Budget struct {
	mu      sync.Mutex
	slots   int
	used    int
	seq     uint64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	bytes   int64
	seq     uint64
	granted chan struct{} // closed when the slot is handed over
}

// NewBudget returns a budget of slots concurrent small merges (at least 1).
func NewBudget(slots int) *Budget { return &Budget{slots: max(1, slots)} }

// ProcessBudget is the budget schedulers share by default: max(1,
// GOMAXPROCS/2) small merges at once in the whole process, so at least half
// the cores stay for searching and indexing.
var ProcessBudget = sync.OnceValue(func() *Budget { return NewBudget(runtime.GOMAXPROCS(0) / 2) })

// Slots returns the budget's size.
func (b *Budget) Slots() int { return b.slots }

// acquire waits for a slot, smallest merge first. It returns the release
// func and how long it waited; when ctx ends first it returns a no-op
// release (the caller runs anyway, to be aborted by the same ctx).
func (b *Budget) acquire(ctx context.Context, bytes int64) (release func(), waited time.Duration) {
	b.mu.Lock()
	if b.used < b.slots && len(b.waiters) == 0 {
		b.used++
		b.mu.Unlock()
		return b.release, 0
	}
	b.seq++
	w := &budgetWaiter{bytes: bytes, seq: b.seq, granted: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	start := time.Now()
	select {
	case <-w.granted:
		return b.release, time.Since(start)
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.granted: // granted while ctx ended: keep the slot, release it later
		return b.release, time.Since(start)
	default:
	}
	b.waiters = slices.DeleteFunc(b.waiters, func(x *budgetWaiter) bool { return x == w })
	return func() {}, time.Since(start)
}

func (b *Budget) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used--
	if len(b.waiters) == 0 {
		return
	}
	i := 0
	for j, w := range b.waiters[1:] {
		if cmp.Or(cmp.Compare(w.bytes, b.waiters[i].bytes), cmp.Compare(w.seq, b.waiters[i].seq)) < 0 {
			i = j + 1
		}
	}
	w := b.waiters[i]
	b.waiters = slices.Delete(b.waiters, i, i+1)
	b.used++
	close(w.granted)
}
