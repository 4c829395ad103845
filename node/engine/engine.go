package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
	"github.com/sluice-search/sluice/node/engine/store"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// DocParser turns an _id and a JSON _source into a parsed Document (the
// mapping's job). Parse fills doc, which the caller Reset and reuses; it is
// called from many goroutines at once.
type DocParser interface {
	Parse(id, source []byte, doc *document.Document) error
}

// ReplayParser is a DocParser that parses a translog's operations, on
// replay, as documents acknowledged before: checks added since (UTF-8 of
// strings) must not refuse a document a client was told is durable.
type ReplayParser interface {
	ParseReplay(id, source []byte, doc *document.Document) error
}

// Defaults for Options.
const (
	DefaultRefreshInterval  = time.Second
	DefaultWaitRefreshDelay = 100 * time.Millisecond
	// NRT caching directory: flushed segments up to 5 MB stay in RAM while
	// the cache holds at most 60 MB (the NRTCachingDirectory javadoc's
	// example), until a commit syncs them.
	DefaultNRTCacheMaxSegmentBytes = 5 << 20
	DefaultNRTCacheMaxBytes        = 60 << 20
	// DefaultMergePreCopyTimeout bounds MergedSegmentPreCopy: a merge
	// waits at most this long for its files to reach the replicas.
	DefaultMergePreCopyTimeout = 30 * time.Second
	// DefaultPreCopyRetention: see Options.PreCopyRetention.
	DefaultPreCopyRetention = 10 * time.Minute
	// DefaultConcurrentFileFetches: see Options.ConcurrentFileFetches.
	DefaultConcurrentFileFetches = 2
)

