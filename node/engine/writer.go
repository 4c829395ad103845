package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
	"github.com/sluice-search/sluice/node/engine/store"
)

// ErrClosed is returned by operations on a closed writer or engine.
var ErrClosed = errors.New("engine: closed")

// DefaultRAMBufferBytes is the default indexing buffer. Lucene defaults to
// 16 MB per IndexWriter; Elasticsearch gives a shard up to 10% of the heap.
// 64 MB is large enough that flushed segments are few and big (fewer merges,
// and the codec's per-segment costs are amortised) and small enough that a
// node with several shards stays within its memory budget.
const DefaultRAMBufferBytes = 64 << 20

// WriterOptions configure an IndexWriter.
type WriterOptions struct {
	Directory store.Directory
	Codec     index.Codec
	// RAMBufferBytes is the global budget for in-memory segments (DWPTs).
	// When their total exceeds it, the largest is flushed. Default
	// DefaultRAMBufferBytes.
	RAMBufferBytes int64
	// dvShare, when set (tests), is the heap the segments' doc-values
	// updates may hold before a refresh writes them out, instead of a
	// quarter of RAMBufferBytes.
	dvShare int64
	// Logger; default slog.Default().
	Logger *slog.Logger

	// Merging is on when MergePolicy, MergeScheduler and Merger are all
	// set. The writer asks the policy after every refresh that changed the
	// segments and after every merge; merged segments replace their inputs
	// at the next refresh.
	MergePolicy    MergePolicy
	MergeScheduler MergeScheduler
	Merger         SegmentMerger
	// MergedSegmentWarmer, if set, runs on a merged segment before it can
	// become visible (e.g. to load its term index).
	MergedSegmentWarmer func(ctx context.Context, r index.LeafReader) error
	// MergedSegmentPreCopy and MergePreCopyTimeout: see Options.
	MergedSegmentPreCopy func(ctx context.Context, files []FileMeta) error
	MergePreCopyTimeout  time.Duration
	// CPUBudget: the periodic refresh's flushes each hold a slot of it
	// while they write (package cpubudget). Default cpubudget.Process().
	CPUBudget *cpubudget.Budget
	// OnCorruption, if set, hears of a damaged file a merge found in its
	// inputs (the Engine fails itself).
	OnCorruption func(source string, err error)
}

