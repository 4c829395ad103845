package shard

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// ErrNotHere says the shard is not open on this node.
var ErrNotHere = errors.New("shard not open here")

// ErrFailed is wrapped, with the engine's failure (engine.ErrFailed and,
// for a damaged file, index.ErrCorrupt naming it), by the errors of a
// shard that failed while open: Get refuses it, and Open refuses to open
// it again until it is deleted (a restart finds the store's corruption
// marker instead).
var ErrFailed = errors.New("shard failed")

// ID names one shard of one index.
type ID struct {
	IndexUUID string
	Shard     int
}

func (id ID) String() string { return id.IndexUUID + "/" + strconv.Itoa(id.Shard) }

// Meta is what opening a shard needs from the index metadata.
type Meta struct {
	ID
	Index   string
	Mapping *mapping.Mapping
	// RefreshInterval: 0 is the default (1 s), negative turns periodic
	// refresh off.
	RefreshInterval time.Duration
	// RAMBufferBytes: indexing buffer; 0 is the host's default.
	RAMBufferBytes int64
	// Durability and SyncInterval (0: 5 s) are the translog's
	// (index.translog.durability and sync_interval).
	Durability   translog.Durability
	SyncInterval time.Duration
	// Recovery, if set, follows the open: stage and translog replay
	// progress (engine.Recovery), read by the node while Open runs.
	Recovery *engine.Recovery
	// PrimaryTerm is the shard's primary term in the routing table (0:
	// whatever the copy knows). A primary logs its operations with it; a
	// replica refuses operations of older terms.
	PrimaryTerm int64
	// Replicator, if set, is the primary's replication group: its writes
	// are replicated through it from the start (Shard.SetReplicator).
	Replicator Replicator
	// MergedSegmentPreCopy, if set, runs on a primary for each merged
	// segment before the merge commits (engine.Options), to pre-copy it
	// to the replicas.
	MergedSegmentPreCopy func(ctx context.Context, files []engine.FileMeta) error
}

// HostOptions configure a Host.
type HostOptions struct {
	// DataDir holds <index-uuid>/<shard>/ directories.
	DataDir string
	// Updater publishes dynamic mapping updates; nil applies them to the
	// shard only (single-process use and tests).
	Updater MappingUpdater
	// RAMBufferBytes is the default indexing buffer per shard.
	RAMBufferBytes int64
	// Codec writes segments; default codec.New with defaults.
	Codec index.Codec
	// MaxOpenReaders caps the pinned readers of all shards (default 500):
	// beyond, PinReader fails with ErrTooManyReaders, as Elasticsearch's
	// search.max_open_scroll_context.
	MaxOpenReaders int
	// ReapInterval is how often Run releases expired readers (default 1 s).
	ReapInterval time.Duration
	// BulkParallelism: goroutines applying one Bulk. Default GOMAXPROCS.
	BulkParallelism int
	Logger          *slog.Logger
	// CommitTranslogBytes commits a shard once its uncommitted translog
	// exceeds this many bytes, bounding what a restart replays
	// (Elasticsearch's index.translog.flush_threshold_size); default
	// engine.DefaultCommitTranslogBytes, negative: never by size.
	CommitTranslogBytes int64
	// Scrub configures the node's background scrubber (engine.Scrubber),
	// which re-verifies the checksums of every open shard's files and
	// fails a shard with a damaged one. It runs while shards are open;
	// a negative Interval turns it off.
	Scrub engine.ScrubOptions
}

