package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// Defaults for ScrubOptions.
const (
	// DefaultScrubInterval: a full pass over every file starts at most
	// once a day. Lucene and Elasticsearch have no background scrub (they
	// check files when a merge, a recovery or a snapshot reads them, and
	// at startup on request); storage that scrubs does so daily to
	// monthly (Ceph's deep scrub weekly, ZFS monthly by convention), and a
	// daily pass bounds how long a search index serves from a damaged file
	// to about a day, at a cost that stays small (below).
	DefaultScrubInterval = 24 * time.Hour
	// DefaultScrubBytesPerSec: 20 MiB/s, the rate at which Lucene's
	// merge auto-throttle starts background merges. It is a few percent of
	// an SSD's and ~15% of a disk's sequential read rate, and with CRC32
	// at ~10 GB/s ~0.2% of a core; at it a daily pass covers ~1.6 TiB of
	// index per node. Larger nodes scrub back to back, a pass taking
	// longer than the interval.
	DefaultScrubBytesPerSec = 20 << 20
	// DefaultScrubPoll: how long after start the first pass begins (leave
	// recovery the disk), and how often between passes the scrubber looks
	// for files that appeared since it last looked.
	DefaultScrubPoll = time.Minute
)

// ScrubOptions configure a Scrubber.
type ScrubOptions struct {
	// Interval between the starts of two full passes; default
	// DefaultScrubInterval. Negative disables scrubbing (NewScrubber
	// returns nil).
	Interval time.Duration
	// BytesPerSec caps the read rate over all engines; default
	// DefaultScrubBytesPerSec, negative: unlimited.
	BytesPerSec int64
	// Poll: the delay before the first pass and the period at which new
	// files are looked for between passes; default DefaultScrubPoll, or
	// Interval when that is shorter (a short interval is asked for to find
	// damage soon, which a minute's wait before the first pass defeats).
	Poll time.Duration
	// Budget: each chunk is checksummed holding one of its slots, after
	// every waiting flush and merge (cpubudget.Scrub); default
	// cpubudget.Process().
	Budget *cpubudget.Budget
	Logger *slog.Logger
}

func (o *ScrubOptions) setDefaults() {
	if o.Interval == 0 {
		o.Interval = DefaultScrubInterval
	}
	if o.BytesPerSec == 0 {
		o.BytesPerSec = DefaultScrubBytesPerSec
	}
	if o.Poll <= 0 {
		o.Poll = min(DefaultScrubPoll, o.Interval)
	}
	if o.Budget == nil {
		o.Budget = cpubudget.Process()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Scrubber re-verifies, in the background, the checksum of every file of
// the copies it is given (engines and replicas) — the files of each one's
// current reader and of its last commit point — so that a file damaged at
// rest (a bit flip on the disk, a bad sector, a stray write) fails its
// copy before it serves wrong results, instead of never (the .doc, .pos,
// .nvd and .dvd bodies, which no read path checksums) or only when a query
// reads the damaged block. One Scrubber serves a data node, all its shards sharing one rate.
//
// Passes: a pass verifies every file once, engine after engine; files are
// immutable, so a file verified in this pass is skipped, and a file that
// appears during the pass or after it (a flush, a merge, a commit) is
// verified when the scrubber next looks, every Poll. A new pass starts
// Interval after the previous one started, or at once if that one took
// longer. Scrubbing is idle-first: reads are capped at BytesPerSec (a
// token bucket, so the cap holds on average and is never exceeded by more
// than one chunk), and each chunk (1 MiB) is checksummed holding a slot of
// the process's CPU budget behind every waiting flush and merge, stepping
// aside while goroutines wait for a CPU, so indexing and searching go
// first. A damaged file fails its copy (Engine.Failure, Replica.Failure;
// the store is marked corrupted); a file merged away before the scrubber
// reached it is skipped.
type Scrubber struct {
	opts    ScrubOptions
	copies  func() []ScrubTarget
	limiter *rate.Limiter // shared by every engine; nil: unlimited
	cancel  context.CancelFunc
	done    chan struct{}

	passes   atomic.Int64 // completed
	mu       sync.Mutex
	lastPass time.Duration
}

// NewScrubber starts scrubbing the copies that copies returns at each
// look (a host's open shards, primaries and replicas). It returns nil when
// opts disable it. Close stops it.
func NewScrubber(opts ScrubOptions, copies func() []ScrubTarget) *Scrubber {
	if opts.Interval < 0 {
		return nil
	}
	opts.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scrubber{opts: opts, copies: copies, limiter: newLimiter(opts.BytesPerSec), cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	return s
}

// Close stops the scrubber, interrupting a verification in progress, and
// waits for it. A nil Scrubber is closed.
func (s *Scrubber) Close() {
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}

// ScrubStats describe a Scrubber's passes.
type ScrubStats struct {
	Passes   int64         // completed
	LastPass time.Duration // how long the last completed pass took
}

// Stats returns the scrubber's pass counters.
func (s *Scrubber) Stats() ScrubStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ScrubStats{Passes: s.passes.Load(), LastPass: s.lastPass}
}

// scrubPasses numbers passes process-wide, so that an engine scrubbed by
// one scrubber and then another (a shard moving between in-process nodes)
// never takes a pass of one for the other's.
var scrubPasses atomic.Int64

func (s *Scrubber) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTimer(s.opts.Poll)
	defer t.Stop()
	var pass int64
	var passStart time.Time
	passDone := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if pass == 0 || passDone && time.Since(passStart) >= s.opts.Interval {
			pass = scrubPasses.Add(1)
			passStart, passDone = time.Now(), false
			s.opts.Logger.Debug("engine: scrub pass started", "pass", pass)
		}
		complete := s.sweep(ctx, pass)
		if complete && !passDone {
			passDone = true
			took := time.Since(passStart)
			s.mu.Lock()
			s.lastPass = took
			s.mu.Unlock()
			s.passes.Add(1)
			s.opts.Logger.Info("engine: scrub pass done", "pass", pass, "took", took)
		}
		wait := s.opts.Poll
		if passDone {
			wait = min(wait, max(0, s.opts.Interval-time.Since(passStart)))
		}
		t.Reset(wait)
	}
}