// SetDefaults fills zero fields.
func (o *WriterOptions) SetDefaults() {
	if o.CPUBudget == nil {
		o.CPUBudget = cpubudget.Process()
	}
	if o.RAMBufferBytes == 0 {
		o.RAMBufferBytes = DefaultRAMBufferBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MergePreCopyTimeout <= 0 {
		o.MergePreCopyTimeout = DefaultMergePreCopyTimeout
	}
}

// IndexWriter buffers documents in DWPTs, flushes them as segments, applies
// deletes by id, and publishes point-in-time Readers at refresh. Add, Update
// and Delete are safe to call from many goroutines; see the package doc for
// the write and refresh paths.
//
// It composes four parts, each with its own lock (taken in this order when
// nested: commits, segments, then flushControl or mu, then perThreadPool):
// the perThreadPool hands out DWPTs, the flushControl decides when they are
// flushed, the segmentSet holds the segments and the merges registered
// against them, and the committer writes commit points. The writer itself
// sequences operations (mu) and publishes readers.
type IndexWriter struct {
	dir   store.Directory
	codec index.Codec
	opts  WriterOptions
	fd    *fileDeleter
	log   *slog.Logger

	perThreadPool *perThreadPool
	flushControl  *flushControl
	segments      *segmentSet
	commits       committer
	liveFiles     liveDocsFiles

	// mu is the sequence section: sequence numbers, the delete queue and
	// the version map change together under it, and a refresh publishes a
	// reader under it.
	mu          sync.Mutex
	seqNo       int64
	delTail     *delNode
	deleteBytes int64 // queued delete nodes since the last refresh
	versions    versionMap
	closed      bool
	refreshedCh chan struct{}
	version     int64 // of the latest reader; written under segments.mu too
	current     atomic.Pointer[Reader]
	refreshed   atomic.Int64 // highest seqNo visible in the current reader
	// bufferedBytes approximates the version map and queued deletes, which
	// only a refresh releases.
	bufferedBytes atomic.Int64

	mergesRunning sync.WaitGroup
	closeCtx      context.Context // cancelled by Close: aborts merges
	closeCancel   context.CancelFunc
	closedFlag    atomic.Bool
	yield         mergeYield     // merges pause while a refresh runs
	releasing     sync.WaitGroup // replaced readers being released

	stats writerStats
}

type writerStats struct {
	flushes      atomic.Int64
	flushedBytes atomic.Int64
	flushNanos   atomic.Int64
	stalls       atomic.Int64
	stallNanos   atomic.Int64
	refreshes    atomic.Int64
	refreshNanos atomic.Int64
	merges       atomic.Int64
	mergeNanos   atomic.Int64
	mergesFailed atomic.Int64

	flushBudgetWaitNanos atomic.Int64
	mergeStepAsideNanos  atomic.Int64
	dvWriteOuts          atomic.Int64 // doc-values updates written out over budget

	mu     sync.Mutex
	recent [256]time.Duration // ring of the latest refresh latencies
	n      int
	max    time.Duration
}

func (s *writerStats) observeRefresh(d time.Duration) {
	s.mu.Lock()
	s.recent[s.n%len(s.recent)] = d
	s.n++
	s.max = max(s.max, d)
	s.mu.Unlock()
}

// refreshLatencies returns the recent latencies (unordered) and the max.
func (s *writerStats) refreshLatencies() ([]time.Duration, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(s.n, len(s.recent))
	return append([]time.Duration(nil), s.recent[:n]...), s.max
}

// NewIndexWriter opens a writer over the latest commit point in
// opts.Directory, or an empty index if there is none. Index files the commit
// does not reference are deleted. Sequence numbers continue from the
// commit's SeqNo.
func NewIndexWriter(opts WriterOptions) (*IndexWriter, error) {
	opts.SetDefaults()
	if opts.Directory == nil || opts.Codec == nil {
		return nil, errors.New("engine: WriterOptions needs a Directory and a Codec")
	}
	if opts.RAMBufferBytes < 1<<20 {
		return nil, fmt.Errorf("engine: RAMBufferBytes %d below 1 MiB", opts.RAMBufferBytes)
	}
	w := &IndexWriter{
		dir: opts.Directory, codec: opts.Codec, opts: opts, log: opts.Logger,
		fd:            newFileDeleter(opts.Directory),
		perThreadPool: newPerThreadPool(dwpt.NewAllocator(opts.RAMBufferBytes / 4)),
		segments:      newSegmentSet(),
		delTail:       &delNode{},
		versions:      newVersionMap(),
	}
	w.flushControl = newFlushControl(w.perThreadPool, opts.RAMBufferBytes, &w.stats, w.log, w.flushOne)
	w.liveFiles = liveDocsFiles{dir: w.dir, codec: w.codec, fd: w.fd, counter: &w.segments.counter}
	w.commits = committer{dir: w.dir, fd: w.fd, live: &w.liveFiles}
	w.closeCtx, w.closeCancel = context.WithCancel(context.Background())
	w.refreshedCh = make(chan struct{})
	w.current.Store(newReader(nil, 0, 0))
	si, err := ReadLatestCommit(w.dir)
	if err != nil {
		return nil, err
	}
	if si != nil {
		if err := w.loadCommit(si); err != nil {
			return nil, err
		}
	} else if err := deleteUnreferenced(w.dir, w.log, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// checkout hands the calling goroutine a DWPT for one operation, which
// checkin returns: the free one last used with ctx's affinity, else the
// last one checked in. It waits while a refresh swaps buffers or while
// flushing is far behind (flushControl).
func (w *IndexWriter) checkout(ctx context.Context) (*perThread, error) {
	if err := w.flushControl.obtain(ctx); err != nil {
		return nil, err
	}
	pt := w.perThreadPool.getAndLock(affinityOf(ctx))
	if pt.delCursor == nil { // new: deletes queued from now on apply to it
		w.mu.Lock()
		pt.delCursor = w.delTail
		w.mu.Unlock()
	}
	return pt, nil
}

// opKind is what an operation does besides adding its document.
type opKind uint8

const (
	opAdd    opKind = iota // append only
	opUpdate               // delete by id, then add
	opDelete               // delete by id only
	opCreate               // add only if no live doc has the id
)

// ErrDocumentExists is returned by Create when a live document with the id
// exists (Elasticsearch's version conflict for op_type=create).
var ErrDocumentExists = errors.New("engine: document already exists")

// OpOptions qualify one operation.
type OpOptions struct {
	// PrimaryTerm is recorded with the document (_primary_term) and in
	// the version map, as the term that wrote it.
	PrimaryTerm int64
	// If, when set, makes the operation conditional (Elasticsearch's
	// if_seq_no / if_primary_term): it applies only if a live document
	// with the id exists and its latest operation has exactly this
	// sequence number and primary term; otherwise it fails with a
	// *VersionConflictError and takes no sequence number.
	If *DocVersion
}

// Add indexes doc without deleting older docs with the same _id (append
// only, as for ids known to be new). It returns the operation's sequence
// number.
func (w *IndexWriter) Add(ctx context.Context, doc *document.Document) (int64, error) {
	seq, _, err := w.addDocument(ctx, opAdd, doc, OpOptions{})
	return seq, err
}

// Update atomically replaces the docs whose _id is id with doc (doc.ID must
// equal id): no refresh ever sees both or neither. created reports that no
// live doc with the id existed before.
func (w *IndexWriter) Update(ctx context.Context, id []byte, doc *document.Document) (seq int64, created bool, err error) {
	return w.UpdateWith(ctx, id, doc, OpOptions{})
}

// UpdateWith is Update with options: the primary term to record, and a
// precondition on the id's current version.
func (w *IndexWriter) UpdateWith(ctx context.Context, id []byte, doc *document.Document, o OpOptions) (seq int64, created bool, err error) {
	if string(doc.ID) != string(id) {
		return 0, false, fmt.Errorf("%w: document _id %q does not match %q", dwpt.ErrInvalidDocument, doc.ID, id)
	}
	return w.addDocument(ctx, opUpdate, doc, o)
}

// Create adds doc only if no live doc with its _id exists, atomically with
// respect to every other operation; otherwise it returns ErrDocumentExists
// and the operation takes no sequence number.
func (w *IndexWriter) Create(ctx context.Context, doc *document.Document) (int64, error) {
	return w.CreateWith(ctx, doc, OpOptions{})
}

// CreateWith is Create recording o.PrimaryTerm (o.If is not allowed: a
// create has no version to compare with).
func (w *IndexWriter) CreateWith(ctx context.Context, doc *document.Document, o OpOptions) (int64, error) {
	if o.If != nil {
		return 0, errors.New("engine: a create cannot be conditional on a version")
	}
	seq, _, err := w.addDocument(ctx, opCreate, doc, o)
	return seq, err
}

func (w *IndexWriter) addDocument(ctx context.Context, kind opKind, doc *document.Document, o OpOptions) (int64, bool, error) {
	for {
		pt, err := w.checkout(ctx)
		if err != nil {
			return 0, false, err
		}
		docID, err := pt.dwpt.AddDocument(doc)
		if errors.Is(err, dwpt.ErrFull) && pt.dwpt.NumDocs() > 0 {
			w.checkin(ctx, pt, true)
			continue
		}
		if err != nil {
			w.checkin(ctx, pt, false)
			return 0, false, err
		}
		seq, existed, err := w.sequence(ctx, pt, kind, doc.ID, docID, o)
		if err != nil {
			return 0, false, err
		}
		return seq, !existed, nil
	}
}

// Delete deletes the docs whose _id is id. found reports that a live doc
// with the id existed.
func (w *IndexWriter) Delete(ctx context.Context, id []byte) (seq int64, found bool, err error) {
	return w.DeleteWith(ctx, id, OpOptions{})
}

// DeleteWith is Delete with options (see UpdateWith).
func (w *IndexWriter) DeleteWith(ctx context.Context, id []byte, o OpOptions) (seq int64, found bool, err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, false, ErrClosed
	}
	w.mu.Unlock()
	return w.sequence(ctx, nil, opDelete, id, 0, o)
}

// sequence is the one critical section of every operation: it gives the
// operation its sequence number, appends its delete to the queue, brings
// the DWPT's own deletes up to date and records the id in the version map.
// Doing all of it under one lock is what makes the order of sequence
// numbers the order in which deletes take effect — and what makes a
// conditional operation's check and write atomic. The DWPT is then
// checked back in.
func (w *IndexWriter) sequence(ctx context.Context, pt *perThread, kind opKind, id []byte, docID int, o OpOptions) (seq int64, existed bool, err error) {
	// The existence check against the last published reader is done
	// before taking the lock; it is valid if the reader is still current
	// when we hold the lock, and redone otherwise (rare: a refresh
	// published in between).
	var r *Reader
	var inReader bool
	var readerVersion DocVersion
	for {
		if kind != opAdd {
			r, inReader, readerVersion = w.lookupPublished(id, o.If != nil)
		}
		w.mu.Lock()
		if kind == opAdd || w.versions.has(id) || w.current.Load() == r {
			break
		}
		w.mu.Unlock()
	}
	if pt == nil && w.closed {
		w.mu.Unlock()
		return 0, false, ErrClosed
	}
	var current DocVersion
	if kind != opAdd {
		if e, ok := w.versions.get(id); ok {
			existed, current = !e.deleted, DocVersion{SeqNo: e.seq, PrimaryTerm: e.term}
		} else {
			existed, current = inReader, readerVersion
		}
	}
	var refuse error
	switch {
	case kind == opCreate && existed:
		refuse = fmt.Errorf("%w: [%s]", ErrDocumentExists, id)
	case o.If != nil:
		refuse = checkVersion(id, *o.If, existed, current)
	}
	if refuse != nil {
		if pt != nil {
			// The document is already inverted: mark it deleted, bring
			// the DWPT's deletes up to date and check it in; no sequence
			// number.
			pt.dwpt.DeleteDoc(docID)
			w.applyQueuedLocked(pt, w.delTail, docID)
		}
		w.mu.Unlock()
		if pt != nil {
			w.checkin(ctx, pt, false)
		}
		return 0, existed, refuse
	}
	w.seqNo++
	seq = w.seqNo
	tail := w.delTail
	if (kind == opUpdate || kind == opDelete) && existed {
		// Deleting (or updating) an id no live doc has needs no node:
		// the version map and the reader cover every doc, buffered or
		// flushed, so nothing older can match it.
		n := &delNode{seq: seq, id: append([]byte(nil), id...)}
		w.delTail.next.Store(n)
		w.delTail = n
		w.deleteBytes += int64(len(id)) + delNodeOverhead
	}
	w.versions.putEntry(id, versionEntry{seq: seq, term: o.PrimaryTerm, deleted: kind == opDelete})
	w.bufferedBytes.Store(w.versions.bytes + w.deleteBytes)
	if pt == nil {
		w.mu.Unlock()
		return seq, existed, nil
	}
	pt.dwpt.SetSeqNo(docID, seq, o.PrimaryTerm)
	w.applyQueuedLocked(pt, tail, docID)
	if w.delTail != tail { // our own update's node
		pt.dwpt.DeleteID(id, docID)
		pt.delCursor = w.delTail
	}
	w.mu.Unlock()
	w.checkin(ctx, pt, false)
	return seq, existed, nil
}

// applyQueuedLocked applies deletes queued since pt's last operation, up
// to tail, to its docs before docID: they happened after those docs were
// added and before this one.
func (w *IndexWriter) applyQueuedLocked(pt *perThread, tail *delNode, docID int) {
	if docID == 0 {
		pt.delCursor = tail // no older docs to delete
	}
	for pt.delCursor != tail {
		next := pt.delCursor.next.Load()
		if next.dv == nil { // doc-values updates never target buffered docs
			pt.dwpt.DeleteID(next.id, docID)
		}
		pt.delCursor = next
	}
}

// ErrDocumentMissing is returned by UpdateDocValues when no live document
// has the id (Elasticsearch's document_missing_exception).
var ErrDocumentMissing = errors.New("engine: document missing")

// errIDBuffered: the id was written since the last refresh, so its live
// doc, if any, is in a DWPT, which in-place updates do not reach; the
// caller refreshes and retries.
var errIDBuffered = errors.New("engine: id written since the last refresh")

// UpdateDocValues sets numeric doc-value fields of the live doc with id in
// place (Lucene's updateDocValues): the update takes a sequence number and
// joins the delete queue, and the next refresh that applies deletes
// layers it over the doc's segment (dvupdates.go) — with the doc's
// _seq_no and _primary_term, which it changes like any write. No document
// is re-analysed. It fails with ErrDocumentMissing, taking no sequence
// number, when no live doc has the id, with a *VersionConflictError when
// o.If does not match, and with errIDBuffered when the id was written
// since the last refresh. dv is retained (the caller hands it over).
func (w *IndexWriter) UpdateDocValues(ctx context.Context, id []byte, dv []mapping.DocValueUpdate, o OpOptions) (int64, error) {
	var inReader bool
	var readerVersion DocVersion
	for {
		var r *Reader
		r, inReader, readerVersion = w.lookupPublished(id, o.If != nil)
		w.mu.Lock()
		if w.current.Load() == r {
			break
		}
		w.mu.Unlock()
	}
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	existed, current := inReader, readerVersion
	e, inMap := w.versions.get(id)
	if inMap {
		existed, current = !e.deleted, DocVersion{SeqNo: e.seq, PrimaryTerm: e.term}
	}
	if o.If != nil {
		if err := checkVersion(id, *o.If, existed, current); err != nil {
			return 0, err
		}
	}
	if inMap && e.seq > w.refreshed.Load() && !e.inPlace {
		return 0, errIDBuffered
	}
	if !existed {
		return 0, fmt.Errorf("%w: [%s]", ErrDocumentMissing, id)
	}
	w.seqNo++
	// In the version map, so that a realtime read of current values (a
	// partial update's) refreshes for it.
	w.versions.putEntry(id, versionEntry{seq: w.seqNo, term: o.PrimaryTerm, inPlace: true})
	n := &delNode{seq: w.seqNo, id: slices.Clone(id), dv: dv, term: o.PrimaryTerm}
	w.delTail.next.Store(n)
	w.delTail = n
	w.deleteBytes += int64(len(id)) + delNodeOverhead + int64(len(dv))*dvUpdateOverhead
	w.bufferedBytes.Store(w.versions.bytes + w.deleteBytes)
	return n.seq, nil
}

// dvUpdateOverhead is one field of a queued doc-values update.
const dvUpdateOverhead = 40

// delNodeOverhead is a delNode's size besides its id bytes.
const delNodeOverhead = 48

// pendingSeq returns the sequence number of the latest operation on id if
// it is not yet visible.
func (w *IndexWriter) pendingSeq(id []byte) (int64, bool) {
	w.mu.Lock()
	e, ok := w.versions.get(id)
	w.mu.Unlock()
	if !ok || e.seq <= w.refreshed.Load() {
		return 0, false
	}
	return e.seq, true
}

// lookupPublished reports whether a live doc with id is in the current
// reader, and which reader answered; with version, also the doc's
// sequence number and primary term there.
func (w *IndexWriter) lookupPublished(id []byte, version bool) (*Reader, bool, DocVersion) {
	for {
		r := w.current.Load()
		if !r.tryIncRef() {
			continue // replaced and closed concurrently; load the new one
		}
		leaf, doc, ok := r.LookupID(id)
		var v DocVersion
		if ok && version {
			v = r.DocVersion(leaf, doc)
		}
		r.Release()
		return r, ok, v
	}
}

// checkin returns pt after an operation (Lucene's
// DocumentsWriter.postUpdate), marking it for flushing if forceFlush: the
// flushControl may hand back a DWPT to flush, pt or another, which this
// goroutine writes.
// The indexing goroutine that produced a segment then waits if merges
// fall too far behind (merge backpressure).
func (w *IndexWriter) checkin(ctx context.Context, pt *perThread, forceFlush bool) {
	flush := w.flushControl.doAfterDocument(pt, forceFlush)
	if flush == nil {
		return
	}
	w.flushOne(ctx, flush)
	if ms := w.opts.MergeScheduler; ms != nil && w.mergingEnabled() {
		if err := ms.MaybeStall(w.closeCtx); err != nil && !w.isClosed() && !errors.Is(err, mergescheduler.ErrClosed) {
			w.log.Warn("engine: merge stall", "err", err)
		}
	}
}

// flushOne writes pt's DWPT as a segment (no fsync) and queues it for the
// next refresh. Called by the goroutine that took pt for flushing
// (flushControl).
func (w *IndexWriter) flushOne(ctx context.Context, pt *perThread) {
	// Never abort a flush because one caller gave up: a failed flush fails
	// the writer (see Refresh).
	seg, err := w.writeSegment(context.WithoutCancel(ctx), pt)
	w.flushControl.doAfterFlush(pt, seg, err)
}

// newSegmentInfo names a new segment (Lucene's "_" + base-36 counter) and
// gives it a random ID.
func (w *IndexWriter) newSegmentInfo(maxDoc int, source string, start time.Time) (*index.SegmentInfo, error) {
	info := &index.SegmentInfo{Name: w.segments.nextName(), MaxDoc: maxDoc, Codec: w.codec.Name(),
		Diagnostics: map[string]string{"source": source, "timestamp": start.UTC().Format(time.RFC3339Nano)}}
	if _, err := rand.Read(info.ID[:]); err != nil {
		return nil, fmt.Errorf("engine: segment id: %w", err)
	}
	return info, nil
}

// writeSegment flushes one DWPT through the codec and opens the result.
func (w *IndexWriter) writeSegment(ctx context.Context, pt *perThread) (*segState, error) {
	start := time.Now()
	d := pt.dwpt
	defer d.Release()
	info, err := w.newSegmentInfo(d.NumDocs(), "flush", start)
	if err != nil {
		return nil, err
	}
	name := info.Name
	ioctx := store.IOContext{Kind: store.IOFlush, EstimatedSize: pt.ram}
	if err := w.codec.WriteSegment(ctx, w.dir, info, d, ioctx); err != nil {
		return nil, fmt.Errorf("engine: flush segment %s: %w", name, err)
	}
	r, err := w.codec.OpenSegment(w.dir, info)
	if err != nil {
		return nil, fmt.Errorf("engine: open flushed segment %s: %w", name, err)
	}
	seg := newSegState(info, r, w.fd, w.dir)
	seg.live = d.LiveDocs()
	seg.delCount = d.DelCount()
	seg.delCursor = pt.delCursor
	w.stats.flushes.Add(1)
	w.stats.flushedBytes.Add(pt.ram)
	w.stats.flushNanos.Add(int64(time.Since(start)))
	return seg, nil
}

func (w *IndexWriter) isClosed() bool { return w.closedFlag.Load() }

// Acquire returns the current point-in-time reader with a reference the
// caller must Release.
func (w *IndexWriter) Acquire() *Reader {
	for {
		r := w.current.Load()
		if r.tryIncRef() {
			return r
		}
	}
}

// AdvanceSeqNo makes the next operation's sequence number at least seq.
// Translog replay calls it before re-applying each recorded operation, so
// replayed operations keep their original numbers even across gaps (an
// operation that got a number but never reached the translog).
func (w *IndexWriter) AdvanceSeqNo(seq int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seqNo < seq-1 {
		w.seqNo = seq - 1
	}
}

// resetSeqNo makes the next operation's sequence number from+1: at open,
// before a replay that starts below the loaded commit's seqNo.
func (w *IndexWriter) resetSeqNo(from int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seqNo = from
}

// MaxSeqNo is the sequence number of the latest completed operation.
func (w *IndexWriter) MaxSeqNo() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seqNo
}

// RAMBytesUsed is the memory of buffered documents (active and flushing
// DWPTs).
func (w *IndexWriter) RAMBytesUsed() int64 { return w.flushControl.ramBytesUsed() }

// onTragicEvent fails the writer for writes (a translog that cannot be
// written, a damaged file), unless it failed already.
func (w *IndexWriter) onTragicEvent(err error) { w.flushControl.onTragicEvent(err) }
