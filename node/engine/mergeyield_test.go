package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
)

func never() bool  { return false }
func always() bool { return true }

// waitReturns runs y.wait in a goroutine and reports how long it blocked,
// or -1 if it still blocks after limit.
func waitReturns(ctx context.Context, y *mergeYield, limit time.Duration) time.Duration {
	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		y.wait(ctx)
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(limit):
		return -1
	}
}

func TestMergeYieldBegin(t *testing.T) {
	tests := []struct {
		name      string
		share     float64
		merging   bool
		behind    func() bool
		wantPause bool
	}{
		{"pauses running merges", 0.5, true, never, true},
		{"disabled", -1, true, never, false},
		{"zero value is disabled", 0, true, never, false},
		{"no merge running", 0.5, false, never, false},
		{"merges behind", 0.5, true, always, false},
		{"share 1: only maxPause bounds", 1, true, never, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var y mergeYield
			if tt.share != 0 {
				y.configure(tt.share, time.Minute)
			}
			resume := y.begin(tt.merging, tt.behind)
			d := waitReturns(context.Background(), &y, 30*time.Millisecond)
			if paused := d < 0; paused != tt.wantPause {
				t.Fatalf("merge paused: %v, want %v", paused, tt.wantPause)
			}
			resume()
			resume() // idempotent
			if d := waitReturns(context.Background(), &y, time.Second); d < 0 {
				t.Fatal("merge still paused after resume")
			}
			if got := y.pauses.Load(); (got == 1) != tt.wantPause {
				t.Fatalf("%d pauses counted, want pause %v", got, tt.wantPause)
			}
		})
	}
}

