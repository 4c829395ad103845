package fanout

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGo(t *testing.T) {
	var wg sync.WaitGroup
	var n atomic.Int64
	for range 100 {
		Go(&wg, func() { n.Add(1) })
	}
	wg.Wait()
	if n.Load() != 100 {
		t.Fatalf("ran %d of 100", n.Load())
	}
}

// Calls that wait on each other all run at once: Go never queues a call
// behind a busy worker, and a call may fan out again.
func TestGoNeverQueues(t *testing.T) {
	const n = 50
	var outer sync.WaitGroup
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	for range n {
		Go(&outer, func() {
			var inner sync.WaitGroup
			Go(&inner, func() {
				started.Done()
				<-release
			})
			inner.Wait()
		})
	}
	started.Wait() // deadlocks if any call waited for a worker
	close(release)
	outer.Wait()
}

// Sequential fan-outs reuse a worker instead of starting goroutines.
func TestGoReusesWorkers(t *testing.T) {
	var wg sync.WaitGroup
	Go(&wg, func() {})
	wg.Wait()
	sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	for range 100 {
		var wg sync.WaitGroup
		Go(&wg, func() {})
		wg.Wait()
	}
	metrics.Read(sample)
	// A worker that finished a call is back at its receive well before
	// most next calls; allow a few races with the test goroutine.
	if created := sample[0].Value.Uint64() - before; created > 20 {
		t.Errorf("%d goroutines started for 100 sequential calls", created)
	}
}