// Options configure an Engine.
type Options struct {
	// Path of the shard's index directory, opened as an FSDirectory behind
	// an NRTCachingDirectory. Ignored if Directory is set.
	Path string
	// Directory to use instead of Path; the engine does not close it.
	Directory store.Directory
	// Codec; default codec.New with defaults.
	Codec  index.Codec
	Parser DocParser
	// RAMBufferBytes: see WriterOptions; default DefaultRAMBufferBytes.
	RAMBufferBytes int64
	// dvShare, when set (tests), replaces the doc-values updates' share of
	// RAMBufferBytes (WriterOptions.dvShare).
	dvShare int64
	// RefreshInterval between automatic refreshes: 0 means the default
	// (1 s), negative disables them (SetRefreshInterval changes it at
	// runtime). Waiters (WaitForGeneration) still get a refresh.
	RefreshInterval time.Duration
	// WaitRefreshDelay is the longest a WaitForGeneration caller waits
	// before the refresher runs (Lucene's targetMinStaleSec): waiters
	// arriving within it share one refresh. Default 100 ms.
	WaitRefreshDelay time.Duration
	// SkipDeletesOnRefresh publishes readers without applying buffered
	// deletes (faster refresh; readers may show deleted or replaced docs
	// until a refresh applies them). Explicit Refresh calls apply them.
	SkipDeletesOnRefresh bool
	// NRT cache sizes for Path; defaults above.
	NRTCacheMaxSegmentBytes, NRTCacheMaxBytes int64
	Logger                                    *slog.Logger

	// Merging: MergePolicy and MergeScheduler default to a
	// TieredMergePolicy and a ConcurrentMergeScheduler with Lucene's
	// defaults, owned (and closed) by the engine; a scheduler passed in is
	// the caller's to close (after the engine). DisableMerges turns merging
	// off. MergedSegmentWarmer runs on each merged segment before it is
	// published; default WarmSegment.
	MergePolicy         MergePolicy
	MergeScheduler      MergeScheduler
	DisableMerges       bool
	MergedSegmentWarmer func(ctx context.Context, r index.LeafReader) error
	// MergeYieldShare: while a refresh runs, running merges pause at their
	// next write or term-dictionary checkpoint so the refresh does not
	// share the cores with them; over time merges spend at most this
	// fraction of wall-clock time paused, and never while merging is behind
	// (indexing stalled on merges, merges queued or stopped). Default DefaultMergeYieldShare; negative
	// disables pausing. MaxMergeYield bounds one pause (default
	// DefaultMaxMergeYield): a longer refresh lets merges resume.
	MergeYieldShare float64
	MaxMergeYield   time.Duration
	// CPUBudget: periodic refresh flushes, and the small merges of the default
	// scheduler, run only while they hold one of its slots, so background
	// work leaves cores to searches (package cpubudget). Default
	// cpubudget.Process(), shared by every engine of the process.
	CPUBudget *cpubudget.Budget
	// OnFailure, if set, is called once when the engine fails (Failure):
	// a check found a damaged file while it was open. It runs in the
	// goroutine that found it and must not wait for the engine.
	OnFailure func(err error)

	// MergedSegmentPreCopy, if set, is called on a primary with a merged
	// segment's files once it is written and warmed, before the merge
	// commits: the node copies them to replicas (Replica.PreCopy) ahead
	// of the checkpoint that will reference them, so a big merge never
	// holds up a replica's refresh (Lucene's NRT replication warms merged
	// segments this way). The files can be read with OpenIndexFile while
	// it runs. It is bounded by MergePreCopyTimeout (default
	// DefaultMergePreCopyTimeout); an error or the timeout is logged and
	// the merge goes on. Replicas that lack the files copy them with the
	// checkpoint.
	MergedSegmentPreCopy func(ctx context.Context, files []FileMeta) error
	MergePreCopyTimeout  time.Duration
	// PreCopyRetention bounds how long a replica keeps files PreCopy
	// fetched that no installed checkpoint references yet (default
	// DefaultPreCopyRetention): a merge the primary abandoned after
	// pre-copying leaves nothing behind for long.
	PreCopyRetention time.Duration
	// ConcurrentFileFetches is how many files a replica fetches at once
	// when it installs a checkpoint (a recovery's files included); default
	// DefaultConcurrentFileFetches, Elasticsearch's
	// indices.recovery.max_concurrent_file_chunks. One file at a time
	// leaves the disk idle while each chunk crosses from the primary.
	ConcurrentFileFetches int

	// PrimaryTerm is the term of this primary (the shard's primary term in
	// the cluster state): every operation the engine logs carries it.
	// 0 adopts the highest term the last commit and the translog know
	// (at least 1); a term below that is refused (ErrStaleTerm). New
	// segments are named from at least (PrimaryTerm-1)<<32 (see
	// SetPrimaryTerm).
	PrimaryTerm int64

	// Durability: the translog, periodic commits, checks at open.
	TranslogOptions
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	o.TranslogOptions.setDefaults(o.Path)
	if o.RAMBufferBytes == 0 {
		o.RAMBufferBytes = DefaultRAMBufferBytes
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.WaitRefreshDelay <= 0 {
		o.WaitRefreshDelay = DefaultWaitRefreshDelay
	}
	if o.NRTCacheMaxSegmentBytes == 0 {
		o.NRTCacheMaxSegmentBytes = DefaultNRTCacheMaxSegmentBytes
	}
	if o.NRTCacheMaxBytes == 0 {
		o.NRTCacheMaxBytes = DefaultNRTCacheMaxBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MergeYieldShare == 0 {
		o.MergeYieldShare = DefaultMergeYieldShare
	}
	if o.MaxMergeYield <= 0 {
		o.MaxMergeYield = DefaultMaxMergeYield
	}
	if o.CPUBudget == nil {
		o.CPUBudget = cpubudget.Process()
	}
	if o.MergePreCopyTimeout <= 0 {
		o.MergePreCopyTimeout = DefaultMergePreCopyTimeout
	}
	if o.PreCopyRetention <= 0 {
		o.PreCopyRetention = DefaultPreCopyRetention
	}
	if o.ConcurrentFileFetches <= 0 {
		o.ConcurrentFileFetches = DefaultConcurrentFileFetches
	}
}

// Engine is one shard's index: document operations by _id, refresh,
// point-in-time readers and realtime get. Safe for concurrent use.
type Engine struct {
	opts         Options
	w            *IndexWriter
	dir          store.Directory
	ownDir       bool
	ownScheduler *mergescheduler.ConcurrentMergeScheduler
	docs         sync.Pool // *document.Document
	refresher    *refresher
	dur          durability
	failure      atomic.Pointer[error] // set once by fail
	checks       checkState            // verification (scrub, Verify) state and counters
	term         atomic.Int64          // primary term of logged operations
	cps          checkpoints           // replication checkpoints (Checkpoint)
}

// Result is the outcome of Index or Delete.
type Result struct {
	SeqNo int64
	// Term is the primary term the operation was logged with (what a
	// primary sends its replicas with it); with SeqNo, the document's new
	// version (DocVersion), what a later conditional write names.
	Term int64
	// Created (Index): no live doc with the id existed before.
	Created bool
	// Found (Delete): a live doc with the id existed.
	Found bool
}

// Open opens the engine over the index's latest commit point, or a new
// empty index.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	opts.SetDefaults()
	if opts.Parser == nil {
		return nil, errors.New("engine: Options.Parser is required")
	}
	if opts.Codec == nil {
		opts.Codec = codec.New(codec.Options{})
	}
	e := &Engine{opts: opts, dir: opts.Directory}
	wopts := WriterOptions{Codec: opts.Codec, RAMBufferBytes: opts.RAMBufferBytes, dvShare: opts.dvShare, Logger: opts.Logger,
		MergedSegmentWarmer: opts.MergedSegmentWarmer, CPUBudget: opts.CPUBudget,
		MergedSegmentPreCopy: opts.MergedSegmentPreCopy, MergePreCopyTimeout: opts.MergePreCopyTimeout,
		OnCorruption: func(source string, err error) { e.failOnCorruption(source, err) }}
	if wopts.MergedSegmentWarmer == nil {
		wopts.MergedSegmentWarmer = WarmSegment
	}
	if !opts.DisableMerges {
		wopts.Merger = DefaultMerger
		wopts.MergePolicy = opts.MergePolicy
		if wopts.MergePolicy == nil {
			p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{})
			if err != nil {
				return nil, err
			}
			wopts.MergePolicy = p
		}
		wopts.MergeScheduler = opts.MergeScheduler
		if wopts.MergeScheduler == nil {
			s, err := mergescheduler.New(mergescheduler.Options{Logger: opts.Logger, Budget: opts.CPUBudget})
			if err != nil {
				return nil, err
			}
			wopts.MergeScheduler, e.ownScheduler = s, s
		}
	}
	var err error
	if e.dir, e.ownDir, err = openDirectory(&opts); err != nil {
		e.closeOwned(ctx)
		return nil, err
	}
	wopts.Directory = e.dir
	w, err := NewIndexWriter(wopts)
	if err != nil {
		e.closeOwned(ctx)
		return nil, err
	}
	e.w = w
	w.yield.configure(opts.MergeYieldShare, opts.MaxMergeYield)
	e.docs.New = func() any { return new(document.Document) }
	if err := e.openTranslog(ctx); err != nil {
		w.Close()
		e.closeOwned(ctx)
		return nil, err
	}
	e.refresher = newRefresher(e, opts.RefreshInterval, opts.WaitRefreshDelay)
	if e.dur.recommit {
		release, err := e.RetainTranslogFrom(e.dur.replayedFrom + 1)
		if err == nil {
			_, err = e.commit(ctx, CommitOptions{})
			release()
		}
		if err != nil {
			e.Close(ctx)
			return nil, fmt.Errorf("engine: commit after replaying a replica's translog: %w", err)
		}
	}
	return e, nil
}

