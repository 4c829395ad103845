// Package cpubudget shares a process's cores between background index
// work — refresh flushes and small merges — and everything else: searches,
// and the requests that index.
//
// A data node hosts many shards, and `sluice dev` hosts three nodes in one
// process; each shard refreshes once a second and merges on its own. Left
// alone, the refresh flushes of several shards and a merge run at once and
// take every core for tens of milliseconds, and a search arriving then
// waits: Go preempts a running goroutine only after 10 ms. A Budget has a
// few slots — Process has max(1, GOMAXPROCS/2) — and such work runs only
// while it holds one, so the other cores stay free for searches.
//
// Flushes come first: a refresh is what searchers and refresh=wait_for
// callers wait on, so a flush gets the next free slot before any merge,
// and a merge holding a slot hands it over at its next checkpoint when a
// flush waits (Slot.Yield). Within a kind the smallest goes first. Merges
// that an IO throttle already slows (big ones) take no slot. The scrubber,
// which re-verifies files nobody is waiting for, comes last: it takes a
// slot for each chunk it checksums and gives it back after.
//
// A slot holder must not wait for anything that another slot holder, or a
// goroutine waiting for a slot, may hold: a merge releases its slot before
// it takes its writer's refresh lock, and while it pauses for a refresh.
package cpubudget

import (
	"cmp"
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the kind of work a slot is for.
type Kind uint8

const (
	// Flush: writing a refresh's in-memory segments. Goes first.
	Flush Kind = iota
	// Merge: a small merge, after every waiting flush.
	Merge
	// Scrub: re-verifying the checksums of files at rest (the engine's
	// scrubber), one chunk per slot, after every waiting flush and merge.
	Scrub
)

// Budget is a number of slots of background work. Safe for concurrent use.
type Budget struct {
	mu      sync.Mutex
	slots   int
	used    int
	seq     uint64
	waiters []*waiter
	flushes atomic.Int32 // waiting flushes, read lock-free by Slot.Yield
}

type waiter struct {
	kind    Kind
	bytes   int64
	seq     uint64
	granted chan struct{} // closed when the slot is handed over
}

// New returns a budget of slots (at least 1).
func New(slots int) *Budget { return &Budget{slots: max(1, slots)} }

// Process is the budget a process's engines share unless told otherwise:
// max(1, GOMAXPROCS/2) slots, so at least half the cores stay for
// searching and indexing.
var Process = sync.OnceValue(func() *Budget { return New(runtime.GOMAXPROCS(0) / 2) })

// Slots returns the budget's size.
func (b *Budget) Slots() int { return b.slots }

// InUse returns how many slots are held and how many waiters there are.
func (b *Budget) InUse() (held, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, len(b.waiters)
}

// Acquire waits for a slot for work of kind and size bytes, and returns it
// with how long it waited. When ctx ends first the returned slot is not
// held (its Release is a no-op) and the caller runs anyway, to be stopped
// by the same ctx.
func (b *Budget) Acquire(ctx context.Context, kind Kind, bytes int64) (*Slot, time.Duration) {
	s := &Slot{b: b, kind: kind, bytes: bytes}
	return s, s.acquire(ctx)
}

func (b *Budget) before(x, y *waiter) bool {
	return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.bytes, y.bytes), cmp.Compare(x.seq, y.seq)) < 0
}

// grantLocked hands free slots to the first waiters.
func (b *Budget) grantLocked() {
	for b.used < b.slots && len(b.waiters) > 0 {
		i := 0
		for j := 1; j < len(b.waiters); j++ {
			if b.before(b.waiters[j], b.waiters[i]) {
				i = j
			}
		}
		w := b.waiters[i]
		b.waiters = slices.Delete(b.waiters, i, i+1)
		if w.kind == Flush {
			b.flushes.Add(-1)
		}
		b.used++
		close(w.granted)
	}
}

// Slot is one piece of work's claim on a Budget. It belongs to the
// goroutine doing the work. A nil *Slot is valid and holds nothing: work
// that takes no slot can call its methods unconditionally.
type Slot struct {
	b     *Budget
	kind  Kind
	bytes int64
	held  bool

	since time.Time        // first acquired, for the step-aside share
	aside time.Duration    // stepped aside so far
	runq  []metrics.Sample // the runtime's runnable count, read by StepAside
}

