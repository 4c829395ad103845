package loadbench

import (
	"context"
	"time"
)

// A pacer sends requests at their intended times. Latency counts from the
// intended time, so any lateness of the pacer's own wake-ups is charged to
// the server: Go's timers wake ~1 ms late on an otherwise idle Linux
// process (time.Sleep(50µs) took 1.08 ms at p50 on the benchmark machine),
// which added up to a millisecond to every request and showed as tail. On
// Linux the pacer therefore sleeps in nanosleep(2) on its own thread with
// a 1 ns timer slack (30 µs late at p50); elsewhere it uses Go's timers.
type pacer interface {
	// sleepUntil returns at t or when ctx ends (with its error).
	sleepUntil(ctx context.Context, t time.Time) error
	// stop releases the pacer; call it on the goroutine that made it.
	stop()
}

type timerPacer struct{}

func (timerPacer) sleepUntil(ctx context.Context, t time.Time) error {
	wait := time.Until(t)
	if wait <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (timerPacer) stop() {}
