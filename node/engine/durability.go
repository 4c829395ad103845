package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// Defaults for TranslogOptions.
const (
	// DefaultCommitTranslogBytes: commit once the uncommitted translog
	// exceeds 64 MB, so that a crash costs seconds of replay: replay
	// applies ~29 MB/s of ~1 KB documents on one core
	// (BenchmarkTranslogReplay), about 2 s for 64 MB plus what arrives
	// within a commit check. Elasticsearch's flush_threshold_size is
	// 512 MB, which here would replay for ~18 s.
	DefaultCommitTranslogBytes = 64 << 20
	// DefaultCommitInterval: commit operations older than 5 minutes
	// (Elasticsearch's flush after inactivity is the same order).
	DefaultCommitInterval = 5 * time.Minute
	// commitCheckInterval is how often the committer looks at the
	// translog's size and the last commit's age.
	commitCheckInterval = time.Second
)

// Commit point user data written by Engine.Commit. The highest sequence
// number a commit holds is SegmentInfos.SeqNo: replay starts above it.
const (
	// UserDataTranslogUUID names the translog whose operations above the
	// commit's SeqNo complete it; Open refuses another translog.
	UserDataTranslogUUID = "translog_uuid"
	// UserDataTranslogGeneration is the translog generation current when
	// the commit started: older generations hold only operations the
	// commit covers (up to the writers in flight at the roll).
	UserDataTranslogGeneration = "translog_generation"
)

// TranslogOptions configure the engine's durability (embedded in Options).
type TranslogOptions struct {
	// TranslogPath is the shard's translog directory; default
	// <Path>/translog. An engine with neither (Directory only, as in unit
	// tests) has no translog: only Commit makes operations durable.
	TranslogPath string
	// Durability: translog.Request (default) acknowledges an operation
	// after the fsync covering it (concurrent writers share fsyncs);
	// translog.Async fsyncs every SyncInterval, and a crash may lose that
	// much.
	Durability translog.Durability
	// SyncInterval is the background fsync period (default 5 s); with
	// Request durability it only bounds how long a Bulk nobody Syncs
	// stays volatile.
	SyncInterval time.Duration
	// CommitTranslogBytes: commit when the uncommitted translog exceeds
	// this many bytes (default DefaultCommitTranslogBytes; negative: never
	// by size).
	CommitTranslogBytes int64
	// CommitInterval: commit when operations have been uncommitted this
	// long (default DefaultCommitInterval; negative: never by time).
	CommitInterval time.Duration
	// CheckIntegrityOnOpen verifies every committed segment end to end
	// (codec CheckIntegrity: full checksums and a decode of every
	// structure) before Open returns, instead of the header, footer and
	// small-file checksums OpenSegment always does (Elasticsearch's
	// index.shard.check_on_startup).
	CheckIntegrityOnOpen bool
	// Recovery, if set, receives Open's progress (see Recovery).
	Recovery *Recovery
}

func (o *TranslogOptions) setDefaults(indexPath string) {
	if o.TranslogPath == "" && indexPath != "" {
		o.TranslogPath = filepath.Join(indexPath, "translog")
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = 5 * time.Second
	}
	if o.CommitTranslogBytes == 0 {
		o.CommitTranslogBytes = DefaultCommitTranslogBytes
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = DefaultCommitInterval
	}
}

