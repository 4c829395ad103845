package engine

import (
	"context"
	"sync"
	"time"
)

// refresher is the engine's background refresh goroutine (Lucene's
// ControlledRealTimeReopenThread). It refreshes every interval (if > 0);
// when someone waits for a sequence number (WaitForGeneration) it refreshes
// at most waitDelay after the first waiter arrived, so a burst of
// refresh=wait_for requests shares one refresh and a waiter never waits for
// a full interval; a realtime get asks for an immediate refresh; and when
// the version map and delete queue grow past a quarter of the RAM budget
// (refresh disabled during a bulk copy) it refreshes to release them.
type refresher struct {
	e         *Engine
	mu        sync.Mutex
	interval  time.Duration
	waitDelay time.Duration
	waitSince time.Time // first unserved waiter; zero if none
	urgent    bool
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
}

func newRefresher(e *Engine, interval, waitDelay time.Duration) *refresher {
	r := &refresher{e: e, interval: interval, waitDelay: waitDelay,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *refresher) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *refresher) setInterval(d time.Duration) {
	r.mu.Lock()
	r.interval = d
	r.mu.Unlock()
	r.wake()
}

// addWaiter registers interest in a refresh soon (or now, if urgent).
func (r *refresher) addWaiter(urgent bool) {
	r.mu.Lock()
	if r.waitSince.IsZero() {
		r.waitSince = time.Now()
	}
	r.urgent = r.urgent || urgent
	r.mu.Unlock()
	r.wake()
}

// checkBuffered asks for a refresh when unrefreshed bookkeeping (version
// map, queued deletes) outgrows a quarter of the RAM budget.
func (r *refresher) checkBuffered() {
	if r.e.w.bufferedBytes.Load() > r.e.opts.RAMBufferBytes/4 {
		r.addWaiter(true)
	}
}

func (r *refresher) next(last time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.urgent {
		return time.Now()
	}
	var at time.Time
	if r.interval > 0 {
		at = last.Add(r.interval)
	}
	if !r.waitSince.IsZero() {
		if w := r.waitSince.Add(r.waitDelay); at.IsZero() || w.Before(at) {
			at = w
		}
	}
	return at
}

func (r *refresher) run() {
	defer close(r.done)
	last := time.Now()
	for {
		var timer *time.Timer
		var fire <-chan time.Time
		if at := r.next(last); !at.IsZero() {
			timer = time.NewTimer(time.Until(at))
			fire = timer.C
		}
		select {
		case <-r.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-r.kick:
			if timer != nil {
				timer.Stop()
			}
			continue
		case <-fire:
		}
		r.mu.Lock()
		r.urgent, r.waitSince = false, time.Time{}
		r.mu.Unlock()
		// A failed engine publishes nothing more.
		if r.e.Failure() == nil {
			if _, err := r.e.w.scheduledRefresh(context.Background(), !r.e.opts.SkipDeletesOnRefresh); err != nil {
				r.e.opts.Logger.Error("engine: scheduled refresh failed", "err", err)
			}
		}
		last = time.Now()
	}
}

// refreshNow refreshes in the caller's goroutine.
func (r *refresher) refreshNow(ctx context.Context, apply bool) (RefreshResult, error) {
	return r.e.w.Refresh(ctx, apply)
}

func (r *refresher) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}
