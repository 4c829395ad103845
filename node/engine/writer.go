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
}

// perThread is a DWPT with the writer's bookkeeping. At most one goroutine
// uses it at a time (checked out from the free list), as in Lucene's
// DocumentsWriterPerThreadPool; it is not tied to any goroutine, but a
// worker with an affinity (WithAffinity) gets the one it used last back
// when it is free.
type perThread struct {
	dwpt         *dwpt.DWPT
	delCursor    *delNode // last buffered delete applied to the DWPT
	lastSeq      int64
	ram          int64 // bytes last accounted in activeBytes/flushBytes
	numDocs      int   // docs as of the last check-in (readable under mu)
	flushGen     int64 // refresh generation when taken for flushing
	checkedOut   bool
	flushPending bool
	affinity     uint64 // the affinity of its last checkout (WithAffinity); 0 none
}

// IndexWriter buffers documents in DWPTs, flushes them as segments, applies
// deletes by id, and publishes point-in-time Readers at refresh. Add, Update
// and Delete are safe to call from many goroutines; see the package doc for
// the write and refresh paths.
type IndexWriter struct {
	dir   store.Directory
	codec index.Codec
	opts  WriterOptions
	fd    *fileDeleter
	alloc *dwpt.Allocator
	log   *slog.Logger

	mu       sync.Mutex
	cond     *sync.Cond // inFlight, stalls, flush completions
	seqNo    int64
	delTail  *delNode
	free     []*perThread            // idle DWPTs (may be empty ones)
	threads  map[*perThread]struct{} // DWPTs not yet taken for flushing
	pending  []*perThread            // flush-pending DWPTs nobody holds
	inFlight int
	swapping bool // a refresh waits for in-flight ops to drain
	closed   bool
	tragedy  error

	activeBytes int64 // RAM of DWPTs not pending or flushing
	flushBytes  int64 // RAM of DWPTs pending or flushing
	flushGen    int64 // incremented at each refresh swap
	flushing    map[int64]int
	flushed     []*segState // flushed since the last refresh
	deleteBytes int64       // queued delete nodes since the last refresh
	segCounter  int64
	versions    versionMap

	// refreshMu serialises refreshes and merge commits, and guards
	// segState writer fields, segs and merging.
	refreshMu sync.Mutex
	segs      []*segState // the index's segments as of the last refresh
	segsDirty bool        // a merge changed segs since the last refresh
	merging   map[*segState]bool
	// AddIndexes: segments waiting for the next refresh to publish them,
	// with their markers; markers published (or loaded from the last
	// commit), which every commit records.
	pendingAdds    []*segState
	pendingMarkers map[string]string
	addMarkers     map[string]string
	mergesRunning  sync.WaitGroup
	closeCtx       context.Context // cancelled by Close: aborts merges
	closeCancel    context.CancelFunc
	closedFlag     atomic.Bool
	yield          mergeYield     // merges pause while a refresh runs
	releasing      sync.WaitGroup // replaced readers being released
	current        atomic.Pointer[Reader]
	version        int64

	// bufferedBytes approximates the version map and queued deletes, which
	// only a refresh releases.
	bufferedBytes atomic.Int64

	commitMu sync.Mutex
	commit   commitState

	refreshed   atomic.Int64 // highest seqNo visible in the current reader
	refreshedCh chan struct{}

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
		fd:       newFileDeleter(opts.Directory),
		alloc:    dwpt.NewAllocator(opts.RAMBufferBytes / 4),
		delTail:  &delNode{},
		flushing: make(map[int64]int),
		versions: newVersionMap(),
		merging:  make(map[*segState]bool),
		threads:  make(map[*perThread]struct{}),
	}
	w.closeCtx, w.closeCancel = context.WithCancel(context.Background())
	w.cond = sync.NewCond(&w.mu)
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
	} else if err := w.deleteUnreferenced(nil); err != nil {
		return nil, err
	}
	return w, nil
}

