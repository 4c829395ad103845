package cpubudget

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// granted reports whether acquire returned within d.
func acquireAsync(b *Budget, kind Kind, bytes int64) (<-chan *Slot, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *Slot, 1)
	go func() {
		s, _ := b.Acquire(ctx, kind, bytes)
		ch <- s
	}()
	return ch, cancel
}

func waitWaiters(t *testing.T, b *Budget, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, w := b.InUse(); w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %d waiters", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, ch <-chan *Slot, what string) *Slot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatalf("%s never got a slot", what)
		return nil
	}
}

func notYet(t *testing.T, ch <-chan *Slot, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s got a slot while none was free", what)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestOrder: with every slot taken, the next free slot goes to waiting
// flushes first, then to merges, then to the scrubber; within a kind the
// smallest first.
func TestOrder(t *testing.T) {
	b := New(1)
	hold, _ := b.Acquire(context.Background(), Merge, 1)
	type w struct {
		name  string
		kind  Kind
		bytes int64
	}
	arrivals := []w{{"scrub", Scrub, 1}, {"merge 30", Merge, 30}, {"flush a", Flush, 100}, {"merge 10", Merge, 10}, {"flush b", Flush, 1}, {"merge 20", Merge, 20}}
	want := []string{"flush b", "flush a", "merge 10", "merge 20", "merge 30", "scrub"}
	chans := map[string]<-chan *Slot{}
	for i, a := range arrivals {
		ch, cancel := acquireAsync(b, a.kind, a.bytes)
		defer cancel()
		chans[a.name] = ch
		waitWaiters(t, b, i+1)
	}
	if got, _ := b.InUse(); got != 1 {
		t.Fatalf("held %d, want 1", got)
	}
	hold.Release()
	for i, name := range want {
		s := recv(t, chans[name], name)
		for _, later := range want[i+1:] {
			notYet(t, chans[later], later)
		}
		s.Release()
	}
	if h, w := b.InUse(); h != 0 || w != 0 {
		t.Fatalf("left %d held, %d waiting", h, w)
	}
}

// TestYield: a merge's checkpoint hands its slot to a waiting flush and
// gets it back after; with no flush waiting it keeps it; flushes never
// yield.
func TestYield(t *testing.T) {
	ctx := context.Background()
	b := New(1)
	m, _ := b.Acquire(ctx, Merge, 1)
	if d := m.Yield(ctx); d != 0 || !m.held {
		t.Fatalf("Yield with no flush waiting: waited %v, held %v", d, m.held)
	}
	mergeWaiting, cancel := acquireAsync(b, Merge, 1)
	defer cancel()
	waitWaiters(t, b, 1)
	if d := m.Yield(ctx); d != 0 || !m.held {
		t.Fatal("a merge yielded to another merge")
	}
	flush, cancelF := acquireAsync(b, Flush, 1)
	defer cancelF()
	waitWaiters(t, b, 2)
	yielded := make(chan time.Duration)
	go func() { yielded <- m.Yield(ctx) }()
	f := recv(t, flush, "the waiting flush")
	select {
	case <-yielded:
		t.Fatal("Yield returned while the flush holds the only slot")
	case <-time.After(20 * time.Millisecond):
	}
	if f.Yield(ctx) != 0 {
		t.Fatal("a flush yielded")
	}
	f.Release()
	// Equal sizes go in arrival order: the other merge queued first.
	other := recv(t, mergeWaiting, "the other merge")
	other.Release()
	select {
	case <-yielded:
	case <-time.After(5 * time.Second):
		t.Fatal("Yield never got the slot back")
	}
	m.Release()
	m.Release() // idempotent
	if h, w := b.InUse(); h != 0 || w != 0 {
		t.Fatalf("left %d held, %d waiting", h, w)
	}
}

// TestCancelledWait: a waiter whose ctx ends gets a slot it does not hold
// and leaves the queue.
func TestCancelledWait(t *testing.T) {
	b := New(1)
	hold, _ := b.Acquire(context.Background(), Flush, 1)
	ch, cancel := acquireAsync(b, Flush, 1)
	waitWaiters(t, b, 1)
	cancel()
	s := recv(t, ch, "the cancelled waiter")
	if s.held {
		t.Fatal("a cancelled waiter holds a slot")
	}
	s.Release() // no-op
	if h, w := b.InUse(); h != 1 || w != 0 {
		t.Fatalf("held %d waiting %d, want 1 and 0", h, w)
	}
	if b.flushes.Load() != 0 {
		t.Fatalf("waiting flushes %d after the cancel", b.flushes.Load())
	}
	hold.Release()
}

func TestNilSlotAndContext(t *testing.T) {
	var s *Slot
	ctx := context.Background()
	s.Release()
	if s.Reacquire(ctx) != 0 || s.Yield(ctx) != 0 {
		t.Fatal("a nil slot waited")
	}
	if FromContext(ctx) != nil {
		t.Fatal("slot from an empty context")
	}
	b := New(2)
	got, _ := b.Acquire(ctx, Merge, 1)
	if FromContext(WithSlot(ctx, got)) != got {
		t.Fatal("WithSlot/FromContext lost the slot")
	}
	got.Release()
	if got.Reacquire(ctx); !got.held {
		t.Fatal("Reacquire did not take the slot back")
	}
	got.Release()
}

func TestProcess(t *testing.T) {
	if p := Process(); p != Process() || p.Slots() < 1 {
		t.Fatalf("Process: not one budget of at least one slot (%d)", Process().Slots())
	}
	if New(0).Slots() != 1 {
		t.Fatal("New(0) has no slot")
	}
}

// spin keeps more goroutines runnable than there are Ps until stop.
func spin(t *testing.T) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 2 {
		wg.Go(func() {
			for !done.Load() {
			}
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

func TestStepAside(t *testing.T) {
	ctx := context.Background()
	b := New(1)
	s, _ := b.Acquire(ctx, Merge, 1)
	defer s.Release()
	time.Sleep(20 * time.Millisecond) // some held time to spend

	if d := s.StepAside(ctx, nil); d != 0 {
		t.Errorf("stepped aside %v with nothing waiting for a CPU", d)
	}
	stop := spin(t)
	defer stop()
	if d := s.StepAside(ctx, func() bool { return true }); d != 0 {
		t.Errorf("stepped aside %v while merging is behind", d)
	}
	d := s.StepAside(ctx, nil)
	total := d
	// The upper bound only catches a loop that never stops: on a loaded
	// 2-core CI machine (and under -race) one sleep has overrun by 90 ms.
	if d < stepAsideSleep || d > stepAsideMax+time.Second {
		t.Errorf("stepped aside %v with goroutines waiting, want %v..%v", d, stepAsideSleep, stepAsideMax)
	}
	// Over many checkpoints the slot keeps its share of the time.
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		total += s.StepAside(ctx, nil)
	}
	// Sleeps overrun while every P spins: allow a little over the share.
	held := time.Since(s.since)
	if float64(s.aside) > (stepAsideShare+0.1)*float64(held) {
		t.Errorf("aside %v of %v held, above the %.2f share", s.aside, held, stepAsideShare)
	}
	if total != s.aside {
		t.Errorf("returned %v in all, slot counts %v", total, s.aside)
	}

	// A waiting flush ends stepping aside: Yield hands the slot over.
	flush, cancel := acquireAsync(b, Flush, 1)
	defer cancel()
	waitWaiters(t, b, 1)
	if d := s.StepAside(ctx, nil); d != 0 {
		t.Errorf("stepped aside %v with a flush waiting", d)
	}
	yielded := make(chan struct{})
	go func() { s.Yield(ctx); close(yielded) }()
	recv(t, flush, "flush").Release()
	<-yielded
}