// openDirectory returns opts.Directory, or else an FSDirectory at
// opts.Path behind an NRT cache, which the caller owns (closes); it
// refuses a store marked corrupted.
func openDirectory(opts *Options) (store.Directory, bool, error) {
	dir, owned := opts.Directory, false
	if dir == nil {
		if opts.Path == "" {
			return nil, false, errors.New("engine: Options needs Path or Directory")
		}
		fs, err := store.NewFSDirectory(opts.Path)
		if err != nil {
			return nil, false, fmt.Errorf("engine: open %s: %w", opts.Path, err)
		}
		dir, owned = store.NewNRTCachingDirectory(fs, opts.NRTCacheMaxSegmentBytes, opts.NRTCacheMaxBytes), true
	}
	if err := checkCorruptionMarkers(dir); err != nil {
		if owned {
			dir.Close()
		}
		return nil, false, err
	}
	return dir, owned, nil
}

// Writer exposes the IndexWriter (for the translog, commits and merges).
func (e *Engine) Writer() *IndexWriter { return e.w }

// Index parses source and adds or replaces the document with this id. It
// returns once the operation is in the translog (and, with Request
// durability, fsynced).
func (e *Engine) Index(ctx context.Context, id, source []byte) (Result, error) {
	return e.index(ctx, nil, id, nil, source, nil)
}

