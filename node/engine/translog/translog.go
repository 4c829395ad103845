package translog

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Durability says when an operation is fsynced.
type Durability uint8

const (
	// Request: Add returns after its operation is fsynced. Concurrent
	// callers share fsyncs (group commit). Elasticsearch's default.
	Request Durability = iota
	// Async: operations are fsynced every SyncInterval; a crash loses at
	// most that much.
	Async
)

func (d Durability) String() string {
	if d == Async {
		return "async"
	}
	return "request"
}

// ParseDurability reads the index.translog.durability setting.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "request", "REQUEST":
		return Request, nil
	case "async", "ASYNC":
		return Async, nil
	}
	return 0, fmt.Errorf("translog: unknown durability %q (want request or async)", s)
}

// Options configure a Translog. The zero value is usable (SetDefaults).
type Options struct {
	Durability Durability
	// SyncInterval is the Async fsync period (default 5s).
	SyncInterval time.Duration
	// GenerationSize is the size at which Add rolls to a new generation
	// (default 64 MB, Elasticsearch's generation_threshold_size).
	GenerationSize int64
	Logger         *slog.Logger
}

// SetDefaults fills unset options.
func (o *Options) SetDefaults() {
	if o.SyncInterval <= 0 {
		o.SyncInterval = 5 * time.Second
	}
	if o.GenerationSize <= 0 {
		o.GenerationSize = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Location is where an operation was written.
type Location struct {
	Generation uint64
	Offset     int64 // of the record in its generation file
	Size       int64 // of the record
}

// ErrClosed is returned by operations on a closed Translog.
var ErrClosed = errors.New("translog closed")

// writeBufferSize is how much encoded data Add buffers before writing it to
// the file; a sync writes whatever is buffered.
const writeBufferSize = 64 << 10

// Translog is a write-ahead log of operations in numbered generation files,
// safe for concurrent use. See the package documentation.
type Translog struct {
	dir  string
	opts Options
	log  *slog.Logger
	uuid UUID

	// syncSem admits one sync (fsync, then checkpoint), roll or trim at a
	// time; callers waiting on it form the next group commit. Lock order:
	// syncSem, then mu.
	syncSem chan struct{}
	ckpf    ckpFile // written under syncSem

	mu      sync.Mutex
	file    *os.File    // current generation, opened for append
	cur     genInfo     // current generation; size counts buffered bytes
	written int64       // bytes of the current generation handed to the OS
	buf     []byte      // encoded records not yet written
	old     []genInfo   // retained older generations, oldest first
	trims   []trimPoint // trim records of the retained generations, in order
	// committedBelow: operations below it are in a commit (MarkCommitted);
	// with TrimmedBelow, where Stats' uncommitted counts start.
	committedBelow uint64
	ckp            Checkpoint
	// dataSynced is the fsynced prefix of the current generation; synced
	// what the last durable checkpoint covers. An operation is durable
	// (SyncTo returns) once synced covers it.
	dataSynced syncPoint
	synced     Location
	closed     bool
	failed     error // a write or fsync failed: the file state is unknown

	fsyncs    atomic.Int64
	truncated int64 // torn tail bytes dropped by Open
	interval  chan time.Duration
	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{}
}

// syncPoint is a fsynced prefix of a generation and what it holds.
type syncPoint struct {
	gen            uint64
	offset, ops    int64
	minSeq, maxSeq uint64
}

// covers reports whether the operation at loc lies within
// (gen, offset).
func covers(gen uint64, offset int64, loc Location) bool {
	return loc.Generation < gen || loc.Generation == gen && loc.Offset+loc.Size <= offset
}

// Open opens the translog in dir, creating it if dir has none, and recovers
// it: a torn tail past the last checkpoint is truncated (and logged), while
// damage to what a checkpoint recorded as synced fails with an error
// wrapping ErrCorrupt that names the file and offset.
func Open(ctx context.Context, dir string, opts Options) (*Translog, error) {
	opts.SetDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("translog: %w", err)
	}
	t := &Translog{dir: dir, opts: opts, log: opts.Logger.With("translog", dir),
		syncSem: make(chan struct{}, 1), ckpf: ckpFile{dir: dir}}
	if err := t.openOrCreate(ctx); err != nil {
		t.ckpf.close()
		if t.file != nil {
			t.file.Close()
		}
		return nil, err
	}
	if opts.Durability == Async {
		t.stop, t.done, t.interval = make(chan struct{}), make(chan struct{}), make(chan time.Duration)
		go t.syncLoop()
	}
	return t, nil
}

func (t *Translog) openOrCreate(ctx context.Context) error {
	gens, err := listGenerations(t.dir)
	if err != nil {
		return err
	}
	ckp, err := readCheckpoint(t.dir)
	switch {
	case err == nil:
		return t.recover(ctx, ckp, gens)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	// No checkpoint: a new translog, or one whose creation crashed after
	// writing the first file's header (no operation can have been added).
	if len(gens) > 1 || len(gens) == 1 && fileSize(filepath.Join(t.dir, genFileName(gens[0]))) > fileHeaderSize {
		return fmt.Errorf("%w: %s: generation files without a checkpoint", ErrCorrupt, t.dir)
	}
	for _, g := range gens {
		if err := os.Remove(filepath.Join(t.dir, genFileName(g))); err != nil {
			return fmt.Errorf("translog: %w", err)
		}
	}
	if _, err := rand.Read(t.uuid[:]); err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	t.ckp = Checkpoint{UUID: t.uuid, MinGeneration: 1}
	return t.startGeneration(1, 0, 0)
}

// startGeneration creates generation gen's file (its predecessor ended at
// prevSize bytes with prevOps records), makes it current and writes the
// checkpoint. The caller holds syncSem and mu (or has exclusive access).
func (t *Translog) startGeneration(gen uint64, prevSize, prevOps int64) error {
	name := filepath.Join(t.dir, genFileName(gen))
	header, crc := fileHeader(gen, t.uuid, prevSize, prevOps)
	if err := writeFileSync(name, header); err != nil {
		return err
	}
	if err := syncDir(t.dir); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	if t.file != nil {
		t.file.Close()
	}
	t.file, t.cur, t.written = f, emptyGen(gen, fileHeaderSize, crc), fileHeaderSize
	t.dataSynced = t.pointLocked()
	return t.writeCheckpointLocked()
}

// pointLocked describes the current generation up to what was written;
// after flushLocked that is every record added.
func (t *Translog) pointLocked() syncPoint {
	return syncPoint{gen: t.cur.gen, offset: t.written, ops: t.cur.ops, minSeq: t.cur.minSeq, maxSeq: t.cur.maxSeq}
}

// checkpointLocked is the checkpoint for what is fsynced now.
func (t *Translog) checkpointLocked() Checkpoint {
	c, p := t.ckp, t.dataSynced
	c.UUID, c.Generation, c.Offset, c.Ops = t.uuid, p.gen, p.offset, p.ops
	c.MinSeqNo, c.MaxSeqNo = p.minSeq, p.maxSeq
	for _, g := range t.old {
		c.MinSeqNo, c.MaxSeqNo = min(c.MinSeqNo, g.minSeq), max(c.MaxSeqNo, g.maxSeq)
	}
	return c
}

// writeCheckpointLocked records what is fsynced now, with syncSem and mu
// held (create, roll, trim, close, open).
func (t *Translog) writeCheckpointLocked() error {
	c := t.checkpointLocked()
	if err := t.ckpf.write(&c); err != nil {
		t.failed = err
		return err
	}
	t.ckp, t.synced = c, Location{Generation: c.Generation, Offset: c.Offset}
	return nil
}

// UUID identifies this translog (stored in every file and the checkpoint).
func (t *Translog) UUID() UUID { return t.uuid }

func (t *Translog) usableLocked() error {
	switch {
	case t.closed:
		return ErrClosed
	case t.failed != nil:
		return fmt.Errorf("translog failed earlier: %w", t.failed)
	}
	return nil
}

// Add appends op and returns where it was written. With Request
// durability it returns once op is durable (SyncTo).
func (t *Translog) Add(ctx context.Context, op *Op) (Location, error) {
	return t.add(ctx, op, nil)
}

// AddBatch appends ops in order (a bulk request) and returns the location
// of the last; with Request durability they share one fsync.
func (t *Translog) AddBatch(ctx context.Context, ops []Op) (Location, error) {
	if len(ops) == 0 {
		return Location{}, nil
	}
	return t.add(ctx, nil, ops)
}

// add appends one op, or else the ops of a batch. A batch is checked first
// so that a bad op cannot leave part of it in the log.
func (t *Translog) add(ctx context.Context, one *Op, batch []Op) (Location, error) {
	for i := range batch {
		if err := batch[i].validate(); err != nil {
			return Location{}, fmt.Errorf("op %d of the batch: %w", i, err)
		}
	}
	t.mu.Lock()
	if err := t.usableLocked(); err != nil {
		t.mu.Unlock()
		return Location{}, err
	}
	var loc Location
	var err error
	n := len(batch)
	if one != nil {
		n = 1
	}
	for i := range n {
		op := one
		if op == nil {
			op = &batch[i]
		}
		start := len(t.buf)
		var crc uint32
		if t.buf, crc, err = appendRecord(t.buf, op, t.cur.lastCRC); err != nil {
			break
		}
		size := int64(len(t.buf) - start)
		loc = Location{Generation: t.cur.gen, Offset: t.cur.size, Size: size}
		t.cur.add(op, size, crc)
		if op.Type == OpTrim {
			t.trims = append(t.trims, trimPoint{gen: loc.Generation, off: loc.Offset, term: op.PrimaryTerm, above: op.SeqNo})
		}
		if len(t.buf) >= writeBufferSize {
			if err = t.flushLocked(); err != nil {
				break
			}
		}
	}
	roll := t.cur.size >= t.opts.GenerationSize
	t.mu.Unlock()
	if err != nil {
		return loc, err
	}
	if roll {
		// Rolling fsyncs the old generation, which makes loc durable too.
		if err := t.rollIfAbove(ctx, t.opts.GenerationSize); err != nil {
			return loc, err
		}
	}
	if t.opts.Durability == Request {
		return loc, t.SyncTo(ctx, loc)
	}
	return loc, nil
}

// flushLocked hands buffered records to the OS.
func (t *Translog) flushLocked() error {
	if len(t.buf) == 0 {
		return nil
	}
	n, err := t.file.Write(t.buf)
	t.written += int64(n)
	if err != nil {
		t.failed = err
		return fmt.Errorf("translog: writing %s: %w", t.file.Name(), err)
	}
	t.buf = t.buf[:0]
	return nil
}

// syncAllLocked writes and fsyncs everything added, with mu held (used by
// roll and close, which must not let writers in meanwhile).
func (t *Translog) syncAllLocked() error {
	if err := t.flushLocked(); err != nil {
		return err
	}
	if err := t.file.Sync(); err != nil {
		t.failed = err
		return fmt.Errorf("translog: fsync %s: %w", t.file.Name(), err)
	}
	t.fsyncs.Add(1)
	t.dataSynced = t.pointLocked()
	return nil
}

// SyncTo returns once the operation at loc is durable: fsynced, and then
// covered by a checkpoint (Elasticsearch's ensureSynced). Callers arriving
// while a sync runs wait for it to end and are then served together by one
// more: group commit.
func (t *Translog) SyncTo(ctx context.Context, loc Location) error {
	t.mu.Lock()
	done, err := covers(t.synced.Generation, t.synced.Offset, loc), t.usableLocked()
	t.mu.Unlock()
	if done {
		return nil
	}
	if err != nil {
		return err
	}
	select {
	case t.syncSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.syncSem }()
	return t.syncLeader(loc)
}

// Sync makes everything added so far durable.
func (t *Translog) Sync(ctx context.Context) error {
	t.mu.Lock()
	loc := Location{Generation: t.cur.gen, Offset: t.cur.size}
	t.mu.Unlock()
	return t.SyncTo(ctx, loc)
}

// syncLeader fsyncs every record written so far and then writes the
// checkpoint that says so, unless an earlier leader's sync covered loc.
// The caller holds syncSem. Adds continue meanwhile (mu is free during
// both fsyncs) and join the next group. Overlapping the checkpoint write
// with the next group's fsync was measured slower: it takes the pairing of
// two writers' operations into one group away (BenchmarkAdd).
func (t *Translog) syncLeader(loc Location) error {
	t.mu.Lock()
	if covers(t.synced.Generation, t.synced.Offset, loc) {
		t.mu.Unlock()
		return nil
	}
	if err := t.usableLocked(); err != nil {
		t.mu.Unlock()
		return err
	}
	if err := t.flushLocked(); err != nil {
		t.mu.Unlock()
		return err
	}
	f, p := t.file, t.pointLocked()
	t.mu.Unlock()

	err := f.Sync()
	t.fsyncs.Add(1)

	t.mu.Lock()
	if err != nil {
		t.failed = err
		t.mu.Unlock()
		return fmt.Errorf("translog: fsync %s: %w", f.Name(), err)
	}
	// Rolls hold syncSem too, so p's generation is still current.
	t.dataSynced = p
	c := t.checkpointLocked()
	t.mu.Unlock()

	err = t.ckpf.write(&c)

	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed = err
		return err
	}
	// Whatever else changes the checkpoint holds syncSem: c is current.
	t.ckp, t.synced = c, Location{Generation: c.Generation, Offset: c.Offset}
	return nil
}

func (t *Translog) syncLoop() {
	defer close(t.done)
	tick := time.NewTicker(t.opts.SyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case d := <-t.interval:
			tick.Reset(d)
		case <-tick.C:
			if err := t.Sync(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
				t.log.Error("translog: periodic sync failed", "err", err)
			}
		}
	}
}