// durability is the Engine's translog state.
type durability struct {
	tl *translog.Translog // nil: no translog
	// mode is the current translog.Durability (SetDurability changes it).
	mode     atomic.Uint32
	recovery *Recovery // Open's progress

	// Operations appending hold mu shared; closing the translog holds it
	// exclusively, so an operation never meets a closed translog halfway.
	mu     sync.RWMutex
	closed bool
	failed error // an append failed: operations may be missing from the log

	commitMu   sync.Mutex // serialises Engine.Commit (user and periodic)
	lastCommit time.Time
	// recommit: replay started at replayedFrom, below the commit's seqNo
	// (a promoted replica's commit); Open commits once it is done, so the
	// next replay starts from a commit of this primary's own, keeping the
	// translog above replayedFrom for the resync of the other copies.
	recommit     bool
	replayedFrom int64
	retain       retention // translog retention locks

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// logOp appends an operation the writer has applied with sequence number
// seq. With Request durability and no bulk it returns once the operation is
// fsynced; in a bulk it records the location for Bulk.Sync. A failed append
// fails the engine for writes: the operation is applied but not logged, so
// nothing after it may be acknowledged.
func (e *Engine) logOp(ctx context.Context, b *Bulk, op *translog.Op) error {
	d := &e.dur
	if d.tl == nil {
		return nil
	}
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return ErrClosed
	}
	if d.failed != nil {
		d.mu.RUnlock()
		return fmt.Errorf("engine: translog failed earlier: %w", d.failed)
	}
	seq := op.SeqNo
	loc, err := d.tl.Add(ctx, op)
	d.mu.RUnlock()
	if err != nil {
		// A cancelled context can only interrupt the roll after the
		// append: the operation is logged, just not acknowledged.
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			e.failTranslog(err)
		}
		return fmt.Errorf("engine: translog append of seq %d: %w", seq, err)
	}
	if b != nil {
		b.record(loc)
		return nil
	}
	if e.Durability() == translog.Request {
		if err := d.tl.SyncTo(ctx, loc); err != nil {
			if ctx.Err() == nil {
				e.failTranslog(err)
			}
			return fmt.Errorf("engine: translog sync of seq %d: %w", seq, err)
		}
	}
	return nil
}

// failTranslog stops writes after a translog failure (Lucene's tragic
// event): the writer refuses new documents and logOp every operation.
func (e *Engine) failTranslog(err error) {
	d := &e.dur
	d.mu.Lock()
	if d.failed == nil && !d.closed {
		d.failed = err
		e.opts.Logger.Error("engine: translog failed; engine closed for writes", "err", err)
	}
	d.mu.Unlock()
	e.w.onTragicEvent(fmt.Errorf("translog: %w", err))
}

// Sync fsyncs every operation appended to the translog so far (for a
// caller that batched operations without a Bulk).
func (e *Engine) Sync(ctx context.Context) error {
	d := &e.dur
	if d.tl == nil {
		return nil
	}
	if err := d.tl.Sync(ctx); err != nil {
		return fmt.Errorf("engine: translog sync: %w", err)
	}
	return nil
}

// Durability returns when operations are acknowledged as durable.
func (e *Engine) Durability() translog.Durability { return translog.Durability(e.dur.mode.Load()) }

// SetDurability changes when operations are acknowledged as durable and,
// if syncInterval > 0, the period of the background translog sync
// (index.translog.durability and sync_interval are dynamic settings).
// Operations acknowledged under Async before a switch to Request become
// durable with the next sync.
func (e *Engine) SetDurability(d translog.Durability, syncInterval time.Duration) {
	e.dur.mode.Store(uint32(d))
	if e.dur.tl != nil && syncInterval > 0 {
		e.dur.tl.SetSyncInterval(syncInterval)
	}
}

// TranslogStats returns the translog's statistics (zero without one).
func (e *Engine) TranslogStats() translog.Stats {
	if e.dur.tl == nil {
		return translog.Stats{}
	}
	return e.dur.tl.Stats()
}

// DocWriter is what a data path writes through: an *Engine (each operation
// durable when it returns) or a *Bulk (durable after Bulk.Sync).
type DocWriter interface {
	Index(ctx context.Context, id, source []byte) (Result, error)
	IndexRouted(ctx context.Context, id, routing, source []byte) (Result, error)
	Create(ctx context.Context, id, source []byte) (Result, error)
	CreateRouted(ctx context.Context, id, routing, source []byte) (Result, error)
	Delete(ctx context.Context, id []byte) (Result, error)
	UpdateDocValues(ctx context.Context, id, fields []byte) (Result, error)
}

