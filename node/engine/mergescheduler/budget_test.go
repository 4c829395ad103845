package mergescheduler

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
)

func isStarted(m *testMerge) bool {
	select {
	case <-m.started:
		return true
	default:
		return false
	}
}

// TestBudgetSharedAcrossSchedulers: two schedulers (two shards) sharing a
// budget of one run one small merge at a time between them, the smallest
// waiting one next; big and fixed-rate merges do not take a slot.
func TestBudgetSharedAcrossSchedulers(t *testing.T) {
	b := cpubudget.New(1)
	s1 := newScheduler(t, Options{Budget: b})
	s2 := newScheduler(t, Options{Budget: b})

	first := newTestMerge("first", 10*mb)
	if err := s1.Submit(first.merge()); err != nil {
		t.Fatal(err)
	}
	<-first.started
	large, small := newTestMerge("large", 40*mb), newTestMerge("small", 1*mb)
	if err := s2.Submit(large.merge()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // large queues first
	if err := s1.Submit(small.merge()); err != nil {
		t.Fatal(err)
	}
	big := newTestMerge("big", MinBigMergeBytes)
	if err := s2.Submit(big.merge()); err != nil {
		t.Fatal(err)
	}
	<-big.started // not budgeted: runs beside the small merge holding the slot

	time.Sleep(50 * time.Millisecond)
	if isStarted(large) || isStarted(small) {
		t.Fatalf("a second small merge runs while the budget of 1 is taken (large %v, small %v)", isStarted(large), isStarted(small))
	}
	if st := s2.Stats(); st.Running != 2 {
		t.Errorf("waiting merges should count as started: s2 running %d, want 2", st.Running)
	}

	close(first.release)
	<-small.started // smallest first, though submitted later
	time.Sleep(20 * time.Millisecond)
	if isStarted(large) {
		t.Fatal("large started while small holds the slot")
	}
	close(small.release)
	<-large.started
	close(large.release)
	close(big.release)
	waitFor(t, "merges to finish", func() bool { return s1.Stats().Running == 0 && s2.Stats().Running == 0 })
	if w := s2.Stats().BudgetWaitTime; w < 50*time.Millisecond {
		t.Errorf("s2 BudgetWaitTime %v, want the time large waited (>= 50ms)", w)
	}

	// Fixed-rate small merges are already slowed by their rate: no slot.
	fixed := newScheduler(t, Options{Budget: b, Throttle: FixedIOThrottle, FixedMBPerSec: 1000})
	hold, f := newTestMerge("hold", mb), newTestMerge("fixed", mb)
	if err := s1.Submit(hold.merge()); err != nil {
		t.Fatal(err)
	}
	<-hold.started
	if err := fixed.Submit(f.merge()); err != nil {
		t.Fatal(err)
	}
	<-f.started
	close(f.release)
	close(hold.release)
}

// TestBudgetWaiterRunsOnClose: a merge waiting for the budget when its
// scheduler closes is still run once (aborted), as Submit promises, and
// gives up its place in the queue.
func TestBudgetWaiterRunsOnClose(t *testing.T) {
	b := cpubudget.New(1)
	s1 := newScheduler(t, Options{Budget: b})
	s2, err := New(Options{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	hold, waiting := newTestMerge("hold", mb), newTestMerge("waiting", mb)
	if err := s1.Submit(hold.merge()); err != nil {
		t.Fatal(err)
	}
	<-hold.started
	if err := s2.Submit(waiting.merge()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting.err:
		if err == nil {
			t.Error("a merge run after its scheduler closed succeeded; want it aborted")
		}
	default:
		t.Fatal("the waiting merge was never run")
	}
	close(hold.release)
	waitFor(t, "hold to finish", func() bool { return s1.Stats().Running == 0 })
	if held, waiting := b.InUse(); held != 0 || waiting != 0 {
		t.Errorf("budget leaked: %d held, %d waiting", held, waiting)
	}
}

func TestSchedulersShareTheProcessBudget(t *testing.T) {
	var o Options
	o.SetDefaults()
	if o.Budget != cpubudget.Process() {
		t.Error("schedulers do not share the process budget by default")
	}
}