// checkout hands the calling goroutine a DWPT for one operation: the free
// one last used with ctx's affinity, else the last one checked in. It waits
// while a refresh swaps buffers or while flushing is far behind (stall
// control); a stalled goroutine helps by flushing a pending DWPT.
func (w *IndexWriter) checkout(ctx context.Context) (*perThread, error) {
	w.mu.Lock()
	var stallStart time.Time
	for {
		if w.closed {
			w.mu.Unlock()
			return nil, ErrClosed
		}
		if w.tragedy != nil {
			err := w.tragedy
			w.mu.Unlock()
			return nil, fmt.Errorf("engine: writer failed earlier: %w", err)
		}
		if w.swapping {
			w.cond.Wait()
			continue
		}
		if w.stalledLocked() {
			if stallStart.IsZero() {
				stallStart = time.Now()
				w.stats.stalls.Add(1)
			}
			if pt := w.takePendingLocked(); pt != nil {
				w.mu.Unlock()
				w.flushOne(ctx, pt)
				w.mu.Lock()
				continue
			}
			w.cond.Wait()
			continue
		}
		break
	}
	if !stallStart.IsZero() {
		w.stats.stallNanos.Add(int64(time.Since(stallStart)))
	}
	var pt *perThread
	aff, _ := ctx.Value(affinityKey{}).(uint64)
	i := len(w.free) - 1
	if aff != 0 { // a handful of free DWPTs at most: one per concurrent worker
		for j := i; j >= 0; j-- {
			if w.free[j].affinity == aff {
				i = j
				break
			}
		}
	}
	if i >= 0 {
		pt = w.free[i]
		w.free = slices.Delete(w.free, i, i+1)
		pt.affinity = aff
	} else {
		pt = &perThread{dwpt: dwpt.New(w.alloc), delCursor: w.delTail, affinity: aff}
		w.threads[pt] = struct{}{}
	}
	pt.checkedOut = true
	w.inFlight++
	w.mu.Unlock()
	return pt, nil
}

// stalledLocked: indexing waits when DWPTs waiting to be flushed or being
// flushed hold more than twice the budget (Lucene's
// DocumentsWriterStallControl), i.e. flushing cannot keep up.
func (w *IndexWriter) stalledLocked() bool { return w.flushBytes > 2*w.opts.RAMBufferBytes }

func (w *IndexWriter) takePendingLocked() *perThread {
	n := len(w.pending)
	if n == 0 {
		return nil
	}
	pt := w.pending[n-1]
	w.pending = w.pending[:n-1]
	w.startFlushLocked(pt)
	return pt
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

// Add indexes doc without deleting older docs with the same _id (append
// only, as for ids known to be new). It returns the operation's sequence
// number.
func (w *IndexWriter) Add(ctx context.Context, doc *document.Document) (int64, error) {
	seq, _, err := w.addDocument(ctx, opAdd, doc)
	return seq, err
}

// Update atomically replaces the docs whose _id is id with doc (doc.ID must
// equal id): no refresh ever sees both or neither. created reports that no
// live doc with the id existed before.
func (w *IndexWriter) Update(ctx context.Context, id []byte, doc *document.Document) (seq int64, created bool, err error) {
	if string(doc.ID) != string(id) {
		return 0, false, fmt.Errorf("%w: document _id %q does not match %q", dwpt.ErrInvalidDocument, doc.ID, id)
	}
	return w.addDocument(ctx, opUpdate, doc)
}

// Create adds doc only if no live doc with its _id exists, atomically with
// respect to every other operation; otherwise it returns ErrDocumentExists
// and the operation takes no sequence number.
func (w *IndexWriter) Create(ctx context.Context, doc *document.Document) (int64, error) {
	seq, _, err := w.addDocument(ctx, opCreate, doc)
	return seq, err
}

func (w *IndexWriter) addDocument(ctx context.Context, kind opKind, doc *document.Document) (int64, bool, error) {
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
		seq, existed, err := w.sequence(pt, kind, doc.ID, docID)
		if err != nil {
			return 0, false, err
		}
		return seq, !existed, nil
	}
}

// Delete deletes the docs whose _id is id. found reports that a live doc
// with the id existed.
func (w *IndexWriter) Delete(ctx context.Context, id []byte) (seq int64, found bool, err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, false, ErrClosed
	}
	w.mu.Unlock()
	return w.sequence(nil, opDelete, id, 0)
}

