package mergescheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
)

// Auto IO throttle constants, from Lucene's ConcurrentMergeScheduler.
const (
	StartMBPerSec = 20.0    // initial auto throttle target
	MinMBPerSec   = 5.0     // the target never falls below this
	MaxMBPerSec   = 10240.0 // nor rises above this
	// MinBigMergeBytes: smaller merges are neither throttled (auto mode) nor
	// stopped to respect MaxThreadCount; they are cheap and keep the segment
	// count down.
	MinBigMergeBytes = 50 << 20
	// backlogAge: a big merge running this long while a similar one starts
	// means merging is falling behind.
	backlogAge = 3 * time.Second
)

// ErrClosed is returned by Submit, MaybeStall and Wait once the scheduler is
// closed.
var ErrClosed = errors.New("mergescheduler: closed")

// ThrottleMode selects how merge writes are rate limited.
type ThrottleMode int

const (
	// AutoIOThrottle adapts one target rate for merges of at least
	// MinBigMergeBytes: up 20% when merges back up, down 10% when not.
	AutoIOThrottle ThrottleMode = iota
	// FixedIOThrottle limits every merge to Options.FixedMBPerSec.
	FixedIOThrottle
	// NoIOThrottle does not limit merges.
	NoIOThrottle
)

func (m ThrottleMode) String() string {
	switch m {
	case AutoIOThrottle:
		return "auto"
	case FixedIOThrottle:
		return "fixed"
	case NoIOThrottle:
		return "off"
	}
	return fmt.Sprintf("ThrottleMode(%d)", int(m))
}