func (s *Slot) acquire(ctx context.Context) time.Duration {
	b := s.b
	if s.since.IsZero() {
		s.since = time.Now()
	}
	b.mu.Lock()
	if b.used < b.slots && len(b.waiters) == 0 {
		b.used++
		s.held = true
		b.mu.Unlock()
		return 0
	}
	b.seq++
	w := &waiter{kind: s.kind, bytes: s.bytes, seq: b.seq, granted: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	if s.kind == Flush {
		b.flushes.Add(1)
	}
	b.mu.Unlock()

	start := time.Now()
	select {
	case <-w.granted:
		s.held = true
		return time.Since(start)
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.granted: // granted as ctx ended: keep it, the caller releases it
		s.held = true
	default:
		b.waiters = slices.DeleteFunc(b.waiters, func(x *waiter) bool { return x == w })
		if s.kind == Flush {
			b.flushes.Add(-1)
		}
	}
	return time.Since(start)
}

// Release gives the slot back. Releasing a slot not held does nothing.
func (s *Slot) Release() {
	if s == nil || !s.held {
		return
	}
	s.held = false
	b := s.b
	b.mu.Lock()
	b.used--
	b.grantLocked()
	b.mu.Unlock()
}

// Reacquire waits for the slot again after Release, and returns how long
// it waited. A slot already held is kept.
func (s *Slot) Reacquire(ctx context.Context) time.Duration {
	if s == nil || s.held {
		return 0
	}
	return s.acquire(ctx)
}

// Yield is a merge's checkpoint: if a flush waits for a slot, it hands
// over its own and waits for a slot again, behind the flushes. Otherwise
// it costs one atomic load. It returns how long it waited.
func (s *Slot) Yield(ctx context.Context) time.Duration {
	if s == nil || !s.held || s.kind == Flush || s.b.flushes.Load() == 0 {
		return 0
	}
	s.Release()
	return s.acquire(ctx)
}

// Stepping aside (Slot.StepAside): how long one sleep lasts, how long one
// checkpoint may step aside in all, and the most of a slot's held time
// spent stepped aside, so a merge keeps at least a quarter of its core.
const (
	stepAsideSleep = 250 * time.Microsecond
	stepAsideMax   = 2 * time.Millisecond
	stepAsideShare = 0.75
)

// StepAside is a merge's checkpoint for everything else. A slot keeps
// other background work off the remaining cores, but the core it holds is
// still shared with searches and indexing requests through Go's scheduler,
// which lets a running goroutine go on for up to 10 ms while others wait:
// a search landing behind a merge waited that long. So while goroutines
// wait for a CPU (the runtime's runnable count), the merge sleeps in short
// steps, keeping its slot, and its core goes to them; it stops when none
// wait, when a flush waits for the slot (Yield hands it over), after
// stepAsideMax at one checkpoint, and whenever the slot has spent
// stepAsideShare of its held time aside. behind, if not nil, reports that
// merging is behind (indexing waits for it), and then it does not step
// aside at all. Costs about 60 ns when no goroutine waits. It returns how
// long it slept.
func (s *Slot) StepAside(ctx context.Context, behind func() bool) time.Duration {
	if s == nil || !s.held || s.kind == Flush {
		return 0
	}
	if s.runq == nil {
		s.runq = []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	}
	var slept time.Duration
	for slept < stepAsideMax && ctx.Err() == nil && s.b.flushes.Load() == 0 {
		if metrics.Read(s.runq); s.runq[0].Value.Kind() != metrics.KindUint64 || s.runq[0].Value.Uint64() == 0 {
			break
		}
		if float64(s.aside) >= stepAsideShare*float64(time.Since(s.since)) {
			break
		}
		if slept == 0 && behind != nil && behind() {
			break
		}
		start := time.Now()
		time.Sleep(stepAsideSleep)
		d := time.Since(start)
		slept += d
		s.aside += d
	}
	return slept
}

type slotKey struct{}

// WithSlot returns ctx carrying s, for work that holds a slot across
// layers (a merge scheduler acquires it, the merge's checkpoints yield it).
func WithSlot(ctx context.Context, s *Slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// FromContext returns the slot ctx carries, or nil.
func FromContext(ctx context.Context) *Slot {
	s, _ := ctx.Value(slotKey{}).(*Slot)
	return s
}