// IndexRouted is Index of a document indexed with a custom routing value:
// the routing is stored with it (_routing, in the translog and the stored
// fields), so gets, hits and reindex can report and keep it. Empty routing
// is Index.
func (e *Engine) IndexRouted(ctx context.Context, id, routing, source []byte) (Result, error) {
	return e.index(ctx, nil, id, routing, source, nil)
}

// IndexIf is IndexRouted, conditional on the id's live document having
// version cond when cond is set (if_seq_no / if_primary_term): otherwise
// it fails with a *VersionConflictError and writes nothing.
func (e *Engine) IndexIf(ctx context.Context, id, routing, source []byte, cond *DocVersion) (Result, error) {
	return e.index(ctx, nil, id, routing, source, cond)
}

func (e *Engine) index(ctx context.Context, b *Bulk, id, routing, source []byte, cond *DocVersion) (Result, error) {
	if err := e.Failure(); err != nil {
		return Result{}, err
	}
	doc, err := e.parse(id, routing, source, false)
	if err != nil {
		return Result{}, err
	}
	defer e.docs.Put(doc)
	term := e.term.Load()
	seq, created, err := e.w.UpdateWith(ctx, id, doc, OpOptions{PrimaryTerm: term, If: cond})
	if err != nil {
		return Result{}, err
	}
	if err := e.logOp(ctx, b, &translog.Op{Type: translog.OpIndex, SeqNo: uint64(seq), PrimaryTerm: uint64(term), ID: id, Routing: routing, Source: source}); err != nil {
		return Result{}, err
	}
	e.refresher.checkBuffered()
	return Result{SeqNo: seq, Term: term, Created: created}, nil
}

// Create indexes source under id only if no live document has the id
// (op_type=create), atomically; otherwise the error wraps
// ErrDocumentExists.
func (e *Engine) Create(ctx context.Context, id, source []byte) (Result, error) {
	return e.create(ctx, nil, id, nil, source)
}

// CreateRouted is Create with a custom routing value (see IndexRouted).
func (e *Engine) CreateRouted(ctx context.Context, id, routing, source []byte) (Result, error) {
	return e.create(ctx, nil, id, routing, source)
}

func (e *Engine) create(ctx context.Context, b *Bulk, id, routing, source []byte) (Result, error) {
	if err := e.Failure(); err != nil {
		return Result{}, err
	}
	doc, err := e.parse(id, routing, source, false)
	if err != nil {
		return Result{}, err
	}
	defer e.docs.Put(doc)
	term := e.term.Load()
	seq, err := e.w.CreateWith(ctx, doc, OpOptions{PrimaryTerm: term})
	if err != nil {
		return Result{}, err
	}
	if err := e.logOp(ctx, b, &translog.Op{Type: translog.OpIndex, SeqNo: uint64(seq), PrimaryTerm: uint64(term), ID: id, Routing: routing, Source: source}); err != nil {
		return Result{}, err
	}
	e.refresher.checkBuffered()
	return Result{SeqNo: seq, Term: term, Created: true}, nil
}

