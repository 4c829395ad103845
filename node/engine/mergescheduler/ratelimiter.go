package mergescheduler

import (
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrMergeAborted is returned by a RateLimiter (and its writers) once the
// merge it limits was aborted.
var ErrMergeAborted = errors.New("mergescheduler: merge aborted")

const (
	// minPauseCheck is how much rate-limited time may pass between checks:
	// a writer checks every min(1 MiB, minPauseCheck x rate) bytes.
	minPauseCheck = 25 * time.Millisecond
	maxCheckBytes = 1 << 20
	// Pauses shorter than minPause are skipped: sleeping that briefly is
	// imprecise and not worth a context switch.
	minPause = 2 * time.Millisecond
	// maxPause bounds one sleep so rate changes are re-read; rate changes and
	// aborts also wake sleepers at once.
	maxPause = 250 * time.Millisecond
	mib      = 1 << 20
)

// RateLimiter limits the write rate of one merge in MiB/s, like Lucene's
// MergeRateLimiter. Writers call Pause with the bytes written since their last
// call (RateLimitedWriter does it every MinPauseCheckBytes). The rate can
// change at any time, taking effect for sleepers at once; the scheduler can
// stop the merge entirely; Abort makes every pause and write fail with
// ErrMergeAborted, waking sleepers. Safe for concurrent use.
type RateLimiter struct {
	minPauseCheckBytes atomic.Int64
	aborted            atomic.Bool
	bytes              atomic.Int64
	pausedNS           atomic.Int64 // sleeping to hold the rate
	stoppedNS          atomic.Int64 // stopped by the scheduler

	mu       sync.Mutex
	mbPerSec float64 // +Inf: unlimited
	stopped  bool
	last     time.Time
	changed  chan struct{} // closed (and replaced) when rate or stopped change
	abortCh  chan struct{}
}

// NewRateLimiter returns a limiter at mbPerSec; 0 or +Inf mean unlimited.
func NewRateLimiter(mbPerSec float64) *RateLimiter {
	r := &RateLimiter{changed: make(chan struct{}), abortCh: make(chan struct{})}
	r.SetMBPerSec(mbPerSec)
	return r
}

// SetMBPerSec changes the rate; 0, negative, NaN or +Inf mean unlimited.
func (r *RateLimiter) SetMBPerSec(mbPerSec float64) {
	if !(mbPerSec > 0) {
		mbPerSec = math.Inf(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if mbPerSec == r.mbPerSec {
		return
	}
	r.mbPerSec = mbPerSec
	// Check often enough that one check's pause is about minPauseCheck.
	check := float64(maxCheckBytes)
	if b := minPauseCheck.Seconds() * mbPerSec * mib; b < check {
		check = max(b, 1)
	}
	r.minPauseCheckBytes.Store(int64(check))
	r.wakeLocked()
}

// MBPerSec returns the rate, +Inf when unlimited.
func (r *RateLimiter) MBPerSec() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mbPerSec
}

// MinPauseCheckBytes is how many bytes a writer may write between Pause calls.
func (r *RateLimiter) MinPauseCheckBytes() int64 { return r.minPauseCheckBytes.Load() }

// setStopped stops (or resumes) the merge: Pause blocks until resumed or
// aborted. The scheduler stops the largest merges when too many run.
func (r *RateLimiter) setStopped(stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped != stopped {
		r.stopped = stopped
		r.wakeLocked()
	}
}

func (r *RateLimiter) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

func (r *RateLimiter) wakeLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Abort makes Pause and writers return ErrMergeAborted from now on, waking
// any that sleep. Idempotent.
func (r *RateLimiter) Abort() {
	if r.aborted.CompareAndSwap(false, true) {
		close(r.abortCh)
	}
}

// Aborted reports whether Abort was called.
func (r *RateLimiter) Aborted() bool { return r.aborted.Load() }

// Pause records bytes written and sleeps as long as the rate requires (or
// while the merge is stopped). It returns the time slept, and ErrMergeAborted
// once the merge is aborted.
func (r *RateLimiter) Pause(bytes int64) (time.Duration, error) {
	r.bytes.Add(bytes)
	return r.pause(bytes)
}

func (r *RateLimiter) pause(bytes int64) (time.Duration, error) {
	var total time.Duration
	// Loop: a sleep ends early when the rate changes, and is capped at
	// maxPause; each round re-reads the rate.
	for {
		d, err := r.maybePause(bytes)
		if err != nil || d < 0 {
			return total, err
		}
		total += d
	}
}

// maybePause sleeps once if needed; it returns -1 when no sleep is needed.
func (r *RateLimiter) maybePause(bytes int64) (time.Duration, error) {
	if r.aborted.Load() {
		return 0, ErrMergeAborted
	}
	r.mu.Lock()
	changed := r.changed
	if r.stopped {
		r.mu.Unlock()
		start := time.Now()
		select {
		case <-changed:
		case <-r.abortCh:
		}
		d := time.Since(start)
		r.stoppedNS.Add(int64(d))
		return d, nil
	}
	now := time.Now()
	if math.IsInf(r.mbPerSec, 1) {
		r.last = now
		r.mu.Unlock()
		return -1, nil
	}
	// Instantaneous rate: these bytes are due this long after the last pause.
	due := r.last.Add(time.Duration(float64(bytes) / mib / r.mbPerSec * float64(time.Second)))
	wait := due.Sub(now)
	if wait <= minPause {
		// From now, not from due: enforce the current rate rather than
		// paying back idle time.
		r.last = now
		r.mu.Unlock()
		return -1, nil
	}
	r.mu.Unlock()

	t := time.NewTimer(min(wait, maxPause))
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-r.abortCh:
	}
	d := time.Since(now)
	r.pausedNS.Add(int64(d))
	return d, nil
}

// RateLimiterStats are totals over the limiter's life.
type RateLimiterStats struct {
	BytesWritten int64
	Paused       time.Duration // slept to hold the rate
	Stopped      time.Duration // stopped by the scheduler
}

// Stats returns the limiter's totals.
func (r *RateLimiter) Stats() RateLimiterStats {
	return RateLimiterStats{
		BytesWritten: r.bytes.Load(),
		Paused:       time.Duration(r.pausedNS.Load()),
		Stopped:      time.Duration(r.stoppedNS.Load()),
	}
}

// Writer wraps w so that writes are rate limited and fail with
// ErrMergeAborted once the merge is aborted. Each writer keeps its own count
// of bytes since its last pause, so use one per goroutine.
func (r *RateLimiter) Writer(w io.Writer) *RateLimitedWriter {
	return &RateLimitedWriter{w: w, rl: r}
}

// RateLimitedWriter is an io.Writer limited by a RateLimiter. Not safe for
// concurrent use (one per output file, as Lucene's RateLimitedIndexOutput).
type RateLimitedWriter struct {
	w          io.Writer
	rl         *RateLimiter
	sincePause int64
}

// Write pauses as the rate requires, then writes p.
func (w *RateLimitedWriter) Write(p []byte) (int, error) {
	if w.rl.aborted.Load() {
		return 0, ErrMergeAborted
	}
	n := int64(len(p))
	w.rl.bytes.Add(n)
	w.sincePause += n
	// Pause before writing, as Lucene does, so an aborted merge writes no more.
	if w.sincePause >= w.rl.minPauseCheckBytes.Load() {
		b := w.sincePause
		w.sincePause = 0
		if _, err := w.rl.pause(b); err != nil {
			return 0, err
		}
	}
	return w.w.Write(p)
}