// SetDefaults fills zero fields.
func (o *HostOptions) SetDefaults() {
	if o.Codec == nil {
		o.Codec = codec.New(codec.Options{})
	}
	if o.MaxOpenReaders <= 0 {
		o.MaxOpenReaders = 500
	}
	if o.ReapInterval <= 0 {
		o.ReapInterval = time.Second
	}
	if o.BulkParallelism <= 0 {
		o.BulkParallelism = runtime.GOMAXPROCS(0)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Scrub.Logger == nil {
		o.Scrub.Logger = o.Logger
	}
}

// Host owns the open shards of a node and their pinned readers. Safe for
// concurrent use.
type Host struct {
	opts     HostOptions
	pinned   *pinned
	bulkSeed maphash.Seed

	mu     sync.RWMutex
	shards map[ID]*Shard
	// opening serializes Open/Close/Delete of one shard.
	opening map[ID]*sync.Mutex
	// failed holds why shards failed while open, until they are deleted;
	// failedCh gets a value after each failure (FailureNotify).
	failed   map[ID]error
	failedCh chan struct{}
	// scrubber runs while shards are open.
	scrubber *engine.Scrubber
}

// NewHost returns a Host over opts.DataDir, creating it if needed.
func NewHost(opts HostOptions) (*Host, error) {
	if opts.DataDir == "" {
		return nil, errors.New("shard: HostOptions.DataDir is required")
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: data dir: %w", err)
	}
	opts.SetDefaults()
	return &Host{opts: opts, pinned: newPinned(opts.MaxOpenReaders), bulkSeed: maphash.MakeSeed(),
		shards: map[ID]*Shard{}, opening: map[ID]*sync.Mutex{}, failed: map[ID]error{}, failedCh: make(chan struct{}, 1)}, nil
}

// Run releases pinned readers whose keep-alive has passed, every
// HostOptions.ReapInterval, until ctx ends.
func (h *Host) Run(ctx context.Context) { h.pinned.run(ctx, h.opts.ReapInterval) }

// PinnedReaders is the number of pinned readers of all shards.
func (h *Host) PinnedReaders() int { return h.pinned.count() }

// Unpin releases pinned reader id, whatever its shard (which may be gone
// already); ok is false if it was not pinned.
func (h *Host) Unpin(id uint64) bool { return h.pinned.unpin(nil, id) }

// Path returns the directory of a shard.
func (h *Host) Path(id ID) string {
	return filepath.Join(h.opts.DataDir, id.IndexUUID, strconv.Itoa(id.Shard))
}

func (h *Host) lock(id ID) func() {
	h.mu.Lock()
	m := h.opening[id]
	if m == nil {
		m = &sync.Mutex{}
		h.opening[id] = m
	}
	h.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Open opens the shard (recovering it from its last commit, or creating
// it) as a primary copy. Opening an open shard only updates its mapping;
// a replica copy open here is an error (Promote turns it into a primary).
func (h *Host) Open(ctx context.Context, meta Meta) (*Shard, error) { return h.open(ctx, meta, false) }

// OpenReplica opens the shard as a replica copy (engine.OpenReplica over
// its last commit and translog, or empty): it indexes nothing and serves
// searches from what its primary sends (node/replication). Opening an
// open replica only updates its mapping; a primary open here is an error.
func (h *Host) OpenReplica(ctx context.Context, meta Meta) (*Shard, error) {
	return h.open(ctx, meta, true)
}

func (h *Host) open(ctx context.Context, meta Meta, replica bool) (*Shard, error) {
	if meta.IndexUUID == "" || meta.Shard < 0 || filepath.Base(meta.IndexUUID) != meta.IndexUUID {
		return nil, fmt.Errorf("shard: invalid shard id %v", meta.ID)
	}
	unlock := h.lock(meta.ID)
	defer unlock()
	if err := h.Failure(meta.ID); err != nil {
		return nil, fmt.Errorf("shard %v: not reopened until its data is deleted: %w", meta.ID, err)
	}
	if s := h.lookup(meta.ID); s != nil {
		if (s.rep != nil) != replica {
			return nil, fmt.Errorf("shard %v: open here in another role (replica: %v)", meta.ID, s.rep != nil)
		}
		if meta.Mapping != nil {
			if err := s.setMapping(meta.Mapping); err != nil {
				h.opts.Logger.Warn("shard: mapping not applied", "shard", meta.ID, "err", err)
			}
		}
		return s, nil
	}
	s, opts, err := h.newShard(meta)
	if err != nil {
		return nil, err
	}
	if replica {
		s.SetReplicator(nil)
		if s.rep, err = engine.OpenReplica(ctx, opts); err != nil {
			return nil, fmt.Errorf("shard %v: open replica: %w", meta.ID, err)
		}
		h.add(s)
		s.logger.Info("replica copy opened", "term", s.rep.PrimaryTerm(), "state", fmt.Sprintf("%+v", s.rep.State()))
		return s, nil
	}
	if s.eng, err = engine.Open(ctx, opts); err != nil {
		return nil, fmt.Errorf("shard %v: open: %w", meta.ID, err)
	}
	h.add(s)
	s.logger.Info("shard opened", "docs", s.eng.Stats().NumDocs, "term", s.eng.PrimaryTerm())
	return s, nil
}

// newShard is a Shard of meta, not yet open, and the engine options to
// open it with.
func (h *Host) newShard(meta Meta) (*Shard, engine.Options, error) {
	m := meta.Mapping
	if m == nil {
		var err error
		if m, err = mapping.New(mapping.DynamicDefault, nil); err != nil {
			return nil, engine.Options{}, err
		}
	}
	s := &Shard{id: meta.ID, index: meta.Index, path: h.Path(meta.ID), updater: h.opts.Updater,
		logger: h.opts.Logger.With("shard", meta.ID.String()), pinned: h.pinned,
		bulkParallelism: h.opts.BulkParallelism, bulkSeed: h.bulkSeed, refreshInterval: meta.RefreshInterval}
	s.docs = newDocMapping(m)
	s.SetReplicator(meta.Replicator)
	if err := os.MkdirAll(s.path, 0o755); err != nil {
		return nil, engine.Options{}, fmt.Errorf("shard %v: %w", meta.ID, err)
	}
	ram := meta.RAMBufferBytes
	if ram == 0 {
		ram = h.opts.RAMBufferBytes
	}
	return s, engine.Options{Path: s.path, Codec: h.opts.Codec, Parser: docParser{s.docs},
		RAMBufferBytes: ram, RefreshInterval: meta.RefreshInterval, Logger: s.logger,
		OnFailure: func(err error) { h.shardFailed(s, err) }, PrimaryTerm: meta.PrimaryTerm,
		MergedSegmentPreCopy: meta.MergedSegmentPreCopy,
		TranslogOptions: engine.TranslogOptions{Durability: meta.Durability, SyncInterval: meta.SyncInterval,
			CommitTranslogBytes: h.opts.CommitTranslogBytes, Recovery: meta.Recovery}}, nil
}

// add makes an open shard the host's.
func (h *Host) add(s *Shard) {
	h.mu.Lock()
	h.shards[s.id] = s
	if h.scrubber == nil {
		h.scrubber = engine.NewScrubber(h.opts.Scrub, h.scrubTargets)
	}
	h.mu.Unlock()
}

// Promote turns the open replica copy of a shard into its primary of term
// (engine.Replica.Promote: sealed, committed, reopened as an engine that
// replays its translog above the global checkpoint), with replicator as
// its replication group. The replica's Shard is replaced by the
// primary's, and readers pinned on the replica (points-in-time, scrolls)
// move to it: they keep their view of the replica's segments, whose files
// stay mapped. While the engine opens, the replica's Shard stays in place
// (writes get ErrNotPrimary, new readers ErrClosed) so pinned readers are
// found throughout. On error the shard is closed, its pinned readers
// released; reopen it to retry.
func (h *Host) Promote(ctx context.Context, id ID, term int64, replicator Replicator) (*Shard, error) {
	unlock := h.lock(id)
	defer unlock()
	old := h.lookup(id)
	if old == nil {
		return nil, fmt.Errorf("shard %v: %w", id, ErrNotHere)
	}
	if old.rep == nil {
		return nil, fmt.Errorf("shard %v: already a primary", id)
	}
	old.closed.Store(true)
	s := &Shard{id: old.id, index: old.index, path: old.path, updater: old.updater, logger: old.logger,
		pinned: old.pinned, bulkParallelism: old.bulkParallelism, bulkSeed: old.bulkSeed,
		refreshInterval: old.refreshInterval}
	s.docs = old.docs // the engine the replica opens parses with them
	s.SetReplicator(replicator)
	eng, err := old.rep.Promote(ctx, term)
	if err != nil {
		h.take(id)
		// closed is already set, so close() would skip it: close the
		// replica here (a no-op if Promote got as far as closing it).
		if cerr := old.rep.Close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close replica: %w", cerr))
		}
		return nil, fmt.Errorf("shard %v: promote to term %d: %w", id, term, err)
	}
	s.eng = eng
	h.mu.Lock()
	h.shards[id] = s
	h.pinned.rehome(old, s)
	h.mu.Unlock()
	s.SetRefreshInterval(s.refreshInterval)
	s.logger.Info("replica copy promoted to primary", "term", term, "docs", eng.Stats().NumDocs, "max_seq_no", eng.Writer().MaxSeqNo())
	return s, nil
}

// Get returns an open shard, or an error wrapping ErrNotHere, or one
// wrapping ErrFailed and the engine's failure for a shard that failed.
func (h *Host) Get(id ID) (*Shard, error) {
	s := h.lookup(id)
	if s == nil {
		return nil, fmt.Errorf("shard %v: %w", id, ErrNotHere)
	}
	if err := s.failure(); err != nil {
		return nil, fmt.Errorf("shard %v: %w: %w", id, ErrFailed, err)
	}
	return s, nil
}

// lookup returns an open shard, failed or not, or nil.
func (h *Host) lookup(id ID) *Shard {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.shards[id]
}

// Shards returns the open shards, failed ones included.
func (h *Host) Shards() []*Shard {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*Shard, 0, len(h.shards))
	for _, s := range h.shards {
		out = append(out, s)
	}
	return out
}

// Close commits and closes a shard; closing a shard that is not open is a
// no-op.
func (h *Host) Close(ctx context.Context, id ID) error {
	unlock := h.lock(id)
	defer unlock()
	s := h.take(id)
	if s == nil {
		return nil
	}
	return s.close(ctx, true)
}

// Delete closes a shard without committing and removes its data; the index
// directory goes too once its last shard is gone.
func (h *Host) Delete(ctx context.Context, id ID) error {
	unlock := h.lock(id)
	defer unlock()
	var err error
	if s := h.take(id); s != nil {
		err = s.close(ctx, false)
	}
	h.mu.Lock()
	delete(h.failed, id) // its data, corruption marker included, goes
	h.mu.Unlock()
	if rmErr := os.RemoveAll(h.Path(id)); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("shard %v: remove data: %w", id, rmErr))
	}
	// Fails harmlessly while other shards of the index remain.
	_ = os.Remove(filepath.Join(h.opts.DataDir, id.IndexUUID))
	return err
}