var (
	_ DocWriter = (*Engine)(nil)
	_ DocWriter = (*Bulk)(nil)
)

// Bulk groups operations so that they share one fsync (a bulk request):
// its Index, Create and Delete append to the translog and return without
// waiting for the disk; Sync then waits, once, for an fsync covering all
// of them. Acknowledge the bulk's operations only after Sync returns nil.
// Safe for concurrent use.
type Bulk struct {
	e    *Engine
	mu   sync.Mutex
	last translog.Location
}

// NewBulk starts a bulk.
func (e *Engine) NewBulk() *Bulk { return &Bulk{e: e} }

// Index is Engine.Index without the fsync (see Bulk).
func (b *Bulk) Index(ctx context.Context, id, source []byte) (Result, error) {
	return b.e.index(ctx, b, id, nil, source, nil)
}

// IndexRouted is Engine.IndexRouted without the fsync (see Bulk).
func (b *Bulk) IndexRouted(ctx context.Context, id, routing, source []byte) (Result, error) {
	return b.e.index(ctx, b, id, routing, source, nil)
}

// IndexIf is Engine.IndexIf without the fsync (see Bulk).
func (b *Bulk) IndexIf(ctx context.Context, id, routing, source []byte, cond *DocVersion) (Result, error) {
	return b.e.index(ctx, b, id, routing, source, cond)
}

// Create is Engine.Create without the fsync (see Bulk).
func (b *Bulk) Create(ctx context.Context, id, source []byte) (Result, error) {
	return b.e.create(ctx, b, id, nil, source)
}

// CreateRouted is Engine.CreateRouted without the fsync (see Bulk).
func (b *Bulk) CreateRouted(ctx context.Context, id, routing, source []byte) (Result, error) {
	return b.e.create(ctx, b, id, routing, source)
}

// Delete is Engine.Delete without the fsync (see Bulk).
func (b *Bulk) Delete(ctx context.Context, id []byte) (Result, error) {
	return b.e.delete(ctx, b, id, nil)
}

// DeleteIf is Engine.DeleteIf without the fsync (see Bulk).
func (b *Bulk) DeleteIf(ctx context.Context, id []byte, cond *DocVersion) (Result, error) {
	return b.e.delete(ctx, b, id, cond)
}

func (b *Bulk) record(loc translog.Location) {
	b.mu.Lock()
	if loc.Generation > b.last.Generation ||
		loc.Generation == b.last.Generation && loc.Offset+loc.Size > b.last.Offset+b.last.Size {
		b.last = loc
	}
	b.mu.Unlock()
}

// Sync returns once every operation of the bulk so far is durable: with
// Request durability after one (shared) fsync, with Async at once.
func (b *Bulk) Sync(ctx context.Context) error {
	d := &b.e.dur
	if d.tl == nil || b.e.Durability() != translog.Request {
		return nil
	}
	b.mu.Lock()
	loc := b.last
	b.mu.Unlock()
	if err := d.tl.SyncTo(ctx, loc); err != nil {
		return fmt.Errorf("engine: bulk sync: %w", err)
	}
	return nil
}