// SetSyncInterval changes the period of the background sync (Async
// durability; a no-op for a Request translog, which has none).
func (t *Translog) SetSyncInterval(d time.Duration) {
	if t.interval == nil || d <= 0 {
		return
	}
	select {
	case t.interval <- d:
	case <-t.done:
	}
}

// Roll fsyncs the current generation and starts a new one.
func (t *Translog) Roll(ctx context.Context) error { return t.rollIfAbove(ctx, 0) }

// rollIfAbove rolls if the current generation holds more than size bytes
// (size 0: if it holds any operation).
func (t *Translog) rollIfAbove(ctx context.Context, size int64) error {
	select {
	case t.syncSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.syncSem }()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	if t.cur.ops == 0 || t.cur.size < size {
		return nil // another caller rolled already
	}
	if err := t.syncAllLocked(); err != nil {
		return err
	}
	prev := t.cur
	t.old = append(t.old, prev)
	if err := t.startGeneration(prev.gen+1, prev.size, prev.ops); err != nil {
		t.failed = err
		return err
	}
	return nil
}

// TrimBelow deletes the oldest generations whose operations all have
// sequence numbers below minSeqNoToKeep — after a commit made them
// redundant. The current generation is never deleted (Roll first); open
// Snapshots keep reading deleted files.
func (t *Translog) TrimBelow(ctx context.Context, minSeqNoToKeep uint64) error {
	// syncSem: the checkpoint has one writer at a time.
	select {
	case t.syncSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.syncSem }()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	n := 0
	for n < len(t.old) && (t.old[n].ops == 0 || t.old[n].maxSeq < minSeqNoToKeep) {
		n++
	}
	t.ckp.TrimmedBelow = max(t.ckp.TrimmedBelow, minSeqNoToKeep)
	if n == 0 {
		return nil
	}
	drop := t.old[:n]
	t.old = slices.Clone(t.old[n:])
	// A trim record voids only records before it: one in a dropped
	// generation has nothing left to void.
	t.trims = slices.DeleteFunc(t.trims, func(tp trimPoint) bool { return tp.gen <= drop[n-1].gen })
	// The checkpoint goes first: a crash before the files are removed
	// leaves unreferenced files that Open deletes.
	t.ckp.MinGeneration = t.cur.gen
	if len(t.old) > 0 {
		t.ckp.MinGeneration = t.old[0].gen
	}
	if err := t.writeCheckpointLocked(); err != nil {
		return err
	}
	for _, g := range drop {
		if err := os.Remove(filepath.Join(t.dir, genFileName(g.gen))); err != nil {
			return fmt.Errorf("translog: trimming: %w", err)
		}
	}
	return nil
}

