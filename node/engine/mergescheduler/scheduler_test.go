package mergescheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
)

const mb = int64(1) << 20

func newScheduler(t *testing.T, o Options) *ConcurrentMergeScheduler {
	t.Helper()
	o.Logger = slog.New(slog.DiscardHandler)
	if o.Budget == nil {
		// These tests are about one scheduler's own rules; budget_test.go
		// covers the shared Budget.
		o.Budget = cpubudget.New(1 << 10)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// testMerge is a merge whose Run writes through its limiter until released
// (or aborted), recording what happened.
type testMerge struct {
	name    string
	bytes   int64
	forced  bool
	release chan struct{}
	started chan struct{}
	written atomic.Int64
	rl      atomic.Pointer[RateLimiter]
	err     chan error // Run's result
	ctx     atomic.Value
}

func newTestMerge(name string, bytes int64) *testMerge {
	return &testMerge{name: name, bytes: bytes, release: make(chan struct{}), started: make(chan struct{}), err: make(chan error, 1)}
}

func (m *testMerge) merge() Merge {
	return Merge{Name: m.name, EstimatedBytes: m.bytes, Forced: m.forced, Run: m.run}
}

func (m *testMerge) run(ctx context.Context, rl *RateLimiter) error {
	m.rl.Store(rl)
	m.ctx.Store(ctx)
	close(m.started)
	w := rl.Writer(io.Discard)
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-m.release:
			m.err <- nil
			return nil
		default:
		}
		if _, err := w.Write(buf); err != nil {
			m.err <- err
			return err
		}
		m.written.Add(int64(len(buf)))
		time.Sleep(time.Millisecond) // leave the CPU to the others
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// progressing reports whether m writes within d.
func progressing(m *testMerge, d time.Duration) bool {
	before := m.written.Load()
	time.Sleep(d)
	return m.written.Load() > before
}

func TestOptions(t *testing.T) {
	var o Options
	o.SetDefaults()
	if o.MaxThreadCount < 1 || o.MaxThreadCount > 4 || o.MaxMergeCount != o.MaxThreadCount+5 {
		t.Fatalf("defaults %+v", o)
	}
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", Options{}, true},
		{"threads over merges", Options{MaxThreadCount: 3, MaxMergeCount: 2}, false},
		{"negative threads", Options{MaxThreadCount: -1}, false},
		{"fixed without rate", Options{Throttle: FixedIOThrottle}, false},
		{"fixed", Options{Throttle: FixedIOThrottle, FixedMBPerSec: 10}, true},
		{"unknown mode", Options{Throttle: 7}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSmallestMergesStartFirst(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 1, MaxMergeCount: 1, Throttle: NoIOThrottle})
	blocker := newTestMerge("blocker", 0)
	if err := s.Submit(blocker.merge()); err != nil {
		t.Fatal(err)
	}
	<-blocker.started
	var order []string
	var mu sync.Mutex
	for _, size := range []int64{30, 10, 20} {
		name := fmt.Sprint(size)
		err := s.Submit(Merge{Name: name, EstimatedBytes: size * mb, Run: func(context.Context, *RateLimiter) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Running != 1 || st.Pending != 3 {
		t.Fatalf("stats %+v, want 1 running 3 pending", st)
	}
	close(blocker.release)
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(order) != "[10 20 30]" {
		t.Fatalf("order %v, want smallest first", order)
	}
	if st := s.Stats(); st.MergesDone != 4 {
		t.Fatalf("stats %+v, want 4 done", st)
	}
}

func TestLargestBigMergesAreStopped(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 2, MaxMergeCount: 6, Throttle: NoIOThrottle})
	small := newTestMerge("small", 10*mb)
	b60, b70, b80 := newTestMerge("b60", 60*mb), newTestMerge("b70", 70*mb), newTestMerge("b80", 80*mb)
	all := []*testMerge{small, b80, b70, b60}
	for _, m := range all {
		if err := s.Submit(m.merge()); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range all {
		<-m.started
	}
	// Three big merges, two threads: the largest is stopped; the small one
	// does not count.
	waitFor(t, "b80 to stop", func() bool { return b80.rl.Load().isStopped() })
	if st := s.Stats(); st.Running != 4 || st.Stopped != 1 {
		t.Fatalf("stats %+v, want 4 running, 1 stopped", st)
	}
	waitFor(t, "b80 to stop writing", func() bool { return !progressing(b80, 30*time.Millisecond) })
	for _, m := range []*testMerge{small, b60, b70} {
		if !progressing(m, 50*time.Millisecond) {
			t.Fatalf("%s is not writing", m.name)
		}
	}
	close(b60.release)
	waitFor(t, "b80 to resume", func() bool { return progressing(b80, 30*time.Millisecond) })
	for _, m := range []*testMerge{small, b70, b80} {
		close(m.release)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MergesDone != 4 || st.StoppedTime <= 0 || st.BytesWritten <= 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConcurrencyBounds(t *testing.T) {
	const threads, merges = 2, 4
	s := newScheduler(t, Options{MaxThreadCount: threads, MaxMergeCount: merges, Throttle: NoIOThrottle})
	var running, maxRunning, writing, maxWriting atomic.Int64
	raise := func(v *atomic.Int64, to int64) {
		for {
			cur := v.Load()
			if to <= cur || v.CompareAndSwap(cur, to) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 20 {
		size := int64(40+i*7) * mb // small and big mixed
		wg.Add(1)
		err := s.Submit(Merge{Name: fmt.Sprint(i), EstimatedBytes: size, Run: func(ctx context.Context, rl *RateLimiter) error {
			defer wg.Done()
			raise(&maxRunning, running.Add(1))
			defer running.Add(-1)
			w := rl.Writer(io.Discard)
			// Writes of the check size: each one passes the limiter's
			// check first, where a stopped merge blocks.
			buf := make([]byte, rl.MinPauseCheckBytes())
			for range 6 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				if size >= MinBigMergeBytes {
					raise(&maxWriting, writing.Add(1))
					time.Sleep(time.Millisecond)
					writing.Add(-1)
				}
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.MaybeStall(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Running > merges {
			t.Fatalf("%d running > MaxMergeCount %d", st.Running, merges)
		}
	}
	wg.Wait()
	if got := maxRunning.Load(); got > merges {
		t.Fatalf("%d merges ran at once, MaxMergeCount %d", got, merges)
	}
	// A stopped merge may finish the write it is in when stopped, so allow
	// the stop to lag by one merge.
	if got := maxWriting.Load(); got > threads+1 {
		t.Fatalf("%d big merges wrote at once, MaxThreadCount %d", got, threads)
	}
	t.Logf("max running %d, max big writing %d, stats %+v", maxRunning.Load(), maxWriting.Load(), s.Stats())
}

func TestMaybeStall(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 1, MaxMergeCount: 2, Throttle: NoIOThrottle})
	a, b, c := newTestMerge("a", mb), newTestMerge("b", mb), newTestMerge("c", mb)
	for _, m := range []*testMerge{a, b} {
		if err := s.Submit(m.merge()); err != nil {
			t.Fatal(err)
		}
	}
	// Two started, none queued: no stall.
	if err := s.MaybeStall(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(c.merge()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := s.MaybeStall(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall with deadline: %v", err)
	}
	// A merge registering further merges must never stall itself.
	<-a.started
	if err := s.MaybeStall(a.ctx.Load().(context.Context)); err != nil {
		t.Fatalf("MaybeStall from a merge: %v", err)
	}

	stalled := make(chan error, 1)
	go func() { stalled <- s.MaybeStall(context.Background()) }()
	waitFor(t, "a stalled caller", func() bool { return s.Stats().Stalled == 1 })
	select {
	case err := <-stalled:
		t.Fatalf("MaybeStall returned while merges are queued: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(a.release)
	select {
	case err := <-stalled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still stalled after a merge finished")
	}
	<-c.started
	st := s.Stats()
	if st.Stalls != 2 || st.StalledTime < 50*time.Millisecond || st.Stalled != 0 {
		t.Fatalf("stats %+v, want 2 stalls of >= 50ms in total", st)
	}

	for _, m := range []*testMerge{b, c} {
		close(m.release)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// fakeClock lets throttle tests age merges past the 3 s backlog rule.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestAutoIOThrottle(t *testing.T) {
	type step struct {
		advance time.Duration
		submit  int64 // MiB; 0: release the oldest running merge instead
		want    float64
	}
	tests := []struct {
		name    string
		threads int
		steps   []step
	}{
		{"a lone big merge lowers the rate", 2, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
		}},
		{"small merges leave it", 2, []step{
			{submit: 10, want: StartMBPerSec},
			{submit: 49, want: StartMBPerSec},
		}},
		{"a similar merge running > 3s raises it", 2, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{advance: 4 * time.Second, submit: 150, want: StartMBPerSec / 1.1 * 1.2},
		}},
		{"a similar merge running < 3s does not", 2, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{advance: 2 * time.Second, submit: 150, want: StartMBPerSec / 1.1 / 1.1},
		}},
		{"a dissimilar old merge does not", 2, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{advance: 4 * time.Second, submit: 400, want: StartMBPerSec / 1.1 / 1.1},
		}},
		{"more merges than threads hold it", 1, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{submit: 1000, want: StartMBPerSec / 1.1},
		}},
		{"an older backlog holds it", 3, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{advance: 4 * time.Second, submit: 110, want: StartMBPerSec / 1.1 * 1.2},
			{submit: 1000, want: StartMBPerSec / 1.1 * 1.2},
		}},
		{"backlog drained: falls again", 2, []step{
			{submit: 100, want: StartMBPerSec / 1.1},
			{advance: 4 * time.Second, submit: 150, want: StartMBPerSec / 1.1 * 1.2},
			{submit: 0}, {submit: 0},
			{submit: 120, want: StartMBPerSec / 1.1 * 1.2 / 1.1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(t, Options{MaxThreadCount: tt.threads, MaxMergeCount: 10})
			clk := &fakeClock{now: time.Unix(1e9, 0)}
			s.now = clk.Now
			var running []*testMerge
			for i, st := range tt.steps {
				clk.Advance(st.advance)
				if st.submit == 0 {
					close(running[0].release)
					<-running[0].err
					running = running[1:]
					continue
				}
				m := newTestMerge(fmt.Sprintf("m%d", i), st.submit*mb)
				if err := s.Submit(m.merge()); err != nil {
					t.Fatal(err)
				}
				<-m.started
				running = append(running, m)
				if got := s.Stats().MBPerSec; math.Abs(got-st.want) > 1e-9 {
					t.Fatalf("step %d: target %.4f MB/s, want %.4f", i, got, st.want)
				}
			}
			// Big merges that are not stopped run at the target; small ones
			// are not throttled.
			target := s.Stats().MBPerSec
			for _, m := range running {
				rl := m.rl.Load()
				want := target
				if m.bytes < MinBigMergeBytes {
					want = math.Inf(1)
				}
				if !rl.isStopped() && rl.MBPerSec() != want {
					t.Errorf("%s (%d MiB) at %v MB/s, want %v", m.name, m.bytes/mb, rl.MBPerSec(), want)
				}
			}
			for _, m := range running {
				close(m.release)
			}
		})
	}
}

func TestAutoIOThrottleBounds(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 4, MaxMergeCount: 10})
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	s.now = clk.Now
	run := func(mib int64) *testMerge {
		m := newTestMerge("m", mib*mb)
		if err := s.Submit(m.merge()); err != nil {
			t.Fatal(err)
		}
		<-m.started
		return m
	}
	// No backlog, again and again: down to the floor.
	for range 30 {
		m := run(100)
		close(m.release)
		<-m.err
	}
	if got := s.Stats().MBPerSec; got != MinMBPerSec {
		t.Fatalf("after idle merges: %v MB/s, want floor %v", got, MinMBPerSec)
	}
	// Backlog every time: up to the ceiling.
	old := run(100)
	for range 60 {
		clk.Advance(4 * time.Second)
		m := run(100)
		close(old.release)
		<-old.err
		old = m
	}
	close(old.release)
	if got := s.Stats().MBPerSec; got != MaxMBPerSec {
		t.Fatalf("after constant backlog: %v MB/s, want ceiling %v", got, MaxMBPerSec)
	}
}

func TestThrottleModes(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 3, ForceMergeMBPerSec: 33})
	small, big, forced := newTestMerge("small", mb), newTestMerge("big", 100*mb), newTestMerge("forced", 100*mb)
	forced.forced = true
	for _, m := range []*testMerge{small, big, forced} {
		if err := s.Submit(m.merge()); err != nil {
			t.Fatal(err)
		}
		<-m.started
	}
	inf := math.Inf(1)
	tests := []struct {
		mode                 ThrottleMode
		rate                 float64
		small, big, forcedMB float64
	}{
		{FixedIOThrottle, 7, 7, 7, 33},
		{NoIOThrottle, 0, inf, inf, 33},
		{AutoIOThrottle, 0, inf, StartMBPerSec, 33},
	}
	for _, tt := range tests {
		if err := s.SetThrottle(tt.mode, tt.rate); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			m    *testMerge
			want float64
		}{{small, tt.small}, {big, tt.big}, {forced, tt.forcedMB}} {
			if got := c.m.rl.Load().MBPerSec(); got != c.want {
				t.Errorf("%v: %s at %v MB/s, want %v", tt.mode, c.m.name, got, c.want)
			}
		}
	}
	if err := s.SetThrottle(FixedIOThrottle, 0); err == nil {
		t.Error("fixed throttle without a rate accepted")
	}
	for _, m := range []*testMerge{small, big, forced} {
		close(m.release)
	}
}

func TestCloseAborts(t *testing.T) {
	s := newScheduler(t, Options{MaxThreadCount: 1, MaxMergeCount: 1, Throttle: FixedIOThrottle, FixedMBPerSec: 1})
	running, queued := newTestMerge("running", 100*mb), newTestMerge("queued", mb)
	for _, m := range []*testMerge{running, queued} {
		if err := s.Submit(m.merge()); err != nil {
			t.Fatal(err)
		}
	}
	<-running.started
	// At 1 MiB/s the running merge sleeps for most of a second per check.
	// At 1 MiB/s each 64 KiB write after the first sleeps ~60 ms.
	waitFor(t, "a first write", func() bool { return running.written.Load() > 0 })
	time.Sleep(20 * time.Millisecond)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := <-running.err; !errors.Is(err, ErrMergeAborted) {
		t.Fatalf("running merge returned %v, want ErrMergeAborted", err)
	}
	// The queued merge still ran once, already aborted, to clean up.
	<-queued.started
	if err := queued.ctx.Load().(context.Context).Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("queued merge ctx err %v, want Canceled", err)
	}
	if err := <-queued.err; !errors.Is(err, ErrMergeAborted) {
		t.Fatalf("queued merge returned %v", err)
	}
	if took > time.Second {
		t.Fatalf("close took %v", took)
	}
	if err := s.Submit(newTestMerge("late", 0).merge()); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	if err := s.MaybeStall(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("stall after close: %v", err)
	}
	if st := s.Stats(); st.MergesAborted != 2 || st.Running != 0 || st.Pending != 0 {
		t.Fatalf("stats %+v, want 2 aborted", st)
	}
}

func TestMergeFailureCounted(t *testing.T) {
	s := newScheduler(t, Options{})
	if err := s.Submit(Merge{Name: "bad"}); err == nil {
		t.Fatal("merge without Run accepted")
	}
	if err := s.Submit(Merge{Name: "failing", Run: func(context.Context, *RateLimiter) error { return errors.New("disk full") }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.MergesFailed != 1 || st.MergesDone != 0 {
		t.Fatalf("stats %+v, want 1 failed", st)
	}
}