// parse fills a pooled Document; the caller puts it back.
func (e *Engine) parse(id, routing, source []byte, replay bool) (*document.Document, error) {
	doc := e.docs.Get().(*document.Document)
	doc.Reset()
	parse := e.opts.Parser.Parse
	if rp, ok := e.opts.Parser.(ReplayParser); ok && replay {
		parse = rp.ParseReplay
	}
	if err := parse(id, source, doc); err != nil {
		e.docs.Put(doc)
		return nil, fmt.Errorf("engine: parse document %q: %w", id, err)
	}
	if len(doc.ID) == 0 {
		doc.ID = append(doc.ID, id...)
	}
	if len(doc.Source) == 0 {
		doc.Source = append(doc.Source, source...)
	}
	doc.Routing = append(doc.Routing[:0], routing...)
	return doc, nil
}

// Delete deletes the document with this id.
func (e *Engine) Delete(ctx context.Context, id []byte) (Result, error) {
	return e.delete(ctx, nil, id, nil)
}

// DeleteIf is Delete, conditional on cond when set (see IndexIf).
func (e *Engine) DeleteIf(ctx context.Context, id []byte, cond *DocVersion) (Result, error) {
	return e.delete(ctx, nil, id, cond)
}

func (e *Engine) delete(ctx context.Context, b *Bulk, id []byte, cond *DocVersion) (Result, error) {
	if err := e.Failure(); err != nil {
		return Result{}, err
	}
	term := e.term.Load()
	seq, found, err := e.w.DeleteWith(ctx, id, OpOptions{PrimaryTerm: term, If: cond})
	if err != nil {
		return Result{}, err
	}
	if err := e.logOp(ctx, b, &translog.Op{Type: translog.OpDelete, SeqNo: uint64(seq), PrimaryTerm: uint64(term), ID: id}); err != nil {
		return Result{}, err
	}
	e.refresher.checkBuffered()
	return Result{SeqNo: seq, Term: term, Found: found}, nil
}

// Refresh makes every completed operation searchable now, applying deletes.
func (e *Engine) Refresh(ctx context.Context) (RefreshResult, error) {
	if err := e.Failure(); err != nil {
		return RefreshResult{}, err
	}
	return e.refresher.refreshNow(ctx, true)
}

// WaitForGeneration blocks until operation seq is searchable
// (refresh=wait_for). It asks the refresher for a refresh within
// WaitRefreshDelay, whatever the refresh interval (even when disabled).
func (e *Engine) WaitForGeneration(ctx context.Context, seq int64) error {
	for e.w.RefreshedSeqNo() < seq {
		if err := e.Failure(); err != nil {
			return err
		}
		e.refresher.addWaiter(false)
		wctx, cancel := context.WithTimeout(ctx, e.opts.WaitRefreshDelay*4)
		err := e.w.WaitForGeneration(wctx, seq)
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return err
		}
		// The refresh that ran may have started before seq completed;
		// ask again.
	}
	return nil
}

// Acquire returns the current point-in-time reader; Release it when done.
// It serves a failed engine's last reader too: searches should use
// AcquireReader.
func (e *Engine) Acquire() *Reader { return e.w.Acquire() }

// AcquireReader is Acquire, refusing with the engine's failure once it
// failed (a damaged file), so that nothing more is served from it.
func (e *Engine) AcquireReader() (*Reader, error) {
	if err := e.Failure(); err != nil {
		return nil, err
	}
	return e.w.Acquire(), nil
}

// GetOptions tune Get.
type GetOptions struct {
	// Realtime: if the id changed since the last refresh, refresh first
	// (Elasticsearch's realtime get), so the latest version is returned.
	Realtime bool
	// CurrentValues: the _source returned has the fields in-place updates
	// changed set to their current values (CurrentSource), as a partial
	// update must merge into; otherwise it is the document as indexed.
	CurrentValues bool
}

// Get returns the _source of the live document with id, from the latest
// refresh (or after refreshing, with Realtime).
func (e *Engine) Get(ctx context.Context, id []byte, opts GetOptions) (source []byte, found bool, err error) {
	d, found, err := e.GetDocument(ctx, id, opts)
	return d.Source, found, err
}