// Trim appends a trim record — operations already in the log with a
// primary term below term and a sequence number above aboveSeqNo are void
// from now on (snapshots skip them, so replay and recovery never see them)
// — and returns once it is durable, whatever the durability mode. A new
// primary resyncs its replicas with it: their logs may hold operations the
// old primary sent them but never acknowledged, which the new primary does
// not have (Elasticsearch's trimOperationOfPreviousPrimaryTerms).
func (t *Translog) Trim(ctx context.Context, term, aboveSeqNo uint64) error {
	op := Op{Type: OpTrim, PrimaryTerm: term, SeqNo: aboveSeqNo}
	loc, err := t.add(ctx, &op, nil)
	if err != nil {
		return err
	}
	return t.SyncTo(ctx, loc)
}

// MarkCommitted records that every operation below seqNo is in a commit
// point, for Stats' uncommitted counts: a caller that trims less than its
// commit allows (keeping operations for a copy's recovery) still sees the
// translog it must commit.
func (t *Translog) MarkCommitted(seqNo uint64) {
	t.mu.Lock()
	t.committedBelow = max(t.committedBelow, seqNo)
	t.mu.Unlock()
}

// Stats describe the retained translog.
type Stats struct {
	Generations   int
	Ops           int64
	SizeBytes     int64
	MinSeqNo      uint64 // > MaxSeqNo when there are no ops
	MaxSeqNo      uint64
	CurrentGen    uint64
	MinGeneration uint64
	// UncommittedOps/Bytes count the generations holding any operation at
	// or above the last TrimBelow (or MarkCommitted) argument (generation
	// granularity, as in Elasticsearch). TrimmedBelow is the highest
	// TrimBelow argument: every operation at or above it is retained.
	TrimmedBelow     uint64
	UncommittedOps   int64
	UncommittedBytes int64
	// Fsyncs counts fsyncs of generation files, CheckpointSyncs
	// fdatasyncs of the checkpoint (one per group commit, after its
	// fsync).
	Fsyncs          int64
	CheckpointSyncs int64
	// The last durable checkpoint covers the current generation up to
	// SyncedOffset; UnsyncedOps were added after it.
	SyncedOffset int64
	UnsyncedOps  int64
	// TruncatedBytes is the torn tail Open cut off.
	TruncatedBytes int64
	// MaxTerm is the highest primary term of the retained records (trim
	// records included); Trims counts the retained trim records.
	MaxTerm uint64
	Trims   int
}