// Options configure a ConcurrentMergeScheduler; zero values mean defaults.
type Options struct {
	// MaxThreadCount is how many merges of at least MinBigMergeBytes write at
	// once; larger ones beyond it are stopped until smaller ones finish.
	// Default max(1, min(4, GOMAXPROCS/2)).
	MaxThreadCount int
	// MaxMergeCount is how many merges may be started (goroutines); past it
	// merges wait in a queue and MaybeStall blocks indexing. Default
	// MaxThreadCount+5.
	MaxMergeCount int
	// Throttle is the IO throttle mode (default AutoIOThrottle).
	Throttle ThrottleMode
	// FixedMBPerSec is the rate for FixedIOThrottle.
	FixedMBPerSec float64
	// ForceMergeMBPerSec limits forced merges in every mode; 0 = unlimited.
	ForceMergeMBPerSec float64
	// Logger receives throttle changes (debug) and merge failures (warn).
	Logger *slog.Logger
	// Budget caps small unthrottled merges across the schedulers sharing
	// it, together with refresh flushes (package cpubudget); default
	// cpubudget.Process(). cpubudget.New(n) gives a private one.
	Budget *cpubudget.Budget
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.MaxThreadCount == 0 {
		o.MaxThreadCount = max(1, min(4, runtime.GOMAXPROCS(0)/2))
	}
	if o.MaxMergeCount == 0 {
		o.MaxMergeCount = o.MaxThreadCount + 5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Budget == nil {
		o.Budget = cpubudget.Process()
	}
}

// Validate reports inconsistent options. Call it after SetDefaults.
func (o Options) Validate() error {
	switch {
	case o.MaxThreadCount < 1:
		return fmt.Errorf("mergescheduler: MaxThreadCount must be >= 1, got %d", o.MaxThreadCount)
	case o.MaxMergeCount < o.MaxThreadCount:
		return fmt.Errorf("mergescheduler: MaxMergeCount %d < MaxThreadCount %d", o.MaxMergeCount, o.MaxThreadCount)
	case o.Throttle < AutoIOThrottle || o.Throttle > NoIOThrottle:
		return fmt.Errorf("mergescheduler: unknown throttle mode %d", o.Throttle)
	case o.Throttle == FixedIOThrottle && !(o.FixedMBPerSec > 0):
		return fmt.Errorf("mergescheduler: FixedIOThrottle needs FixedMBPerSec > 0, got %v", o.FixedMBPerSec)
	}
	return nil
}

// Merge is one merge for the scheduler to run.
type Merge struct {
	// Name identifies the merge in logs (e.g. the output segment name).
	Name string
	// EstimatedBytes is the expected size of the merged segment
	// (mergepolicy.OneMerge.EstimatedBytes); it orders and throttles merges.
	EstimatedBytes int64
	// Forced merges (force-merge API) run at Options.ForceMergeMBPerSec.
	Forced bool
	// Run performs the merge, writing all output through rl (rl.Writer or
	// rl.Pause) so it can be throttled, stopped and aborted. ctx is cancelled
	// and rl aborted when the scheduler closes. Run is called exactly once for
	// every merge Submit accepted, even if the scheduler closes first (then
	// with ctx already cancelled and rl aborted), so the engine can release
	// the merge's segments in one place.
	Run func(ctx context.Context, rl *RateLimiter) error
}

type task struct {
	m       Merge
	seq     uint64
	rl      *RateLimiter
	started time.Time
}

// ConcurrentMergeScheduler runs merges on their own goroutines, smallest
// first, stopping the largest when more than MaxThreadCount big merges run,
// stalling indexing (MaybeStall) when more than MaxMergeCount are due, and
// throttling merge writes in MiB/s. See the package doc.
type ConcurrentMergeScheduler struct {
	opts   Options
	log    *slog.Logger
	now    func() time.Time // tests move the clock for the throttle rule
	ctx    context.Context  // cancelled on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu             sync.Mutex
	closed         bool
	seq            uint64
	pending        []*task // submitted, not started
	running        []*task // started, not finished
	changed        chan struct{}
	throttle       ThrottleMode
	fixedMBPerSec  float64
	targetMBPerSec float64 // auto mode target
	stats          Stats   // cumulative fields only
	stalledNow     int
}

// New returns a running scheduler.
func New(opts Options) (*ConcurrentMergeScheduler, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ConcurrentMergeScheduler{
		opts:           opts,
		log:            opts.Logger.With("component", "mergescheduler"),
		now:            time.Now,
		ctx:            ctx,
		cancel:         cancel,
		changed:        make(chan struct{}),
		throttle:       opts.Throttle,
		fixedMBPerSec:  opts.FixedMBPerSec,
		targetMBPerSec: StartMBPerSec,
	}, nil
}

// Options returns the effective options.
func (s *ConcurrentMergeScheduler) Options() Options { return s.opts }

type mergeCtxKey struct{}

// Submit queues a merge and starts it as soon as fewer than MaxMergeCount
// merges are started. It never blocks; call MaybeStall from the indexing
// path afterwards for backpressure.
func (s *ConcurrentMergeScheduler) Submit(m Merge) error {
	if m.Run == nil {
		return fmt.Errorf("mergescheduler: merge %q has no Run func", m.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("submit merge %q: %w", m.Name, ErrClosed)
	}
	s.seq++
	s.pending = append(s.pending, &task{m: m, seq: s.seq, rl: NewRateLimiter(0)})
	s.launchLocked()
	return nil
}

// launchLocked starts pending merges, smallest first, up to MaxMergeCount.
func (s *ConcurrentMergeScheduler) launchLocked() {
	for len(s.pending) > 0 && len(s.running) < s.opts.MaxMergeCount {
		i := 0
		for j, t := range s.pending {
			if less(t, s.pending[i]) {
				i = j
			}
		}
		t := s.pending[i]
		s.pending = slices.Delete(s.pending, i, i+1)
		t.started = s.now()
		s.running = append(s.running, t)
		s.updateIOThrottleLocked(t)
		s.start(t)
	}
	s.updateMergeThreadsLocked()
	s.wakeLocked()
}

func less(a, b *task) bool {
	if a.m.EstimatedBytes != b.m.EstimatedBytes {
		return a.m.EstimatedBytes < b.m.EstimatedBytes
	}
	return a.seq < b.seq
}

func (s *ConcurrentMergeScheduler) start(t *task) {
	s.wg.Add(1)
	ctx := context.WithValue(s.ctx, mergeCtxKey{}, s)
	go func() {
		defer s.wg.Done()
		if s.budgeted(t) {
			slot, waited := s.opts.Budget.Acquire(ctx, cpubudget.Merge, t.m.EstimatedBytes)
			defer slot.Release()
			// The merge's checkpoints hand the slot to waiting flushes.
			ctx = cpubudget.WithSlot(ctx, slot)
			s.mu.Lock()
			s.stats.BudgetWaitTime += waited
			s.mu.Unlock()
		}
		err := t.m.Run(ctx, t.rl)
		s.finish(t, err)
	}()
}

// budgeted says whether t takes a Budget slot: small merges that no IO
// throttle slows down. Big merges are bounded by MaxThreadCount and the
// throttle instead, and must not hold a slot small merges wait for.
func (s *ConcurrentMergeScheduler) budgeted(t *task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !t.m.Forced && t.m.EstimatedBytes < MinBigMergeBytes && s.throttle != FixedIOThrottle
}

func (s *ConcurrentMergeScheduler) finish(t *task, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = slices.DeleteFunc(s.running, func(r *task) bool { return r == t })
	st := t.rl.Stats()
	s.stats.BytesWritten += st.BytesWritten
	s.stats.ThrottledTime += st.Paused
	s.stats.StoppedTime += st.Stopped
	switch {
	case err == nil:
		s.stats.MergesDone++
	case errors.Is(err, ErrMergeAborted) || (t.rl.Aborted() && errors.Is(err, context.Canceled)):
		s.stats.MergesAborted++
	default:
		s.stats.MergesFailed++
		s.log.Warn("merge failed", "merge", t.m.Name, "estimatedMB", mbOf(t.m.EstimatedBytes), "err", err)
	}
	s.launchLocked()
}

func (s *ConcurrentMergeScheduler) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// updateMergeThreadsLocked sets every running merge's rate: the largest big
// merges beyond MaxThreadCount are stopped, so smaller merges finish first.
func (s *ConcurrentMergeScheduler) updateMergeThreadsLocked() {
	byBytes := slices.Clone(s.running)
	slices.SortFunc(byBytes, func(a, b *task) int {
		return cmp.Or(cmp.Compare(b.m.EstimatedBytes, a.m.EstimatedBytes), cmp.Compare(a.seq, b.seq))
	})
	big := 0
	for _, t := range byBytes {
		if t.m.EstimatedBytes >= MinBigMergeBytes {
			big++
		}
	}
	for i, t := range byBytes {
		t.rl.SetMBPerSec(s.rateLocked(t))
		t.rl.setStopped(i < big-s.opts.MaxThreadCount)
	}
}

// rateLocked is the rate a running, not stopped merge gets; +Inf: unlimited.
func (s *ConcurrentMergeScheduler) rateLocked(t *task) float64 {
	inf := math.Inf(1)
	switch {
	case t.m.Forced:
		return cmp.Or(s.opts.ForceMergeMBPerSec, inf)
	case s.throttle == NoIOThrottle:
		return inf
	case s.throttle == FixedIOThrottle:
		return s.fixedMBPerSec
	case t.m.EstimatedBytes < MinBigMergeBytes:
		return inf
	}
	return s.targetMBPerSec
}

// isBacklogLocked reports whether another big merge of similar size (within
// 3x either way) has been running for more than backlogAge.
func (s *ConcurrentMergeScheduler) isBacklogLocked(now time.Time, t *task) bool {
	for _, o := range s.running {
		if o == t || o.m.EstimatedBytes < MinBigMergeBytes || now.Sub(o.started) <= backlogAge {
			continue
		}
		ratio := float64(o.m.EstimatedBytes) / float64(t.m.EstimatedBytes)
		if ratio > 0.3 && ratio < 3 {
			return true
		}
	}
	return false
}

// updateIOThrottleLocked is Lucene's feedback rule, applied when a big merge
// starts: a similar merge still running means merging falls behind, so raise
// the target 20%; any other backlog (too many merges, or an older pair of
// similar merges) holds it; otherwise lower it 10%.
func (s *ConcurrentMergeScheduler) updateIOThrottleLocked(t *task) {
	if s.throttle != AutoIOThrottle || t.m.EstimatedBytes < MinBigMergeBytes {
		return
	}
	now := s.now()
	newBacklog := s.isBacklogLocked(now, t)
	curBacklog := false
	if !newBacklog {
		curBacklog = len(s.running) > s.opts.MaxThreadCount
		for _, o := range s.running {
			curBacklog = curBacklog || s.isBacklogLocked(now, o)
		}
	}
	old := s.targetMBPerSec
	switch {
	case newBacklog:
		s.targetMBPerSec = min(s.targetMBPerSec*1.2, MaxMBPerSec)
	case curBacklog:
	default:
		s.targetMBPerSec = max(s.targetMBPerSec/1.1, MinMBPerSec)
	}
	s.log.Debug("io throttle", "merge", t.m.Name, "estimatedMB", mbOf(t.m.EstimatedBytes),
		"newBacklog", newBacklog, "curBacklog", curBacklog, "fromMBPerSec", old, "toMBPerSec", s.targetMBPerSec)
}

// SetThrottle changes the throttle mode at runtime; mbPerSec is the rate for
// FixedIOThrottle. Switching to AutoIOThrottle restarts at StartMBPerSec, as
// Lucene does. Running merges pick up the new rate at once.
func (s *ConcurrentMergeScheduler) SetThrottle(mode ThrottleMode, mbPerSec float64) error {
	o := s.opts
	o.Throttle, o.FixedMBPerSec = mode, mbPerSec
	if err := o.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == AutoIOThrottle && s.throttle != AutoIOThrottle {
		s.targetMBPerSec = StartMBPerSec
	}
	s.throttle, s.fixedMBPerSec = mode, mbPerSec
	s.updateMergeThreadsLocked()
	return nil
}

// MaybeStall blocks while merges are queued beyond MaxMergeCount, so the
// caller (indexing, which produces segments) waits for merging to catch up
// instead of piling up segments. It returns at once when called from inside
// a merge's Run (merges must never stall themselves), with ctx's error if
// ctx ends first, and with ErrClosed once the scheduler closes.
func (s *ConcurrentMergeScheduler) MaybeStall(ctx context.Context) error {
	if ctx.Value(mergeCtxKey{}) == s {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var start time.Time
	defer func() {
		if !start.IsZero() {
			s.stats.StalledTime += time.Since(start)
			s.stalledNow--
		}
	}()
	for !s.closed && len(s.pending) > 0 && len(s.running) >= s.opts.MaxMergeCount {
		if start.IsZero() {
			start = time.Now()
			s.stats.Stalls++
			s.stalledNow++
		}
		if err := s.awaitChangeLocked(ctx); err != nil {
			return fmt.Errorf("mergescheduler: stalled for merges: %w", err)
		}
	}
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Wait blocks until no merge is queued or running (e.g. to finish a force
// merge round), or ctx ends.
func (s *ConcurrentMergeScheduler) Wait(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 || len(s.running) > 0 {
		if err := s.awaitChangeLocked(ctx); err != nil {
			return fmt.Errorf("mergescheduler: waiting for merges: %w", err)
		}
	}
	return nil
}

// awaitChangeLocked releases the lock until the scheduler's state changes or
// ctx ends, and takes it again.
func (s *ConcurrentMergeScheduler) awaitChangeLocked(ctx context.Context) error {
	ch := s.changed
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close aborts every merge: running ones see their context cancelled and
// their writes fail with ErrMergeAborted; queued ones run at once, already
// aborted, so their Run can clean up. It waits for all merge goroutines
// until ctx ends. Later Submits fail with ErrClosed. Safe to call twice.
func (s *ConcurrentMergeScheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.cancel()
		for _, t := range s.running {
			t.rl.Abort()
		}
		for _, t := range s.pending {
			t.rl.Abort()
			t.started = s.now()
			s.running = append(s.running, t)
			s.start(t)
		}
		s.pending = nil
		s.wakeLocked()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mergescheduler: close: merges still running: %w", ctx.Err())
	}
}

// Stats describe the scheduler now and since it started.
type Stats struct {
	Running int // merges started and not finished
	Stopped int // running merges stopped because MaxThreadCount big merges write
	Pending int // merges queued beyond MaxMergeCount
	Stalled int // callers blocked in MaybeStall now
	// MBPerSec is the rate applied to big merges: the auto target, the fixed
	// rate, or +Inf when off.
	MBPerSec float64

	Stalls        int64         // MaybeStall calls that blocked
	StalledTime   time.Duration // total time callers spent blocked
	MergesDone    int64
	MergesFailed  int64
	MergesAborted int64
	BytesWritten  int64         // merge output, finished and running merges
	ThrottledTime time.Duration // merges slept to hold the rate
	StoppedTime   time.Duration // merges stopped for MaxThreadCount
	// BudgetWaitTime: small merges waited for a slot of the shared Budget.
	BudgetWaitTime time.Duration
}

// Stats returns a snapshot.
func (s *ConcurrentMergeScheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Stalled = s.stalledNow
	st.Running, st.Pending = len(s.running), len(s.pending)
	for _, t := range s.running {
		if t.rl.isStopped() {
			st.Stopped++
		}
		rs := t.rl.Stats()
		st.BytesWritten += rs.BytesWritten
		st.ThrottledTime += rs.Paused
		st.StoppedTime += rs.Stopped
	}
	switch s.throttle {
	case AutoIOThrottle:
		st.MBPerSec = s.targetMBPerSec
	case FixedIOThrottle:
		st.MBPerSec = s.fixedMBPerSec
	default:
		st.MBPerSec = math.Inf(1)
	}
	return st
}

func mbOf(b int64) float64 { return float64(b) / mib }
