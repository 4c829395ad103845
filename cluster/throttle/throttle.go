// Package throttle paces work at a rate that can change while it runs: the
// requests_per_second of a reindex, applied per document by the data nodes
// and by the coordinator's baseline mode.
package throttle

import (
	"context"
	"sync"
	"time"
)

// Throttle paces documents at a rate that can change at any moment: a
// goroutine waiting for its turn wakes up on SetRate and re-plans against the
// new rate, so a rethrottle takes effect at once rather than after the wait
// that was planned under the old rate (x/time/rate keeps old reservations).
type Throttle struct {
	mu      sync.Mutex
	rate    float64   // docs per second; <= 0 unlimited
	next    time.Time // when the next document may go
	changed chan struct{}
	waited  time.Duration
}

// New returns a throttle at rate docs/s (<= 0: unlimited).
func New(rate float64) *Throttle {
	return &Throttle{rate: rate, changed: make(chan struct{})}
}

// SetRate changes the rate and wakes every waiter.
func (t *Throttle) SetRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rate = rate
	// Forget debt accumulated at the old rate beyond one interval.
	if now := time.Now(); t.next.After(now) && rate > 0 {
		t.next = now
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// Rate returns the current rate.
func (t *Throttle) Rate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// Waited returns the total time spent waiting.
func (t *Throttle) Waited() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waited
}

// Wait blocks until one more document may go, or ctx ends.
func (t *Throttle) Wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.rate <= 0 {
			t.mu.Unlock()
			return ctx.Err()
		}
		now := time.Now()
		if t.next.Before(now) {
			// Idle time does not bank a burst beyond one document.
			t.next = now
		}
		d := t.next.Sub(now)
		if d <= 0 {
			t.next = t.next.Add(time.Duration(float64(time.Second) / t.rate))
			t.mu.Unlock()
			return ctx.Err()
		}
		changed := t.changed
		t.mu.Unlock()
		timer := time.NewTimer(d)
		start := time.Now()
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		t.mu.Lock()
		t.waited += time.Since(start)
		t.mu.Unlock()
	}
}
