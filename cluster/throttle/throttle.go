// Package throttle paces work at a rate that can change while it runs: the
// requests_per_second of a reindex, applied per document by the data nodes
// and by the coordinator's baseline mode, and a node's peer-recovery bytes
// per second (WaitN, one token a byte).
package throttle

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle paces documents at requests_per_second, a rate that can change
// at any moment. It is a token bucket (x/time/rate) holding up to
// burstWindow of documents, so lateness is carried: a goroutine that wakes
// late — timers fire a millisecond or more late on a busy machine, 25
// documents at 25,000/s — finds the tokens that accrued meanwhile and goes
// on at once, instead of losing them (a timer per document reached ~2,560
// of 25,000 docs/s). Waits shorter than minWait are not slept: the debt
// stays in the bucket and a later wait covers it, so a fast rate costs a
// timer per millisecond, not per document. A (re)start does not bank a
// burst: the bucket starts empty. A waiter wakes up on SetRate, gives back
// its reservation and waits again under the new rate, so a rethrottle takes
// effect at once rather than after the wait planned under the old one.
type Throttle struct {
	lim *rate.Limiter

	mu      sync.Mutex
	rate    float64 // docs per second; <= 0 unlimited
	changed chan struct{}
	waited  time.Duration
}

const (
	// burstWindow bounds the lateness carried, and a burst after a pause.
	burstWindow = 100 * time.Millisecond
	minWait     = time.Millisecond
)

// New returns a throttle at perSec docs/s (<= 0: unlimited).
func New(perSec float64) *Throttle {
	t := &Throttle{lim: rate.NewLimiter(1, 1), changed: make(chan struct{})}
	t.setRateLocked(perSec)
	return t
}

// SetRate changes the rate (docs/s, <= 0 unlimited) and wakes every
// waiter.
func (t *Throttle) SetRate(perSec float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setRateLocked(perSec)
	close(t.changed)
	t.changed = make(chan struct{})
}

// setRateLocked sets the rate; the limiter keeps its last finite one while
// unlimited, and starts empty when limited again.
func (t *Throttle) setRateLocked(r float64) {
	t.rate = r
	if r <= 0 {
		return
	}
	now := time.Now()
	t.lim.SetLimitAt(now, rate.Limit(r))
	t.lim.SetBurstAt(now, max(1, int(r*burstWindow.Seconds())))
	if n := int(t.lim.TokensAt(now)); n > 0 {
		t.lim.AllowN(now, n) // start empty
	}
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
func (t *Throttle) Wait(ctx context.Context) error { return t.WaitN(ctx, 1) }

// WaitN blocks until n more units (documents, bytes) may go, or ctx ends.
// More than the bucket holds is waited for in bucket-sized parts.
func (t *Throttle) WaitN(ctx context.Context, n int) error {
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.mu.Lock()
		unlimited, changed := t.rate <= 0, t.changed
		t.mu.Unlock()
		if unlimited {
			return nil
		}
		part := min(n, t.lim.Burst())
		res := t.lim.ReserveN(time.Now(), part)
		if !res.OK() { // the burst shrank meanwhile (SetRate)
			continue
		}
		d := res.Delay()
		if d < minWait {
			n -= part
			continue
		}
		timer := time.NewTimer(d)
		start := time.Now()
		select {
		case <-timer.C:
			n -= part
		case <-changed:
			timer.Stop()
			res.Cancel() // wait again under the new rate
		case <-ctx.Done():
			timer.Stop()
			res.Cancel()
		}
		t.mu.Lock()
		t.waited += time.Since(start)
		t.mu.Unlock()
	}
	return ctx.Err()
}