// sequence is the one critical section of every operation: it gives the
// operation its sequence number, appends its delete to the queue, brings
// the DWPT's own deletes up to date, records the id in the version map, and
// checks the DWPT back in. Doing all of it under one lock is what makes the
// order of sequence numbers the order in which deletes take effect.
func (w *IndexWriter) sequence(pt *perThread, kind opKind, id []byte, docID int) (seq int64, existed bool, err error) {
	// The existence check against the last published reader is done
	// before taking the lock; it is valid if the reader is still current
	// when we hold the lock, and redone otherwise (rare: a refresh
	// published in between).
	var r *Reader
	var inReader bool
	for {
		if kind != opAdd {
			r, inReader = w.lookupPublished(id)
		}
		w.mu.Lock()
		if kind == opAdd || w.versions.has(id) || w.current.Load() == r {
			break
		}
		w.mu.Unlock()
	}
	defer w.mu.Unlock()
	if pt == nil && w.closed {
		return 0, false, ErrClosed
	}
	if kind != opAdd {
		if e, ok := w.versions.get(id); ok {
			existed = !e.deleted
		} else {
			existed = inReader
		}
	}
	if kind == opCreate && existed {
		// The document is already inverted: mark it deleted, bring the
		// DWPT's deletes up to date and check it in; no sequence number.
		pt.dwpt.DeleteDoc(docID)
		w.applyQueuedLocked(pt, w.delTail, docID)
		w.checkinLocked(pt, false)
		return 0, true, fmt.Errorf("%w: [%s]", ErrDocumentExists, id)
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
	w.versions.put(id, seq, kind == opDelete)
	w.bufferedBytes.Store(w.versions.bytes + w.deleteBytes)
	if pt == nil {
		return seq, existed, nil
	}
	w.applyQueuedLocked(pt, tail, docID)
	if w.delTail != tail { // our own update's node
		pt.dwpt.DeleteID(id, docID)
		pt.delCursor = w.delTail
	}
	pt.lastSeq = seq
	w.checkinLocked(pt, false)
	flush := w.pickFlushLocked(pt)
	if flush != nil {
		w.mu.Unlock()
		w.flushOne(context.Background(), flush)
		// The indexing goroutine that produced a segment waits here if
		// merges fall too far behind (merge backpressure).
		if ms := w.opts.MergeScheduler; ms != nil && w.mergingEnabled() {
			if err := ms.MaybeStall(w.closeCtx); err != nil && !w.isClosed() && !errors.Is(err, mergescheduler.ErrClosed) {
				w.log.Warn("engine: merge stall", "err", err)
			}
		}
		w.mu.Lock()
	}
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
		pt.dwpt.DeleteID(next.id, docID)
		pt.delCursor = next
	}
}

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
// reader, and which reader answered.
func (w *IndexWriter) lookupPublished(id []byte) (*Reader, bool) {
	for {
		r := w.current.Load()
		if !r.tryIncRef() {
			continue // replaced and closed concurrently; load the new one
		}
		_, _, ok := r.LookupID(id)
		r.Release()
		return r, ok
	}
}

// checkin returns pt after an operation that got no sequence number (a
// rejected document), flushing it if forceFlush.
func (w *IndexWriter) checkin(ctx context.Context, pt *perThread, forceFlush bool) {
	w.mu.Lock()
	w.checkinLocked(pt, forceFlush)
	flush := w.pickFlushLocked(pt)
	w.mu.Unlock()
	if flush != nil {
		w.flushOne(ctx, flush)
	}
}

// checkinLocked accounts pt's RAM, applies the flush policy and returns pt
// to the free list unless it is to be flushed.
func (w *IndexWriter) checkinLocked(pt *perThread, forceFlush bool) {
	ram := pt.dwpt.RAMBytesUsed()
	if pt.flushPending {
		w.flushBytes += ram - pt.ram
	} else {
		w.activeBytes += ram - pt.ram
	}
	pt.ram = ram
	pt.numDocs = pt.dwpt.NumDocs()
	pt.checkedOut = false
	w.inFlight--
	if forceFlush && !pt.flushPending {
		w.markPendingLocked(pt)
	}
	// FlushByRamOrCountsPolicy: over budget, the largest DWPT not already
	// pending is marked; if another goroutine holds it, that goroutine
	// flushes it when it checks it in. DWPTs nearly as large are marked
	// with it: goroutines indexing at the same rate fill theirs together,
	// and flushing only the largest staggers them, so that at a commit one
	// DWPT holds most of the buffer and its single-threaded flush is a
	// serial tail (2 goroutines: 1.9 s of flush on one core while the
	// other idled). Flushed together, they restart together and stay even.
	if w.activeBytes > w.opts.RAMBufferBytes {
		var largest *perThread
		for c := range w.threads {
			if !c.flushPending && c.numDocs > 0 && (largest == nil || c.ram > largest.ram) {
				largest = c
			}
		}
		if largest != nil {
			w.markPendingLocked(largest)
			for c := range w.threads {
				if !c.flushPending && c.numDocs > 0 && c.ram*4 >= largest.ram*3 {
					w.markPendingLocked(c)
				}
			}
		}
	}
	if !pt.flushPending {
		w.free = append(w.free, pt)
	} else {
		w.pending = append(w.pending, pt)
	}
	if w.inFlight == 0 || pt.flushPending {
		w.cond.Broadcast()
	}
}