// commit is Engine.Commit: roll the translog, commit the index with the
// translog's identity in the user data, then trim the generations the
// commit made redundant. Trimming only after the commit point is durable
// keeps every operation recoverable from one or the other at every moment.
func (e *Engine) commit(ctx context.Context, opts CommitOptions) (*SegmentInfos, error) {
	if err := e.Failure(); err != nil {
		return nil, err
	}
	d := &e.dur
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	ud := maps.Clone(opts.UserData)
	if ud == nil {
		ud = make(map[string]string, 3)
	}
	ud[UserDataPrimaryTerm] = strconv.FormatInt(e.term.Load(), 10)
	if d.tl == nil {
		return e.w.Commit(ctx, CommitOptions{UserData: ud})
	}
	// Rolling first lets the trim drop whole generations: everything in
	// the old ones was appended before the commit's refresh.
	if err := d.tl.Roll(ctx); err != nil {
		return nil, fmt.Errorf("engine: commit: roll translog: %w", err)
	}
	ud[UserDataTranslogUUID] = d.tl.UUID().String()
	ud[UserDataTranslogGeneration] = strconv.FormatUint(d.tl.Stats().CurrentGen, 10)
	si, err := e.w.Commit(ctx, CommitOptions{UserData: ud})
	if err != nil {
		return nil, err
	}
	d.lastCommit = time.Now()
	keep := min(si.SeqNo+1, d.retain.keepFrom())
	if err := d.tl.TrimBelow(ctx, uint64(keep)); err != nil {
		return si, fmt.Errorf("engine: commit %d is durable but trimming the translog failed: %w", si.Generation, err)
	}
	d.tl.MarkCommitted(uint64(si.SeqNo) + 1)
	return si, nil
}

// committer commits when the uncommitted translog grows past
// CommitTranslogBytes or operations stay uncommitted for CommitInterval.
func (e *Engine) committer() {
	runCommitter(e.dur.stop, e.dur.done, e.opts.CommitInterval, e.opts.Logger, e.commitDue,
		func(ctx context.Context) (*SegmentInfos, error) { return e.commit(ctx, CommitOptions{}) })
}

// runCommitter calls commit whenever due gives a reason, checking every
// commitCheckInterval (or every interval, if shorter), until stop is
// closed or the engine is closed; it closes done when it returns.
func runCommitter(stop <-chan struct{}, done chan<- struct{}, interval time.Duration, log *slog.Logger,
	due func() string, commit func(context.Context) (*SegmentInfos, error)) {
	defer close(done)
	every := commitCheckInterval
	if interval > 0 && interval < every {
		every = interval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		reason := due()
		if reason == "" {
			continue
		}
		start := time.Now()
		si, err := commit(context.Background())
		switch {
		case errors.Is(err, ErrClosed) || errors.Is(err, translog.ErrClosed):
			return
		case err != nil:
			log.Error("engine: periodic commit failed", "reason", reason, "err", err)
		case si != nil:
			log.Debug("engine: periodic commit", "reason", reason, "generation", si.Generation,
				"seq_no", si.SeqNo, "took", time.Since(start))
		}
	}
}

// commitDue says why a periodic commit is due, or "".
func (e *Engine) commitDue() string {
	d := &e.dur
	if e.Failure() != nil {
		return ""
	}
	var committed int64
	if last := e.w.LastCommit(); last != nil {
		committed = last.SeqNo
	}
	if e.w.MaxSeqNo() <= committed {
		return ""
	}
	d.commitMu.Lock()
	last := d.lastCommit
	d.commitMu.Unlock()
	return commitReason(&e.opts.TranslogOptions, d.tl, last)
}

// commitReason says why a periodic commit is due — the uncommitted
// translog's size, or the time since the last commit — or "".
func commitReason(o *TranslogOptions, tl *translog.Translog, last time.Time) string {
	if limit := o.CommitTranslogBytes; limit > 0 && tl.Stats().UncommittedBytes >= limit {
		return "translog size"
	}
	if iv := o.CommitInterval; iv > 0 && time.Since(last) >= iv {
		return "interval"
	}
	return ""
}

// closeDurability stops the committer (before the writer closes) and,
// with closeLog, closes the translog (after the writer closed, so no
// operation is between the writer and the log).
func (e *Engine) closeDurability(closeLog bool) error {
	d := &e.dur
	if d.tl == nil {
		return nil
	}
	if d.stop != nil {
		d.stopOnce.Do(func() { close(d.stop) })
		<-d.done
	}
	if !closeLog {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if err := d.tl.Close(); err != nil && d.failed == nil {
		return fmt.Errorf("engine: close translog: %w", err)
	}
	return nil
}