// Doc is a document read by GetDocument: what is stored (_id, _routing,
// _source) and its version.
type Doc struct {
	index.StoredDoc
	Version DocVersion
}

// GetDocument is Get returning the whole stored document (_id, _routing,
// _source; its slices are the caller's) and its version: what a
// conditional write (IndexIf) of it compares with.
func (e *Engine) GetDocument(ctx context.Context, id []byte, opts GetOptions) (Doc, bool, error) {
	if err := e.Failure(); err != nil {
		return Doc{}, false, err
	}
	doc, found, v, err := e.getDocument(ctx, id, opts)
	return Doc{StoredDoc: doc, Version: v}, found, err
}

func (e *Engine) getDocument(ctx context.Context, id []byte, opts GetOptions) (doc index.StoredDoc, found bool, v DocVersion, err error) {
	if opts.Realtime {
		if seq, ok := e.w.pendingSeq(id); ok {
			e.refresher.addWaiter(true)
			if err := e.w.WaitForGeneration(ctx, seq); err != nil {
				return index.StoredDoc{}, false, v, err
			}
		}
	}
	r := e.w.Acquire()
	defer r.Release()
	leaf, d, ok := r.LookupID(id)
	if !ok {
		return index.StoredDoc{}, false, v, nil
	}
	// A fresh StoredDoc: readers copy into dst's buffers, which are then
	// the caller's.
	if err := r.Document(leaf, d, &doc); err != nil {
		return index.StoredDoc{}, false, v, fmt.Errorf("engine: get %q: %w", id, err)
	}
	if opts.CurrentValues {
		if doc.Source, err = CurrentSource(r.leaves[leaf].Reader, d, doc.Source); err != nil {
			return index.StoredDoc{}, false, v, fmt.Errorf("engine: get %q: %w", id, err)
		}
	}
	return doc, true, r.DocVersion(leaf, d), nil
}

// Commit makes every completed operation durable in the index and returns
// the commit point (see IndexWriter.Commit), then trims the translog
// generations it made redundant.
func (e *Engine) Commit(ctx context.Context, opts CommitOptions) (*SegmentInfos, error) {
	return e.commit(ctx, opts)
}

// SetRefreshInterval changes the automatic refresh interval; negative
// disables it (e.g. during a bulk copy).
func (e *Engine) SetRefreshInterval(d time.Duration) { e.refresher.setInterval(d) }

// Stats is a snapshot of the engine's counters.
type Stats struct {
	NumDocs, DeletedDocs, MaxDoc int
	Segments                     int
	SegmentBytes                 int64 // files of the current reader's segments
	SegmentReaderRAMBytes        int64 // heap held by open segment readers
	IndexingRAMBytes             int64 // buffered docs in DWPTs
	VersionMapRAMBytes           int64
	// DocValuesUpdatesBytes: heap of the in-place doc-values updates the
	// current reader layers over its segments (dvupdates.go); those a
	// generation file serves in place are not on the heap. Kept within a
	// quarter of RAMBufferBytes by DocValuesUpdatesWriteOuts: refreshes
	// that found them over it and wrote a segment's out.
	DocValuesUpdatesBytes     int64
	DocValuesUpdatesWriteOuts int64
	SeqNo, RefreshedSeqNo     int64
	Flushes                   int64
	FlushedBytes              int64
	FlushTime                 time.Duration
	// FlushBudgetWait: periodic refresh flushes waited for a CPUBudget slot.
	FlushBudgetWait time.Duration
	// MergeStepAside: small merges slept at their checkpoints while other
	// goroutines waited for a CPU (cpubudget.Slot.StepAside).
	MergeStepAside time.Duration
	Stalls         int64
	StallTime      time.Duration
	Refreshes      int64
	RefreshTime    time.Duration
	// Latencies of the most recent refreshes (up to 256) and the max ever.
	RefreshP50, RefreshP99, RefreshMax time.Duration
	FilesDeleted                       int64
	Merges, MergesFailed               int64
	MergeTime                          time.Duration
	// Merges pausing for refreshes (Options.MergeYieldShare): refreshes
	// that paused them, refreshes during merges that did not (budget
	// spent or merges behind), and the time merges waited, summed over
	// merges.
	MergeYields, MergeYieldsSkipped int64
	MergeYieldTime                  time.Duration
	CheckStats
}