// sweep verifies every file of every engine not yet verified in pass and
// reports whether it got through all of them (not interrupted).
func (s *Scrubber) sweep(ctx context.Context, pass int64) bool {
	p := &pacer{ctx: ctx, limiter: s.limiter, budget: s.opts.Budget}
	defer p.done()
	for _, c := range s.copies() {
		if err := scrub(c, p, pass); err != nil {
			return false
		}
	}
	return true
}

// ScrubTarget is a shard copy a Scrubber verifies: a primary's *Engine
// or a *Replica, whose files were copied from its primary and verified
// once, when fetched, and can be damaged on this disk afterwards as any.
type ScrubTarget interface {
	verifiable
}

// verifiable is what scrubbing and verifying a copy need of it.
type verifiable interface {
	// verifyFiles lists the files the copy serves or would recover from.
	verifyFiles() []string
	verifyDir() (store.Directory, index.Codec)
	checkState() *checkState
	// acquireVerify is the current reader (Deep verification).
	acquireVerify() *Reader
	// unusable: failed or closed — nothing to scrub.
	unusable() bool
	// failCopy fails the copy for good (source: which check found it).
	failCopy(source string, cause error)
	logger() *slog.Logger
}

// scrub verifies c's files that pass has not verified yet. A failed or
// closed copy is skipped. The error is the pacer's (Close).
func scrub(c verifiable, p *pacer, pass int64) error {
	if c.unusable() {
		return nil
	}
	names := c.verifyFiles()
	cs := c.checkState()
	cs.mu.Lock()
	if cs.verified == nil {
		cs.verified = make(map[string]int64)
	}
	live := make(map[string]bool, len(names))
	var todo []string
	for _, n := range names {
		live[n] = true
		if cs.verified[n] != pass {
			todo = append(todo, n)
		}
	}
	for n := range cs.verified {
		if !live[n] {
			delete(cs.verified, n) // gone: deleted files are never reused
		}
	}
	cs.mu.Unlock()
	dir, codec := c.verifyDir()
	for _, name := range todo {
		if c.unusable() {
			return nil
		}
		fc, err := verifyFile(p, dir, codec, name)
		if err != nil {
			return err
		}
		if fc.Status == FileUnreadable {
			c.logger().Warn("engine: scrub could not read a file", "file", name, "err", fc.Err)
		}
		if derr := cs.record(fc); derr != nil {
			c.failCopy("scrub", derr)
			return nil
		}
		if fc.Status == FileOK || fc.Status == FileGone {
			cs.mu.Lock()
			cs.verified[name] = pass
			cs.mu.Unlock()
		}
	}
	cs.mu.Lock()
	if cs.passDone != pass {
		cs.passDone, cs.doneAt = pass, time.Now()
	}
	cs.mu.Unlock()
	return nil
}
