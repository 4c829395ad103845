package throttle

import (
	"context"
	"testing"
	"time"
)

// TestThrottleAchievesItsRate: a fast requested rate is what a cheap loop
// gets, within 10 %, lateness of the timers included (a timer per
// document, late by its granularity, reached a tenth of it). A loaded
// machine can stall the loop for longer than the burst window the
// throttle carries lateness over, so each rate gets three tries; the
// broken throttle missed by 90 % every time.
func TestThrottleAchievesItsRate(t *testing.T) {
	ctx := context.Background()
	for _, rate := range []float64{25_000, 1_000} {
		var got float64
		for try := 0; try < 3; try++ {
			th := New(rate)
			const window = 2 * time.Second
			start := time.Now()
			n := 0
			for time.Since(start) < window {
				if err := th.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				n++
			}
			got = float64(n) / time.Since(start).Seconds()
			t.Logf("requested %.0f docs/s, achieved %.0f (waited %v)", rate, got, th.Waited())
			if got > 1.1*rate {
				t.Fatalf("requested %.0f docs/s, achieved %.0f: the throttle lets more through", rate, got)
			}
			if got >= 0.9*rate {
				break
			}
		}
		if got < 0.9*rate {
			t.Errorf("requested %.0f docs/s, achieved %.0f in three tries", rate, got)
		}
	}
}
