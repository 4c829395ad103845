package datapath

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(100)
	r1, err := b.Reserve(ctx, 60, 0)
	if err != nil || b.Used() != 60 {
		t.Fatalf("reserve 60: %v, used %d", err, b.Used())
	}
	if _, err := b.Reserve(ctx, 50, 0); !errors.Is(err, errFull) {
		t.Fatalf("no room, no wait: %v", err)
	}
	start := time.Now()
	if _, err := b.Reserve(ctx, 50, 20*time.Millisecond); !errors.Is(err, errFull) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("no room within the wait: %v after %v", err, time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Reserve(cctx, 50, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	// A waiter gets the room a release gives.
	got := make(chan error, 1)
	go func() {
		r, err := b.Reserve(ctx, 50, -1)
		r.Release() // before telling: the checks below count on it
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	r1.Release()
	r1.Release() // idempotent
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("after every release: used %d", b.Used())
	}

	// More than the budget is clamped: it runs alone rather than never.
	big, err := b.Reserve(ctx, 1000, 0)
	if err != nil || big.Bytes() != 100 {
		t.Fatalf("oversized: %v %d", err, big.Bytes())
	}
	big.Release()

	// Resize: down gives back at once, up takes anew; a failed resize
	// holds nothing.
	r, _ := b.Reserve(ctx, 80, 0)
	if err := r.Resize(ctx, 30, 0); err != nil || b.Used() != 30 {
		t.Fatalf("resize down: %v, used %d", err, b.Used())
	}
	other, _ := b.Reserve(ctx, 60, 0)
	if err := r.Resize(ctx, 50, 0); !errors.Is(err, errFull) || b.Used() != 60 || r.Bytes() != 0 {
		t.Fatalf("failed resize up: %v, used %d, held %d", err, b.Used(), r.Bytes())
	}
	other.Release()
	if err := r.Resize(ctx, 70, 0); err != nil || b.Used() != 70 {
		t.Fatalf("resize up: %v, used %d", err, b.Used())
	}
	r.Release()
	if err := r.Resize(ctx, 10, 0); err == nil || b.Used() != 0 {
		t.Fatalf("resize after release: %v, used %d", err, b.Used())
	}
	var none *Reservation
	none.Release()
}

// TestAdmitBulkReleasesWithTheCall: the room a bulk call takes before it
// is read goes back when the call's context ends, however the call ended.
func TestAdmitBulkReleasesWithTheCall(t *testing.T) {
	d := New(nil, nil, Options{MaxInFlightBulkBytes: 64 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	cctx, err := d.AdmitBulk(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.BulkBudget().Used(); got != d.opts.MaxRequestBytes() {
		t.Fatalf("admitted: used %d, want %d", got, d.opts.MaxRequestBytes())
	}
	r, err := d.holdBulk(cctx, 1000, 0)
	if err != nil || d.BulkBudget().Used() != 1000 {
		t.Fatalf("resized to the request: %v, used %d", err, d.BulkBudget().Used())
	}
	_ = r
	cancel()
	deadline := time.Now().Add(time.Second)
	for d.BulkBudget().Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d.BulkBudget().Used() != 0 {
		t.Fatalf("after the call: used %d", d.BulkBudget().Used())
	}
	// A full budget refuses the call unread.
	hold, _ := d.BulkBudget().Reserve(context.Background(), 64<<20, 0)
	defer hold.Release()
	if _, err := d.AdmitBulk(context.Background()); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("full budget: %v", err)
	}
}