func TestMergeYieldWaitCounted(t *testing.T) {
	var y mergeYield
	y.configure(0.5, time.Minute)
	resume := y.begin(true, never)
	done := make(chan struct{})
	go func() {
		y.wait(context.Background())
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	resume()
	<-done
	if got := time.Duration(y.pausedNS.Load()); got < 20*time.Millisecond {
		t.Fatalf("paused time %v, want >= 20ms", got)
	}
}

func TestMergeYieldBudget(t *testing.T) {
	t.Run("maxPause ends a long refresh's pause", func(t *testing.T) {
		var y mergeYield
		y.configure(1, 40*time.Millisecond)
		resume := y.begin(true, never)
		defer resume()
		d := waitReturns(context.Background(), &y, 2*time.Second)
		if d < 0 {
			t.Fatal("merge still paused long after maxPause")
		}
		if d < 30*time.Millisecond {
			t.Fatalf("pause ended after %v, before maxPause", d)
		}
	})
	t.Run("share: a spent budget skips the next refresh", func(t *testing.T) {
		var y mergeYield
		// 100 ms of budget at share 0.5: one pause may last 100 ms and
		// leaves nothing; the budget then refills at 50 ms per second.
		y.configure(0.5, 100*time.Millisecond)
		resume := y.begin(true, never)
		if d := waitReturns(context.Background(), &y, 2*time.Second); d < 0 {
			t.Fatal("budget did not end the pause")
		}
		resume()
		resume = y.begin(true, never)
		defer resume()
		if d := waitReturns(context.Background(), &y, 30*time.Millisecond); d < 0 {
			t.Fatal("paused again with the budget spent")
		}
		if got := y.skipped.Load(); got != 1 {
			t.Fatalf("%d refreshes skipped, want 1", got)
		}
		time.Sleep(50 * time.Millisecond) // refills 25 ms
		resume2 := y.begin(true, never)
		defer resume2()
		if d := waitReturns(context.Background(), &y, 10*time.Millisecond); d >= 0 {
			t.Fatal("refilled budget did not pause merges")
		}
	})
	t.Run("a pause in progress is not replaced", func(t *testing.T) {
		var y mergeYield
		y.configure(1, time.Minute)
		outer := y.begin(true, never)
		inner := y.begin(true, never)
		inner()
		if d := waitReturns(context.Background(), &y, 20*time.Millisecond); d >= 0 {
			t.Fatal("an overlapping begin's resume ended the first pause")
		}
		outer()
		if d := waitReturns(context.Background(), &y, time.Second); d < 0 {
			t.Fatal("still paused after resume")
		}
	})
	t.Run("aborted merge stops waiting", func(t *testing.T) {
		var y mergeYield
		y.configure(1, time.Minute)
		resume := y.begin(true, never)
		defer resume()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if d := waitReturns(ctx, &y, time.Second); d < 0 {
			t.Fatal("cancelled merge still waiting")
		}
	})
}

// TestMergePausesForRefresh runs real merges through the writer while a
// pause is held: the merge must stop at a checkpoint, commit nothing, and
// finish once resumed.
func TestMergePausesForRefresh(t *testing.T) {
	ti := newTestWriterOpts(t, withMerges(t, WriterOptions{RAMBufferBytes: 16 << 20}))
	w := ti.w
	w.yield.configure(1, time.Minute)
	var doc document.Document
	ctx := context.Background()
	resume := w.yield.begin(true, never) // as if a long refresh were running
	for i := range 6 {
		for j := range 20 {
			if _, _, err := w.Update(ctx, []byte(fmt.Sprintf("d%d-%d", i, j)), makeDoc(&doc, fmt.Sprintf("d%d-%d", i, j), 1, 5)); err != nil {
				t.Fatal(err)
			}
		}
		mustRefresh(t, w, true) // submits merges; does not end the held pause
	}
	w.segments.mu.Lock()
	merging := len(w.segments.merging)
	w.segments.mu.Unlock()
	if merging == 0 {
		t.Fatal("no merge was submitted")
	}
	time.Sleep(50 * time.Millisecond)
	if n := w.stats.merges.Load(); n != 0 {
		t.Fatalf("%d merges committed during the pause", n)
	}
	resume()
	sched := w.opts.MergeScheduler.(*mergescheduler.ConcurrentMergeScheduler)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sched.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if w.stats.merges.Load() == 0 {
		t.Fatal("no merge finished after resume")
	}
	// The merges reached their first checkpoint soon after being
	// submitted, well before the 50 ms sleep ended.
	if got := time.Duration(w.yield.pausedNS.Load()); got < 20*time.Millisecond {
		t.Fatalf("merges paused %v, want >= 20ms", got)
	}
	mustRefresh(t, w, true)
	r := w.Acquire()
	defer r.Release()
	if got := len(contents(t, r)); got != 120 {
		t.Fatalf("%d docs after merging, want 120", got)
	}
}

// TestYieldingTermsEnumChecks: the merged view checks for a pause every
// yieldCheckTerms terms and enumerates the same terms.
func TestYieldingTermsEnumChecks(t *testing.T) {
	tests := []struct{ docs, wantChecks int }{
		{10, 0},
		{yieldCheckTerms, 1},
		{3*yieldCheckTerms + 5, 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.docs), func(t *testing.T) {
			ti := newTestWriter(t, 16<<20)
			var doc document.Document
			for i := range tt.docs {
				if _, err := ti.w.Add(context.Background(), makeDoc(&doc, fmt.Sprintf("id%05d", i), 1, 2)); err != nil {
					t.Fatal(err)
				}
			}
			mustRefresh(t, ti.w, true)
			r := ti.w.Acquire()
			defer r.Release()
			checks := 0
			yr := yieldingReader{LeafReader: r.Leaves()[0].Reader, check: func() { checks++ }}
			te := yr.Terms(index.IDField).Iterator()
			n := 0
			for te.Next() {
				n++
			}
			if n != tt.docs || checks != tt.wantChecks {
				t.Fatalf("%d terms, %d checks; want %d, %d", n, checks, tt.docs, tt.wantChecks)
			}
			if yr.Terms("no-such-field") != nil {
				t.Fatal("missing field has terms")
			}
			// Merges build the _id bloom filter through the same wrapper.
			checks = 0
			b := newIDBloom(yr)
			for i := range tt.docs {
				if id := fmt.Sprintf("id%05d", i); !b.mayContain([]byte(id)) {
					t.Fatalf("bloom built through the checkpoints misses %s", id)
				}
			}
			if checks != tt.wantChecks {
				t.Fatalf("bloom build: %d checks, want %d", checks, tt.wantChecks)
			}
		})
	}
}

// TestMergesBehind: a real scheduler's backlog turns pausing off.
func TestMergesBehind(t *testing.T) {
	sched, err := mergescheduler.New(mergescheduler.Options{MaxThreadCount: 1, MaxMergeCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close(context.Background())
	w := &IndexWriter{opts: WriterOptions{MergeScheduler: sched}}
	if w.mergesBehind() {
		t.Fatal("idle scheduler is behind")
	}
	release := make(chan struct{})
	block := func(ctx context.Context, _ *mergescheduler.RateLimiter) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	for i := range 2 {
		if err := sched.Submit(mergescheduler.Merge{Name: fmt.Sprint(i), EstimatedBytes: 1 << 10, Run: block}); err != nil {
			t.Fatal(err)
		}
		if got, want := w.mergesBehind(), i == 1; got != want {
			t.Fatalf("after %d merges submitted: behind %v, want %v", i+1, got, want)
		}
	}
	close(release)
	if err := sched.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.mergesBehind() {
		t.Fatal("behind after merges finished")
	}
	if (&IndexWriter{}).mergesBehind() {
		t.Fatal("no scheduler is behind")
	}
}
