// Package mergescheduler runs merges in the background with bounded
// concurrency, backpressure on indexing and IO throttling. It follows
// Lucene's ConcurrentMergeScheduler and MergeRateLimiter
// (lucene/core/src/java/org/apache/lucene/index/) and knows nothing about
// segments: a merge is a Run func plus its estimated output size.
//
// # Plugging it into the engine
//
//	s, _ := mergescheduler.New(mergescheduler.Options{})
//	// after a flush:
//	spec, _ := policy.FindMerges(segs, merging)     // mergepolicy
//	for _, m := range spec.Merges {
//		register m's segments as merging
//		s.Submit(mergescheduler.Merge{Name: ..., EstimatedBytes: m.EstimatedBytes,
//			Run: func(ctx context.Context, rl *mergescheduler.RateLimiter) error {
//				write every output file through rl.Writer(f)
//				on success publish the merged segment; in all cases unregister,
//				then ask the policy again and Submit (never MaybeStall here)
//			}})
//	}
//	err := s.MaybeStall(ctx) // indexing thread: blocks while merges are behind
//	// shutdown:
//	s.Close(ctx) // aborts merges; every accepted Run is still called once
//
// # Concurrency and backpressure
//
// Every submitted merge is started on its own goroutine, smallest first, as
// long as fewer than MaxMergeCount (default MaxThreadCount+5) are started;
// the rest wait in a queue. Of the started merges, only MaxThreadCount
// (default max(1, min(4, GOMAXPROCS/2))) merges of at least 50 MiB write at
// once: the largest ones beyond that are stopped inside their limiter until
// a smaller one finishes, so small merges are never stuck behind a huge one.
// Merges under 50 MiB are not counted. While merges are queued, MaybeStall
// blocks the indexing caller: segments are produced no faster than merging
// absorbs them. A merge's own ctx makes MaybeStall return at once, so a merge
// that registers follow-up merges cannot deadlock.
//
// # A budget across shards
//
// MaxThreadCount is per scheduler, and an engine (a shard) has its own. So
// small merges (under 50 MiB, never throttled in auto mode) also take a
// slot of a cpubudget.Budget shared by every scheduler of the process,
// and by refresh flushes (cpubudget.Process: max(1, GOMAXPROCS/2) slots;
// Options.Budget for another), the smallest waiting merge first, after
// waiting flushes; a merge hands its slot to a waiting flush at its next
// checkpoint. Without it, a node with many shards, or `sluice dev`
// with three nodes in one process, ran one full-speed merge per shard at
// once: on 2 cores such bursts took both cores for a few hundred ms and
// made searches wait (`sluice bench load` at 200 and 400 qps with 1 MB/s
// of indexing, two A/B pairs: p99 158–303 ms without the budget, 17–99 ms
// with it). A merge waiting for a slot counts as started, so MaybeStall's
// backpressure still applies; big merges and fixed-rate merges take no
// slot (their rate already bounds them).
//
// # IO throttle
//
// Each merge writes through its RateLimiter: a writer calls Pause every
// min(1 MiB, 25 ms x rate) bytes; Pause sleeps until those bytes are due at
// the current rate (measured from the previous pause, so idle time is not
// paid back in bursts), skipping sleeps under 2 ms and sleeping at most 250
// ms at a time. A rate change, a stop/resume or Abort wakes sleepers at once.
// The common no-sleep Write costs ~10 ns and no allocation.
//
// Modes (Options.Throttle, changeable with SetThrottle):
//
//   - AutoIOThrottle (default), Lucene's rule: the target starts at 20 MiB/s
//     and is revised each time a merge of >= 50 MiB starts. If another merge
//     of similar size (ratio 0.3..3) has run > 3 s, merging is falling
//     behind: target x1.2 (ceiling 10240). Else if more merges run than
//     MaxThreadCount, or any running pair is in that state, hold. Else
//     target / 1.1 (floor 5). Merges under 50 MiB are never throttled.
//   - FixedIOThrottle: every merge, small ones included, at FixedMBPerSec.
//   - NoIOThrottle.
//
// Forced merges run at ForceMergeMBPerSec (default unlimited) in every mode.
//
// # Differences from Lucene
//
//   - The queue of pending merges lives here, not in the writer; Submit never
//     blocks and MaybeStall is a separate call, so the engine decides where
//     indexing may block (with a ctx). Lucene pulls merges from IndexWriter
//     in FIFO order; we start the smallest queued merge first.
//   - Stopping a merge is a separate state of its limiter rather than
//     rate 0; SetMBPerSec(0) means unlimited.
//   - Close aborts instead of waiting: running merges fail with
//     ErrMergeAborted and queued ones run once with a cancelled ctx so the
//     engine's cleanup lives in one place. Use Wait to let merges finish.
//     Lucene removes the throttle on close (MergeTrigger.CLOSING) to finish
//     merges quickly; call SetThrottle(NoIOThrottle, 0) before Wait for that.
//   - No intra-merge executor, no spinning-disk defaults, no per-merge
//     thread names; failures are counted in Stats and logged with slog at
//     warn level (the Run func already sees its own error).
//   - Merges only pause where they write: CPU work between writes is not
//     throttled (as in Lucene, where only IndexOutput is rate limited).
//
// # Refresh comes first
//
// The engine also pauses merges while a refresh runs (node/engine's
// mergeyield.go, Options.MergeYieldShare): its IOContext throttle callback
// waits for the refresh before calling Pause, and its merged view adds
// checkpoints where a merge writes nothing for long. On 2 cores the reopen
// spikes during big merges came from CPU contention, which no MB/s limit
// removes. This package does not see those pauses: they count neither as
// throttled nor as stopped time here; the engine's Stats.MergeYieldTime
// does. Backpressure still works: the engine does not pause merges while
// Stats shows a backlog (Stalled, Pending or Stopped above zero).
package mergescheduler