func (w *IndexWriter) markPendingLocked(pt *perThread) {
	if pt.flushPending || pt.numDocs == 0 {
		return
	}
	pt.flushPending = true
	w.activeBytes -= pt.ram
	w.flushBytes += pt.ram
	for i, c := range w.free {
		if c == pt {
			w.free = append(w.free[:i], w.free[i+1:]...)
			w.pending = append(w.pending, pt)
			break
		}
	}
}

// pickFlushLocked returns a pending DWPT for the calling goroutine to flush:
// its own if it became pending, else any other nobody holds (helping).
func (w *IndexWriter) pickFlushLocked(own *perThread) *perThread {
	if own != nil && own.flushPending {
		for i, c := range w.pending {
			if c == own {
				w.pending = append(w.pending[:i], w.pending[i+1:]...)
				w.startFlushLocked(own)
				return own
			}
		}
	}
	return w.takePendingLocked()
}

// startFlushLocked records that pt is being flushed within the current
// refresh generation, so the next refresh waits for it.
func (w *IndexWriter) startFlushLocked(pt *perThread) {
	delete(w.threads, pt)
	pt.flushGen = w.flushGen
	w.flushing[pt.flushGen]++
}

// flushOne writes pt's DWPT as a segment (no fsync) and queues it for the
// next refresh. Called by the goroutine that took pt for flushing
// (startFlushLocked).
func (w *IndexWriter) flushOne(ctx context.Context, pt *perThread) {
	// Never abort a flush because one caller gave up: a failed flush fails
	// the writer (see Refresh).
	seg, err := w.writeSegment(context.WithoutCancel(ctx), pt)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushBytes -= pt.ram
	gen := pt.flushGen
	if w.flushing[gen]--; w.flushing[gen] == 0 {
		delete(w.flushing, gen)
	}
	if err != nil {
		w.tragedy = err
		w.log.Error("engine: flush failed; writer closed for writes", "err", err)
	} else {
		seg.flushGen = gen
		w.flushed = append(w.flushed, seg)
	}
	w.cond.Broadcast()
}

// newSegmentInfo names a new segment (Lucene's "_" + base-36 counter) and
// gives it a random ID.
func (w *IndexWriter) newSegmentInfo(maxDoc int, source string, start time.Time) (*index.SegmentInfo, error) {
	w.mu.Lock()
	w.segCounter++
	name := segmentName(w.segCounter)
	w.mu.Unlock()
	info := &index.SegmentInfo{Name: name, MaxDoc: maxDoc, Codec: w.codec.Name(),
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

// MaxSeqNo is the sequence number of the latest completed operation.
func (w *IndexWriter) MaxSeqNo() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seqNo
}

// RAMBytesUsed is the memory of buffered documents (active and flushing
// DWPTs).
func (w *IndexWriter) RAMBytesUsed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.activeBytes + w.flushBytes
}

type affinityKey struct{}

var affinities atomic.Uint64

// WithAffinity returns ctx carrying a new writer affinity: the operations
// of one worker (a goroutine indexing documents one after another, such as
// one bulk request's items on a shard) keep filling the DWPT it used last,
// as Lucene's thread affinity did, instead of whichever DWPT was checked in
// last. A DWPT's term hash and postings then stay in one core's cache:
// handed between two goroutines, they moved between cores with nearly
// every document, and two goroutines spent 19 % more CPU than one on the
// same documents (docs/benchmarks.md section 1).
func WithAffinity(ctx context.Context) context.Context {
	return context.WithValue(ctx, affinityKey{}, affinities.Add(1))
}
