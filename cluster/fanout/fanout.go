// Package fanout runs the calls of a fan-out (one per shard or node) on
// goroutines that are reused from call to call.
//
// A search calls every shard concurrently, and in `sluice dev` each call
// runs a whole shard search in its goroutine. A new goroutine starts on a
// small stack that this depth grows twice, copying every frame each time:
// at 1,600 searches a second that was 9% of the process's CPU. Reused
// goroutines keep their grown stacks between calls (the GC may shrink an
// idle one), as grpc-go's stream workers do for the same reason.
package fanout

import (
	"sync"
	"time"
)

// idle is how long a worker waits for its next call before exiting, so
// workers exist only while calls keep coming.
const idle = 10 * time.Second

var work = make(chan func())

// Go runs f in the background and counts it in wg (wg.Wait waits for it),
// like wg.Go. An idle worker takes it; if none is idle a new worker starts,
// so Go never waits and nested fan-outs cannot deadlock.
func Go(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	call := func() {
		defer wg.Done()
		f()
	}
	select {
	case work <- call:
	default:
		go worker(call)
	}
}

func worker(call func()) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		call()
		t.Reset(idle)
		select {
		case call = <-work:
		case <-t.C:
			return
		}
	}
}