// Stored lists the shards with a directory under the data dir, open or
// not: a node's reconciler finds there, when it starts, the copies it
// held before (some of which may have moved away while it was down). A
// directory the node may not read is not one of its indices and is
// skipped: the data dir is often a volume's root, with lost+found.
func (h *Host) Stored() ([]ID, error) {
	indices, err := os.ReadDir(h.opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("shard: list data dir: %w", err)
	}
	var ids []ID
	for _, x := range indices {
		if !x.IsDir() {
			continue
		}
		shards, err := os.ReadDir(filepath.Join(h.opts.DataDir, x.Name()))
		if errors.Is(err, fs.ErrPermission) {
			// Not the node's (it makes its index dirs readable): a
			// volume root's lost+found, say.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shard: list index dir: %w", err)
		}
		for _, s := range shards {
			n, err := strconv.Atoi(s.Name())
			if s.IsDir() && err == nil && n >= 0 && strconv.Itoa(n) == s.Name() {
				ids = append(ids, ID{IndexUUID: x.Name(), Shard: n})
			}
		}
	}
	return ids, nil
}

// UpdateMapping merges a newer cluster mapping of an index into each of its
// open shards.
func (h *Host) UpdateMapping(indexUUID string, m *mapping.Mapping) error {
	var errs []error
	for _, s := range h.Shards() {
		if s.id.IndexUUID == indexUUID {
			if err := s.setMapping(m); err != nil {
				errs = append(errs, fmt.Errorf("shard %v: %w", s.id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// SetRefreshInterval changes the refresh interval of an index's open
// shards (0: the default, negative: off).
func (h *Host) SetRefreshInterval(indexUUID string, d time.Duration) {
	for _, s := range h.Shards() {
		if s.id.IndexUUID == indexUUID {
			s.SetRefreshInterval(d)
		}
	}
}

// SetDurability changes the translog durability and sync interval (0:
// unchanged) of an index's open shards.
func (h *Host) SetDurability(indexUUID string, d translog.Durability, syncInterval time.Duration) {
	for _, s := range h.Shards() {
		switch {
		case s.id.IndexUUID != indexUUID:
		case s.rep != nil:
			s.rep.SetDurability(d, syncInterval)
		default:
			s.eng.SetDurability(d, syncInterval)
		}
	}
}

// CloseAll releases every pinned reader and commits and closes every open
// shard (node shutdown); readers cannot be pinned afterwards.
func (h *Host) CloseAll(ctx context.Context) error {
	h.pinned.shutdown()
	var errs []error
	for _, s := range h.Shards() {
		errs = append(errs, h.Close(ctx, s.id))
	}
	return errors.Join(errs...)
}

// take removes a shard from the host and releases its pinned readers,
// while its files are still there; the last shard to go stops the
// scrubber.
func (h *Host) take(id ID) *Shard {
	h.mu.Lock()
	s := h.shards[id]
	delete(h.shards, id)
	var scrubber *engine.Scrubber
	if len(h.shards) == 0 {
		scrubber, h.scrubber = h.scrubber, nil
	}
	h.mu.Unlock()
	scrubber.Close()
	if s != nil {
		h.pinned.reap(time.Now(), s)
	}
	return s
}

func (s *Shard) close(ctx context.Context, commit bool) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.rep != nil {
		var err error
		if commit {
			if _, cerr := s.rep.Commit(ctx); cerr != nil {
				err = fmt.Errorf("shard %v: commit replica: %w", s.id, cerr)
			}
		}
		if cerr := s.rep.Close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("shard %v: close replica: %w", s.id, cerr))
		}
		s.logger.Info("replica copy closed", "committed", commit, "err", err)
		return err
	}
	var err error
	if commit && s.eng.Failure() == nil { // a failed engine commits nothing
		if _, cerr := s.eng.Commit(ctx, engine.CommitOptions{}); cerr != nil {
			err = fmt.Errorf("shard %v: commit: %w", s.id, cerr)
		}
	}
	if cerr := s.eng.Close(ctx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("shard %v: close: %w", s.id, cerr))
	}
	s.logger.Info("shard closed", "committed", commit, "err", err)
	return err
}

// scrubTargets lists the open shards' engines and replicas (the
// scrubber's view): a replica verifies each file it fetches, and its disk
// can damage it afterwards as a primary's can.
func (h *Host) scrubTargets() []engine.ScrubTarget {
	shards := h.Shards()
	out := make([]engine.ScrubTarget, 0, len(shards))
	for _, s := range shards {
		if s.rep != nil {
			out = append(out, s.rep)
		} else {
			out = append(out, s.eng)
		}
	}
	return out
}

// shardFailed records that an open shard's engine failed (a damaged file
// found by the scrubber, a merge or Verify) and tells FailureNotify.
func (h *Host) shardFailed(s *Shard, err error) {
	h.mu.Lock()
	h.failed[s.id] = err
	h.mu.Unlock()
	s.logger.Error("shard failed", "err", err)
	select {
	case h.failedCh <- struct{}{}:
	default:
	}
}

// Failure returns why a shard failed while open on this host (an error
// wrapping engine.ErrFailed and, for a damaged file, index.ErrCorrupt
// naming it), or nil. It is kept after the shard closes, until it is
// deleted.
func (h *Host) Failure(id ID) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.failed[id]
}

// FailureNotify receives a value after a shard fails (coalesced: one
// value may stand for several failures; read Failure for each shard).
func (h *Host) FailureNotify() <-chan struct{} { return h.failedCh }

// Verify checksums every file of an open shard copy now — primary or
// replica, failed ones too — and with opts.Deep decodes every segment
// (engine.Engine.Verify, engine.Replica.Verify). Damage fails the copy as
// the scrubber's does.
func (h *Host) Verify(ctx context.Context, id ID, opts engine.VerifyOptions) (engine.VerifyResult, error) {
	s := h.lookup(id)
	if s == nil {
		return engine.VerifyResult{}, fmt.Errorf("shard %v: %w", id, ErrNotHere)
	}
	var res engine.VerifyResult
	var err error
	if s.rep != nil {
		res, err = s.rep.Verify(ctx, opts)
	} else {
		res, err = s.eng.Verify(ctx, opts)
	}
	if err != nil {
		return res, fmt.Errorf("shard %v: %w", id, err)
	}
	return res, nil
}
