package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/document"
)

// TestRefreshFlushTakesABudgetSlot: the periodic refresh's flush runs only
// while it holds a slot of the writer's CPU budget, and its wait is
// counted; a refresh someone asked for does not wait.
func TestRefreshFlushTakesABudgetSlot(t *testing.T) {
	ctx := context.Background()
	b := cpubudget.New(1)
	ti := newTestWriterOpts(t, WriterOptions{RAMBufferBytes: 16 << 20, CPUBudget: b})
	w := ti.w
	var doc document.Document
	add := func(id string) {
		if _, err := w.Add(ctx, makeDoc(&doc, id, 1, 5)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		add(fmt.Sprintf("d%d", i))
	}
	other, _ := b.Acquire(ctx, cpubudget.Flush, 1) // another shard's flush
	done := make(chan error, 1)
	go func() {
		_, err := w.scheduledRefresh(ctx, true)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("refresh finished (err %v) while the only slot was taken", err)
	case <-time.After(50 * time.Millisecond):
	}
	other.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("refresh never finished after the slot was released")
	}
	r := w.Acquire()
	if n := r.NumDocs(); n != 10 {
		t.Fatalf("%d docs visible, want 10", n)
	}
	r.Release()

	other, _ = b.Acquire(ctx, cpubudget.Flush, 1)
	add("explicit")
	go func() {
		_, err := w.Refresh(ctx, true)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an explicit refresh waited for the CPU budget")
	}
	other.Release()
	r = w.Acquire()
	defer r.Release()
	if n := r.NumDocs(); n != 11 {
		t.Fatalf("%d docs visible after an explicit refresh, want 11", n)
	}
	if got := time.Duration(w.stats.flushBudgetWaitNanos.Load()); got < 40*time.Millisecond {
		t.Fatalf("flush budget wait %v, want >= 40ms", got)
	}
	if h, n := b.InUse(); h != 0 || n != 0 {
		t.Fatalf("budget: %d held, %d waiting", h, n)
	}
}