// CheckStats count checksum verification by the scrubber and Verify:
// bytes and files checksummed, damaged files found (by those and, on a
// primary, by merges), and when a scrub pass last got through every file
// (zero: never).
type CheckStats struct {
	VerifiedBytes, VerifiedFiles, CorruptFiles int64
	ScrubbedAt                                 time.Time
}

// Stats returns current counters.
func (e *Engine) Stats() Stats {
	w := e.w
	var s Stats
	r := w.Acquire()
	s.NumDocs, s.MaxDoc, s.Segments = r.NumDocs(), r.MaxDoc(), len(r.Leaves())
	s.DeletedDocs = s.MaxDoc - s.NumDocs
	for _, sg := range r.segs {
		s.SegmentBytes += sg.sizeBytes
		s.SegmentReaderRAMBytes += sg.reader.RAMBytesUsed() + sg.bloom.ramBytes()
	}
	for _, lf := range r.leaves {
		s.DocValuesUpdatesBytes += readerDocValuesUpdates(lf.Reader).ramBytes()
	}
	r.Release()
	s.IndexingRAMBytes = w.RAMBytesUsed()
	w.mu.Lock()
	s.VersionMapRAMBytes = w.versions.bytes
	s.SeqNo = w.seqNo
	w.mu.Unlock()
	s.RefreshedSeqNo = w.RefreshedSeqNo()
	s.Flushes = w.stats.flushes.Load()
	s.FlushedBytes = w.stats.flushedBytes.Load()
	s.FlushTime = time.Duration(w.stats.flushNanos.Load())
	s.FlushBudgetWait = time.Duration(w.stats.flushBudgetWaitNanos.Load())
	s.MergeStepAside = time.Duration(w.stats.mergeStepAsideNanos.Load())
	s.Stalls = w.stats.stalls.Load()
	s.DocValuesUpdatesWriteOuts = w.stats.dvWriteOuts.Load()
	s.StallTime = time.Duration(w.stats.stallNanos.Load())
	s.Refreshes = w.stats.refreshes.Load()
	s.RefreshTime = time.Duration(w.stats.refreshNanos.Load())
	lat, mx := w.stats.refreshLatencies()
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		s.RefreshP50 = lat[n/2]
		s.RefreshP99 = lat[min(n-1, n*99/100)]
	}
	s.RefreshMax = mx
	s.FilesDeleted = w.fd.deleted.Load()
	s.Merges, s.MergesFailed = w.stats.merges.Load(), w.stats.mergesFailed.Load()
	s.MergeTime = time.Duration(w.stats.mergeNanos.Load())
	s.MergeYields, s.MergeYieldsSkipped = w.yield.pauses.Load(), w.yield.skipped.Load()
	s.MergeYieldTime = time.Duration(w.yield.pausedNS.Load())
	s.CheckStats = e.checks.stats()
	return s
}

// Close stops the refresher and the committer, aborts merges, closes the
// writer and then the translog. Buffered, uncommitted operations stay in
// the translog and are replayed by the next Open (without a translog they
// are discarded: call Commit first to keep them).
func (e *Engine) Close(ctx context.Context) error {
	e.refresher.close()
	e.cps.release()
	err := e.closeDurability(false)
	if e.ownScheduler != nil {
		err = errors.Join(err, e.ownScheduler.Close(ctx))
	}
	err = errors.Join(err, e.w.Close())
	err = errors.Join(err, e.closeDurability(true))
	if e.ownDir {
		err = errors.Join(err, e.dir.Close())
	}
	return err
}

// closeOwned releases what Open created before failing.
func (e *Engine) closeOwned(ctx context.Context) {
	if e.ownScheduler != nil {
		e.ownScheduler.Close(ctx)
	}
	if e.ownDir && e.dir != nil {
		e.dir.Close()
	}
}