// Stats returns current statistics.
func (t *Translog) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Stats{CurrentGen: t.cur.gen, MinSeqNo: t.cur.minSeq, MaxSeqNo: t.cur.maxSeq,
		Fsyncs: t.fsyncs.Load(), TruncatedBytes: t.truncated, MinGeneration: t.cur.gen, SyncedOffset: t.synced.Offset,
		UnsyncedOps:     t.cur.ops - t.ckp.Ops,
		CheckpointSyncs: t.ckpf.syncs.Load(), Trims: len(t.trims), TrimmedBelow: t.ckp.TrimmedBelow}
	if len(t.old) > 0 {
		s.MinGeneration = t.old[0].gen
	}
	for _, g := range append(slices.Clip(t.old), t.cur) {
		s.Generations++
		s.Ops += g.ops
		s.SizeBytes += g.size
		s.MinSeqNo, s.MaxSeqNo = min(s.MinSeqNo, g.minSeq), max(s.MaxSeqNo, g.maxSeq)
		s.MaxTerm = max(s.MaxTerm, g.maxTerm)
		if g.ops > 0 && g.maxSeq >= max(t.ckp.TrimmedBelow, t.committedBelow) || g.gen == t.cur.gen {
			s.UncommittedOps += g.ops
			s.UncommittedBytes += g.size
		}
	}
	return s
}

// Close syncs, writes the checkpoint and closes the files.
func (t *Translog) Close() error {
	if t.stop != nil {
		t.stopOnce.Do(func() { close(t.stop) })
		<-t.done
	}
	t.syncSem <- struct{}{}
	defer func() { <-t.syncSem }()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	var err error
	if t.failed == nil {
		if err = t.syncAllLocked(); err == nil {
			err = t.writeCheckpointLocked()
		}
	}
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	if cerr := t.ckpf.close(); err == nil {
		err = cerr
	}
	return err
}

func listGenerations(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("translog: %w", err)
	}
	var gens []uint64
	for _, e := range entries {
		if g, ok := parseGenFileName(e.Name()); ok {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	return gens, nil
}

func fileSize(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return -1
	}
	return fi.Size()
}
