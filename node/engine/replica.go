package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// FetchFunc copies one file of a checkpoint (or a pre-copy) from the
// primary: it writes the file's bytes, all of them, in order, to w (the
// node streams them from the primary's OpenIndexFile). The replica checks
// the length and the checksum itself.
type FetchFunc func(ctx context.Context, file FileMeta, w io.Writer) error

var (
	// ErrSealed is returned by a replica's ApplyOps, Trim and
	// InstallCheckpoint once Promote has begun.
	ErrSealed = errors.New("engine: replica sealed for promotion")
	// ErrFileConflict: a checkpoint names a file the replica's last commit
	// holds with other bytes. Replacing it would break the commit, the
	// copy's only durable state; the node recovers the copy afresh
	// instead. Primaries of different terms never reuse a name
	// (termCounterFloor), so only a primary reopened in the same term can
	// cause it.
	ErrFileConflict = errors.New("engine: a file of the replica's last commit differs on the primary")
)

// UserDataGlobalCheckpoint is the commit user-data key of the global
// checkpoint a replica knew when it committed.
const UserDataGlobalCheckpoint = "global_checkpoint"

// Replica is a shard copy kept current by segment replication (Lucene's
// ReplicaNode, OpenSearch's NRTReplicationEngine): it indexes nothing. The
// primary's operations reach its translog through ApplyOps (fenced by
// primary term), and the primary's segments reach its directory through
// InstallCheckpoint, which copies only the files it lacks and publishes a
// point-in-time Reader — the same Reader type a primary's searches and
// scans use. Commit makes the installed checkpoint durable; Promote turns
// the copy into a primary Engine. Safe for concurrent use: ApplyOps calls
// run concurrently with each other and with an install; installs run one
// at a time; PreCopy runs alongside an install.
type Replica struct {
	opts   Options
	dir    store.Directory
	ownDir bool
	codec  index.Codec
	fd     *fileDeleter
	log    *slog.Logger
	// tl is the translog; Recover replaces it (under termMu and the
	// commit lock).
	tl   atomic.Pointer[translog.Translog]
	mode atomic.Uint32 // translog.Durability

	// termMu orders fencing against appends: ApplyOps holds it shared from
	// its term check through its append; raising the term, a trim record,
	// sealing and closing hold it exclusively.
	termMu  sync.RWMutex
	term    atomic.Int64
	sealed  bool
	closed  bool
	failed  error // a translog append or sync failed
	tracker *seqTracker
	gcp     atomic.Int64 // global checkpoint (-1: unknown)
	// committedSeq is the last commit's seqNo (State reads it without
	// waiting for a commit in progress).
	committedSeq atomic.Int64

	installMu sync.Mutex // one InstallCheckpoint at a time
	commits   committer  // its mu: one commit at a time; replacing a file takes it too

	// mu guards what an install publishes and the file bookkeeping.
	mu        sync.Mutex
	segs      map[string]*segState // of the current reader, by name
	installed *ReplicationCheckpoint
	committed *ReplicationCheckpoint // the installed checkpoint the last commit holds
	// stale: a failed install replaced files the installed checkpoint
	// names, so committing it would commit other bytes (until the next
	// install succeeds, commits keep the last commit).
	stale       bool
	known       map[string]FileMeta // files this copy has, as verified
	fetching    map[string]chan struct{}
	preCopied   map[string]time.Time // pinned until referenced or expired
	version     int64
	refreshedCh chan struct{}
	lastCommit  time.Time
	current     atomic.Pointer[Reader]

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	stats    replicaCounters
	// failure is set once by fail: a damaged file (scrub, Verify).
	failure atomic.Pointer[error]
	checks  checkState // verification (scrub, Verify) state and counters
}

type replicaCounters struct {
	installs, fetched, fetchedBytes, reused, replaced, preCopied atomic.Int64
}

// OpenReplica opens a shard copy as a replica over the index's last commit
// (a new copy: none) and its translog. Options are an Engine's (Parser
// too: Promote opens an Engine with them); PrimaryTerm is the term the
// copy knows at least (it adopts a higher one from its commit and
// translog). The copy starts with the reader of its last commit; its local
// checkpoint covers the commit and the translog's operations above it.
func OpenReplica(ctx context.Context, opts Options) (*Replica, error) {
	opts.SetDefaults()
	if opts.Parser == nil {
		return nil, errors.New("engine: Options.Parser is required (a promoted replica indexes)")
	}
	if opts.Codec == nil {
		opts.Codec = codec.New(codec.Options{})
	}
	if opts.TranslogPath == "" {
		return nil, errors.New("engine: a replica needs a translog (Options.Path or TranslogPath)")
	}
	dir, owned, err := openDirectory(&opts)
	if err != nil {
		return nil, err
	}
	r := &Replica{opts: opts, dir: dir, ownDir: owned, codec: opts.Codec, fd: newFileDeleter(dir), log: opts.Logger,
		segs: map[string]*segState{}, known: map[string]FileMeta{}, fetching: map[string]chan struct{}{},
		preCopied: map[string]time.Time{}, refreshedCh: make(chan struct{}), lastCommit: time.Now()}
	r.commits = committer{dir: dir, fd: r.fd}
	if err := r.open(ctx); err != nil {
		r.releaseState()
		if tl := r.tl.Load(); tl != nil {
			tl.Close()
		}
		if owned {
			dir.Close()
		}
		return nil, err
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go runCommitter(r.stop, r.done, opts.CommitInterval, r.log, r.commitDue, r.Commit)
	return r, nil
}

func (r *Replica) open(ctx context.Context) error {
	// A copy found damaged before is not served again: its node deletes
	// it and recovers it from the primary.
	if err := checkCorruptionMarkers(r.dir); err != nil {
		return err
	}
	si, err := ReadLatestCommit(r.dir)
	if err != nil {
		return err
	}
	var segs []*segState
	var files []string
	var seq int64
	gcp := int64(-1)
	if si != nil {
		if segs, err = openCommitSegments(r.dir, r.codec, r.fd, si); err != nil {
			return err
		}
		files = si.Files()
		r.fd.incRef(files)
		r.commits.loaded(si, files)
		seq = si.SeqNo
		r.committedSeq.Store(seq)
		if v, err := strconv.ParseInt(si.UserData[UserDataGlobalCheckpoint], 10, 64); err == nil {
			gcp = v
		}
	}
	r.gcp.Store(gcp)
	for _, s := range segs {
		r.segs[s.info.Name] = s
	}
	if err := deleteUnreferenced(r.dir, r.log, files); err != nil {
		return err
	}
	r.version = 1
	reader := newReader(segs, seq, r.version)
	reader.appliedSeqNo.Store(seq)
	if si != nil {
		reader.addMarkers = addMarkersFrom(si)
	}
	r.current.Store(reader)

	r.mode.Store(uint32(r.opts.Durability))
	var uuid string
	if si != nil {
		uuid = si.UserData[UserDataTranslogUUID]
	}
	if err := finishTranslogReset(r.opts.TranslogPath, uuid); err != nil {
		return err
	}
	tl, err := r.openTranslog(ctx, r.opts.TranslogPath)
	if err != nil {
		return err
	}
	r.tl.Store(tl)
	if si != nil {
		if want, ok := si.UserData[UserDataTranslogUUID]; ok && want != tl.UUID().String() {
			return fmt.Errorf("engine: translog %s is %s but commit %d needs %s: %w",
				r.opts.TranslogPath, tl.UUID(), si.Generation, want, translog.ErrCorrupt)
		}
	}
	r.term.Store(max(commitTerm(si), int64(tl.Stats().MaxTerm), r.opts.PrimaryTerm, 1))
	r.tracker = newSeqTracker(seq)
	return scanTranslog(ctx, tl, seq, new(Recovery), func(op *translog.Op) error {
		r.tracker.mark(int64(op.SeqNo), op.PrimaryTerm)
		return nil
	})
}

func (r *Replica) openTranslog(ctx context.Context, path string) (*translog.Translog, error) {
	tl, err := translog.Open(ctx, path, translog.Options{Durability: translog.Async,
		SyncInterval: r.opts.SyncInterval, Logger: r.log})
	if err != nil {
		return nil, fmt.Errorf("engine: open translog %s: %w", path, err)
	}
	return tl, nil
}

// usableLocked says why operations are refused, with termMu held.
func (r *Replica) usableLocked() error {
	switch {
	case r.closed:
		return ErrClosed
	case r.sealed:
		return ErrSealed
	case r.failed != nil:
		return fmt.Errorf("engine: replica translog failed earlier: %w", r.failed)
	}
	return r.Failure()
}

// Failure returns why the replica failed (an error wrapping ErrFailed and
// the cause, index.ErrCorrupt for a damaged file, naming it), or nil.
func (r *Replica) Failure() error {
	if p := r.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail fails the replica for good, as Engine's fail does an engine: its
// files were verified when fetched and have been damaged on this disk
// since. Operations, installs, trims, promotion and new readers are
// refused from now on — a primary sending it operations fails it out of
// the in-sync set, and it can never be promoted — and, for a damaged
// file, the store is marked corrupted, so that OpenReplica refuses it
// after a restart too. Options.OnFailure hears of it once.
func (r *Replica) fail(source string, cause error) {
	err := fmt.Errorf("%w (%s): %w", ErrFailed, source, cause)
	if !r.failure.CompareAndSwap(nil, &err) {
		return
	}
	r.log.Error("engine: replica failed; refusing operations, installs, promotion and reads", "source", source, "err", cause)
	if errors.Is(cause, index.ErrCorrupt) {
		if name, merr := markStoreCorrupted(r.dir, cause); merr != nil {
			r.log.Error("engine: could not write the corruption marker", "err", merr)
		} else {
			r.log.Error("engine: store marked corrupted", "marker", name)
		}
	}
	if f := r.opts.OnFailure; f != nil {
		f(err)
	}
}

// Verify checksums every file of the replica's installed checkpoint,
// current reader and last commit now, and with Deep decodes every segment
// of its reader, as Engine.Verify does a primary's; damage fails the
// replica (fail). A failed replica can still be verified.
func (r *Replica) Verify(ctx context.Context, opts VerifyOptions) (VerifyResult, error) {
	return verifyCopy(ctx, r, opts)
}

// verifyFiles: the files of the installed checkpoint, of the current
// reader's segments and of the last commit, sorted.
func (r *Replica) verifyFiles() []string {
	var names []string
	r.mu.Lock()
	if r.installed != nil {
		for _, f := range r.installed.Files {
			names = append(names, f.Name)
		}
	}
	r.mu.Unlock()
	rd := r.Acquire()
	for _, s := range rd.segs {
		names = append(names, s.files...)
	}
	rd.Release()
	if c := r.LastCommit(); c != nil {
		names = append(names, c.Files()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (r *Replica) verifyDir() (store.Directory, index.Codec) { return r.dir, r.codec }
func (r *Replica) checkState() *checkState                   { return &r.checks }
func (r *Replica) acquireVerify() *Reader                    { return r.Acquire() }
func (r *Replica) failCopy(source string, cause error)       { r.fail(source, cause) }
func (r *Replica) logger() *slog.Logger                      { return r.log }

func (r *Replica) unusable() bool {
	r.termMu.RLock()
	defer r.termMu.RUnlock()
	return r.closed || r.Failure() != nil
}

// fenceLocked refuses term if it is older than the replica's and adopts
// it if newer, with termMu held exclusively.
func (r *Replica) fenceLocked(term int64, what string) error {
	if cur := r.term.Load(); term < cur {
		return fmt.Errorf("%w: %s of term %d, this copy knows term %d", ErrStaleTerm, what, term, cur)
	}
	r.term.Store(term)
	return nil
}

// PrimaryTerm is the highest primary term the replica knows.
func (r *Replica) PrimaryTerm() int64 { return r.term.Load() }

// SetPrimaryTerm raises the term the replica knows (the cluster state
// moved on), so that operations of an older primary are refused from now
// on; a lower term is refused with ErrStaleTerm.
func (r *Replica) SetPrimaryTerm(term int64) error {
	r.termMu.Lock()
	defer r.termMu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return r.fenceLocked(term, "new term")
}

// UpdateGlobalCheckpoint records the primary's global checkpoint (every
// operation up to it is on every in-sync copy; the node passes it with
// each replication request and checkpoint). It only rises. Commit trims
// the translog no further than it: a checkpoint may show operations the
// old primary never acknowledged, which a new primary's resync voids, so
// the translog keeps what a promotion must replay over them. Until the
// node sets it, commits trim nothing.
func (r *Replica) UpdateGlobalCheckpoint(seqNo int64) {
	for {
		cur := r.gcp.Load()
		if seqNo <= cur || r.gcp.CompareAndSwap(cur, seqNo) {
			return
		}
	}
}

// CopyState is where a copy stands (GetCopyState, ReplicateOps replies).
type CopyState struct {
	Term int64
	// LocalCheckpoint: the copy holds every operation up to it (in its
	// translog or its last commit); MaxSeqNo: the highest it received.
	LocalCheckpoint, MaxSeqNo int64
	// GlobalCheckpoint as last told (-1: never).
	GlobalCheckpoint int64
	// Visible: the seqNo of the installed checkpoint (searches see every
	// operation up to it); CheckpointTerm and CheckpointVersion name it.
	Visible                           int64
	CheckpointTerm, CheckpointVersion int64
	// Committed: the seqNo of the last commit.
	Committed int64
}

// State returns the copy's state.
func (r *Replica) State() CopyState {
	lcp, maxSeq := r.tracker.get()
	st := CopyState{Term: r.term.Load(), LocalCheckpoint: lcp, MaxSeqNo: maxSeq, GlobalCheckpoint: r.gcp.Load()}
	rd := r.Acquire()
	st.Visible = rd.SeqNo()
	rd.Release()
	r.mu.Lock()
	if r.installed != nil {
		st.CheckpointTerm, st.CheckpointVersion = r.installed.Term, r.installed.Version
	}
	r.mu.Unlock()
	st.Committed = r.committedSeq.Load()
	return st
}

// ApplyOps appends operations a primary of term primaryTerm sends — its
// new operations, or older ones it streams in a recovery or a resync —
// with their own seqNos and terms (index, delete or no-op), to the
// translog and, with Request durability, returns once they are fsynced:
// one fsync per call, shared with concurrent calls (group commit).
// Fencing is by the sender's term, as Elasticsearch's replication
// requests: below the replica's term nothing is appended and the error
// wraps ErrStaleTerm; above it, it is adopted first. An operation's own
// term may be older (it came from an earlier primary) but never newer
// than primaryTerm. It returns the copy's state (local checkpoint, max
// seqNo) after the call. A failed append or fsync fails the replica for
// writes, as on a primary.
func (r *Replica) ApplyOps(ctx context.Context, primaryTerm int64, ops []translog.Op) (CopyState, error) {
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Type != translog.OpIndex && op.Type != translog.OpDelete && op.Type != translog.OpNoOp && op.Type != translog.OpUpdateDocValues:
			return CopyState{}, fmt.Errorf("engine: replicated op %d: type %v cannot be replicated", i, op.Type)
		case op.SeqNo < 1 || op.PrimaryTerm < 1 || int64(op.PrimaryTerm) > primaryTerm:
			return CopyState{}, fmt.Errorf("engine: replicated op %d: seq_no %d, term %d: want seq_no and term at least 1, term at most the sender's %d",
				i, op.SeqNo, op.PrimaryTerm, primaryTerm)
		case op.Type != translog.OpNoOp && len(op.ID) == 0:
			return CopyState{}, fmt.Errorf("engine: replicated op %d (seq_no %d): no id", i, op.SeqNo)
		}
	}
	if len(ops) == 0 {
		return r.State(), nil
	}
	r.termMu.RLock()
	for primaryTerm > r.term.Load() {
		r.termMu.RUnlock()
		r.termMu.Lock()
		err := r.usableLocked()
		if err == nil {
			err = r.fenceLocked(primaryTerm, "operations")
		}
		r.termMu.Unlock()
		if err != nil {
			return CopyState{}, err
		}
		r.termMu.RLock()
	}
	err := r.usableLocked()
	if cur := r.term.Load(); err == nil && primaryTerm < cur {
		err = fmt.Errorf("%w: operations from the primary of term %d, this copy knows term %d", ErrStaleTerm, primaryTerm, cur)
	}
	if err != nil {
		r.termMu.RUnlock()
		return CopyState{}, err
	}
	loc, err := r.tl.Load().AddBatch(ctx, ops)
	r.termMu.RUnlock()
	if err == nil && translog.Durability(r.mode.Load()) == translog.Request {
		err = r.tl.Load().SyncTo(ctx, loc)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.failTranslog(err)
		}
		return CopyState{}, fmt.Errorf("engine: replica translog: %w", err)
	}
	for i := range ops {
		r.tracker.mark(int64(ops[i].SeqNo), ops[i].PrimaryTerm)
	}
	return r.State(), nil
}

func (r *Replica) failTranslog(err error) {
	r.termMu.Lock()
	defer r.termMu.Unlock()
	if r.failed == nil && !r.closed {
		r.failed = err
		r.log.Error("engine: replica translog failed; refusing operations", "err", err)
	}
}

// Trim writes a trim record (durable when it returns): operations of a
// term below term with a seqNo above aboveSeqNo, logged so far, are void —
// the new primary's resync after a promotion: its history ends at
// aboveSeqNo, and what an older primary sent beyond was never
// acknowledged. The term is adopted; an older one is refused
// (ErrStaleTerm).
func (r *Replica) Trim(ctx context.Context, term, aboveSeqNo int64) error {
	if aboveSeqNo < 0 {
		return fmt.Errorf("engine: trim above seq_no %d", aboveSeqNo)
	}
	r.termMu.Lock()
	defer r.termMu.Unlock()
	if err := r.usableLocked(); err != nil {
		return err
	}
	if err := r.fenceLocked(term, "resync"); err != nil {
		return err
	}
	if err := r.tl.Load().Trim(ctx, uint64(term), uint64(aboveSeqNo)); err != nil {
		return fmt.Errorf("engine: replica trim: %w", err)
	}
	r.tracker.trim(uint64(term), aboveSeqNo)
	return nil
}

// SetDurability changes when ApplyOps returns (see Engine.SetDurability).
func (r *Replica) SetDurability(d translog.Durability, syncInterval time.Duration) {
	r.mode.Store(uint32(d))
	if syncInterval > 0 {
		r.tl.Load().SetSyncInterval(syncInterval)
	}
}

// TranslogStats returns the replica's translog statistics.
func (r *Replica) TranslogStats() translog.Stats { return r.tl.Load().Stats() }

// InstallResult describes one InstallCheckpoint.
type InstallResult struct {
	// Installed is false when the checkpoint was not newer than the
	// installed one (nothing done).
	Installed bool
	// SeqNo is the installed checkpoint's: searches see it now.
	SeqNo int64
	// Files fetched (and their bytes), reused from what the copy had, and
	// replaced (a same-named file with other bytes: an old primary's).
	Fetched, Reused, Replaced int
	FetchedBytes              int64
}

// InstallCheckpoint makes the copy's searchable state the checkpoint's:
// it compares the checkpoint's files with the copy's (same name, length
// and checksum: reused), fetches the missing ones through fetch into a
// temporary file, verifies length and checksum (VerifyFiles) and renames
// it into place; opens the new segments and reads changed live docs; and
// publishes a Reader whose SeqNo is the checkpoint's. Files no reader,
// commit, pre-copy or newer checkpoint needs are deleted once released.
//
// A file whose name the copy holds with other bytes (an old primary's) is
// fetched aside and renamed over it only when everything else is in
// place; readers that have it open keep their mapping. If the last commit
// holds that name the install fails with ErrFileConflict.
//
// A checkpoint of an older term is refused (ErrStaleTerm); of a newer
// term adopts it; one not newer than the installed (Term, Version) does
// nothing. A failed install leaves the previous checkpoint installed.
func (r *Replica) InstallCheckpoint(ctx context.Context, cp *ReplicationCheckpoint, fetch FetchFunc) (InstallResult, error) {
	return r.installCheckpoint(ctx, cp, fetch, false)
}

// Recover is the first phase of a copy's peer recovery (a new copy, or
// one returning after it was down): it installs cp — the primary's
// checkpoint, taken with a translog retention lock from cp.SeqNo+1 —
// whatever the copy had installed, reusing the files it has, and commits
// it over a new, empty translog (Elasticsearch's recovery target does the
// same): the old one may have missed operations the checkpoint holds, and
// replaying it over the checkpoint's segments would bring back what they
// superseded. Then the primary streams every operation above cp.SeqNo
// (TranslogSnapshot) through ApplyOps; the copy is in sync once they are
// in. ApplyOps calls wait while the translog is replaced, and those that
// come after land in the new one. A crash in between leaves either the
// old translog and commit or the new ones (OpenReplica finishes the
// switch); the recovery is then done again.
func (r *Replica) Recover(ctx context.Context, cp *ReplicationCheckpoint, fetch FetchFunc) (InstallResult, error) {
	res, err := r.installCheckpoint(ctx, cp, fetch, true)
	if err != nil {
		return res, err
	}
	if err := r.resetTranslog(ctx); err != nil {
		return res, fmt.Errorf("engine: recovery: %w", err)
	}
	return res, nil
}

// Suffixes of the directories a translog reset goes through.
const (
	translogFreshSuffix = ".recovering"
	translogOldSuffix   = ".old"
)

// resetTranslog commits the installed checkpoint over a new, empty
// translog: the new one is made beside the old, the commit names it, and
// then it takes the old one's place (finishTranslogReset, also run at
// open).
func (r *Replica) resetTranslog(ctx context.Context) error {
	r.termMu.Lock()
	defer r.termMu.Unlock()
	if err := r.usableLocked(); err != nil {
		return err
	}
	r.commits.mu.Lock()
	defer r.commits.mu.Unlock()
	r.mu.Lock()
	cp := r.installed.Retain()
	r.mu.Unlock()
	defer cp.Release()
	path := r.opts.TranslogPath
	fresh := path + translogFreshSuffix
	if err := os.RemoveAll(fresh); err != nil {
		return err
	}
	ntl, err := r.openTranslog(ctx, fresh)
	if err != nil {
		return err
	}
	si := r.commitPoint(cp, ntl)
	err = r.commits.publishLocked(si)
	if cerr := ntl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// The commit names the new translog now: the old one goes.
	old := r.tl.Load()
	if err := old.Close(); err != nil && !errors.Is(err, translog.ErrClosed) {
		r.log.Warn("engine: closing the translog a recovery replaces", "err", err)
	}
	tl, err := func() (*translog.Translog, error) {
		if err := finishTranslogReset(path, ntl.UUID().String()); err != nil {
			return nil, err
		}
		return r.openTranslog(ctx, path)
	}()
	if err != nil {
		// No translog to append to: only a reopen (which finishes the
		// swap) can go on.
		r.failed = err
		return err
	}
	r.tl.Store(tl)
	r.tracker.reset(cp.SeqNo)
	r.mu.Lock()
	r.committed, r.lastCommit = cp, time.Now()
	r.mu.Unlock()
	r.committedSeq.Store(cp.SeqNo)
	return nil
}

// finishTranslogReset completes a translog reset a crash may have cut
// short, given the translog UUID the last commit names: a new translog
// beside the old one that the commit names takes its place; one it does
// not name (the commit was never written) is dropped, as is an old one
// left behind.
func finishTranslogReset(path, commitUUID string) error {
	fresh, old := path+translogFreshSuffix, path+translogOldSuffix
	if _, err := os.Stat(fresh); err == nil {
		ck, err := translog.ReadCheckpoint(fresh)
		if err == nil && commitUUID != "" && ck.UUID.String() == commitUUID {
			if _, err := os.Stat(path); err == nil {
				if err := os.RemoveAll(old); err != nil {
					return err
				}
				if err := os.Rename(path, old); err != nil {
					return fmt.Errorf("engine: translog reset: %w", err)
				}
			}
			if err := os.Rename(fresh, path); err != nil {
				return fmt.Errorf("engine: translog reset: %w", err)
			}
		} else if err := os.RemoveAll(fresh); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	return syncParentDir(path)
}

// syncParentDir fsyncs the directory holding path (renames in it).
func syncParentDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("engine: fsync %s: %w", filepath.Dir(path), err)
	}
	return nil
}

func (r *Replica) installCheckpoint(ctx context.Context, cp *ReplicationCheckpoint, fetch FetchFunc, force bool) (InstallResult, error) {
	if err := cp.validate(); err != nil {
		return InstallResult{}, err
	}
	for i := range cp.Infos.Segments {
		if c := cp.Infos.Segments[i].Info.Codec; c != r.codec.Name() {
			return InstallResult{}, fmt.Errorf("%w: segment %s has codec %q, this copy reads %q",
				ErrInvalidCheckpoint, cp.Infos.Segments[i].Info.Name, c, r.codec.Name())
		}
	}
	r.termMu.Lock()
	err := r.usableLocked()
	if err == nil {
		err = r.fenceLocked(cp.Term, "checkpoint")
	}
	r.termMu.Unlock()
	if err != nil {
		return InstallResult{}, err
	}
	r.installMu.Lock()
	defer r.installMu.Unlock()
	r.termMu.RLock()
	err = r.usableLocked()
	r.termMu.RUnlock()
	if err != nil {
		return InstallResult{}, err
	}
	r.mu.Lock()
	inst := r.installed
	r.mu.Unlock()
	if inst != nil && !cp.Newer(inst) && !force {
		return InstallResult{SeqNo: r.visible()}, nil
	}
	in := &install{r: r, cp: cp}
	defer in.release()
	res, err := in.run(ctx, fetch)
	if err != nil {
		return InstallResult{}, fmt.Errorf("engine: install checkpoint %d/%d: %w", cp.Term, cp.Version, err)
	}
	r.stats.installs.Add(1)
	return res, nil
}

// install is one InstallCheckpoint in progress.
type install struct {
	r      *Replica
	cp     *ReplicationCheckpoint
	held   []string          // file references taken, dropped at the end
	side   map[string]string // replaced files: final name -> fetched aside
	opened []*segState       // opened for the checkpoint, not yet published
	res    InstallResult
}

func (in *install) release() {
	r := in.r
	for _, part := range in.side {
		r.dir.DeleteFile(part)
	}
	for _, s := range in.opened {
		s.decRef()
	}
	r.fd.decRef(in.held)
}

func (in *install) run(ctx context.Context, fetch FetchFunc) (_ InstallResult, err error) {
	r, cp := in.r, in.cp
	renamed := false
	defer func() {
		if err != nil && renamed {
			r.mu.Lock()
			r.stale = true
			r.mu.Unlock()
		}
	}()
	in.side = map[string]string{}
	gots, err := r.obtainAll(ctx, cp.Files, fetch)
	for i, f := range cp.Files {
		got := gots[i]
		switch got.how {
		case obtainedReused:
			in.res.Reused++
		case obtainedFetched:
			in.res.Fetched++
			in.res.FetchedBytes += f.Length
		case obtainedAside:
			in.side[f.Name] = got.part
			in.res.FetchedBytes += f.Length
			continue
		case obtainedNone:
			continue
		}
		in.held = append(in.held, f.Name)
	}
	if err != nil {
		return in.res, err // what was obtained is released with the install
	}
	// Segments whose files are all in place open now, outside the locks.
	segs := make([]*segState, len(cp.Infos.Segments))
	for i := range cp.Infos.Segments {
		cs := &cp.Infos.Segments[i]
		if in.touchesReplaced(cs) {
			continue
		}
		s, err := r.segmentFor(cs)
		if err != nil {
			return in.res, err
		}
		if s != nil {
			in.opened = append(in.opened, s)
		}
		segs[i] = s
	}
	// Publish, replacing old primaries' files first: no commit may run
	// between the rename and the publication (it would commit the old
	// checkpoint with the new bytes).
	r.commits.mu.Lock()
	defer r.commits.mu.Unlock()
	if len(in.side) > 0 {
		last := r.commits.last
		for name := range in.side {
			if last != nil && slices.Contains(last.Files(), name) {
				return in.res, fmt.Errorf("%w: %s (commit %d)", ErrFileConflict, name, last.Generation)
			}
		}
		for name, part := range in.side {
			renamed = true
			if err := r.dir.Rename(part, name); err != nil {
				return in.res, fmt.Errorf("replace %s: %w", name, err)
			}
			delete(in.side, name)
			r.fd.incRef([]string{name})
			in.held = append(in.held, name)
			in.res.Replaced++
			r.stats.replaced.Add(1)
			r.mu.Lock()
			r.known[name], _ = cp.File(name)
			r.mu.Unlock()
		}
		for i := range cp.Infos.Segments {
			if segs[i] != nil {
				continue
			}
			s, err := r.segmentFor(&cp.Infos.Segments[i])
			if err != nil {
				return in.res, err
			}
			if s != nil {
				in.opened = append(in.opened, s)
			}
			segs[i] = s
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	published := make([]*segState, len(segs))
	for i := range cp.Infos.Segments {
		cs := &cp.Infos.Segments[i]
		s := segs[i]
		if s == nil { // reused: the current one
			s = r.segs[cs.Info.Name]
		}
		if err := r.applyLiveDocs(s, cs); err != nil {
			return in.res, err
		}
		if err := s.loadDocValuesUpdates(r.codec, r.dir, cs); err != nil {
			return in.res, err
		}
		published[i] = s
	}
	// The new list: segments opened for it join with their list
	// reference; segments it dropped lose theirs.
	next := make(map[string]*segState, len(published))
	for _, s := range published {
		next[s.info.Name] = s
	}
	for name, s := range r.segs {
		if next[name] != s {
			s.decRef()
		}
	}
	r.segs = next
	in.opened = nil
	stored := &ReplicationCheckpoint{Term: cp.Term, Version: cp.Version, SeqNo: cp.SeqNo, Infos: cp.Infos,
		Files: slices.Clone(cp.Files)}
	stored.Infos.Segments = slices.Clone(cp.Infos.Segments)
	stored.Infos.UserData = maps.Clone(cp.Infos.UserData)
	names := make([]string, len(stored.Files))
	var adopted []string // pre-copies the checkpoint's pin holds from now on
	for i, f := range stored.Files {
		names[i] = f.Name
		r.known[f.Name] = f
		if _, ok := r.preCopied[f.Name]; ok {
			adopted = append(adopted, f.Name)
			delete(r.preCopied, f.Name)
		}
	}
	stored.pin = newFilePin(r.fd, names)
	r.fd.decRef(adopted)
	r.expirePreCopiesLocked()
	r.stale = false
	if r.installed != nil {
		r.installed.Release()
	}
	r.installed = stored
	r.version++
	rd := newReader(published, cp.SeqNo, r.version)
	rd.appliedSeqNo.Store(cp.SeqNo)
	rd.addMarkers = addMarkersFrom(&stored.Infos)
	old := r.current.Swap(rd)
	close(r.refreshedCh)
	r.refreshedCh = make(chan struct{})
	old.Release()
	in.res.Installed, in.res.SeqNo = true, cp.SeqNo
	return in.res, nil
}

// touchesReplaced reports whether a segment of the checkpoint has a file
// waiting to replace a same-named one.
func (in *install) touchesReplaced(cs *CommitSegment) bool {
	for _, f := range cs.Info.Files {
		if _, ok := in.side[f]; ok {
			return true
		}
	}
	for _, gen := range []string{cs.LiveDocs, cs.DocValuesUpdates} {
		if _, ok := in.side[gen]; gen != "" && ok {
			return true
		}
	}
	return false
}

// segmentFor returns a new segState for a checkpoint segment the copy
// does not have open (nil: the current one, the same segment, serves).
// Its files are in place.
func (r *Replica) segmentFor(cs *CommitSegment) (*segState, error) {
	r.mu.Lock()
	cur := r.segs[cs.Info.Name]
	r.mu.Unlock()
	if cur != nil && cur.info.ID == cs.Info.ID && slices.Equal(cur.info.Files, cs.Info.Files) {
		return nil, nil
	}
	info := cs.Info
	info.Files = slices.Clone(cs.Info.Files)
	sr, err := r.codec.OpenSegment(r.dir, &info)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", info.Name, err)
	}
	return newSegState(&info, sr, r.fd, r.dir), nil
}

// applyLiveDocs gives s the checkpoint's live docs, with r.mu held.
// Readers already published keep the bitset they captured.
func (r *Replica) applyLiveDocs(s *segState, cs *CommitSegment) error {
	if cs.LiveDocs == s.liveFile && (cs.LiveDocs == "") == (s.live == nil) {
		return nil
	}
	if cs.LiveDocs == "" {
		return fmt.Errorf("%w: segment %s lost its deletes (live docs %s before)", ErrInvalidCheckpoint, s.info.Name, s.liveFile)
	}
	live, err := r.codec.ReadLiveDocs(r.dir, s.info, cs.DelGen)
	if err != nil {
		return fmt.Errorf("live docs of %s: %w", s.info.Name, err)
	}
	if n := s.info.MaxDoc - live.Cardinality(); n != cs.DelCount {
		return fmt.Errorf("%w: live docs of %s: %d deleted, checkpoint says %d", ErrInvalidCheckpoint, s.info.Name, n, cs.DelCount)
	}
	s.live, s.delCount = live, cs.DelCount
	s.setLiveFile(cs.LiveDocs, live, cs.DelGen)
	return nil
}

// obtained says how obtain got a file.
type obtained struct {
	how  int
	part string // obtainedAside: the temporary file
}

const (
	obtainedReused  = iota // the copy had it: a reference was taken
	obtainedFetched        // fetched and in place: a reference was taken
	obtainedAside          // fetched under part: a same-named file differs
	obtainedSkipped        // (pre-copy) a same-named file differs: not fetched
	obtainedNone           // (obtainAll) failed, or not tried after a failure
)

// obtainAll obtains files (aside when a same-named file differs),
// Options.ConcurrentFileFetches at a time, and says how it got each. After
// a failure it starts no more and returns the first error, with how it
// got those it did get: their references and files aside are the
// caller's to release.
func (r *Replica) obtainAll(ctx context.Context, files []FileMeta, fetch FetchFunc) ([]obtained, error) {
	gots := make([]obtained, len(files))
	for i := range gots {
		gots[i].how = obtainedNone
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, r.opts.ConcurrentFileFetches)
	var wg sync.WaitGroup
	for i, f := range files {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			got, err := r.obtain(ctx, f, fetch, true)
			if err != nil {
				cancel(err)
				return
			}
			gots[i] = got
		})
	}
	wg.Wait()
	return gots, context.Cause(ctx)
}

// obtain makes sure the copy has file f. A file it has with the same
// length and checksum is reused; one it lacks is fetched into place; one
// it has with other bytes is fetched aside (aside) or skipped. A file
// another call is fetching is waited for. The reference taken on a file
// in place is the caller's to drop.
func (r *Replica) obtain(ctx context.Context, f FileMeta, fetch FetchFunc, aside bool) (obtained, error) {
	for {
		r.mu.Lock()
		if ch, busy := r.fetching[f.Name]; busy {
			r.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return obtained{}, ctx.Err()
			}
		}
		have, ok := r.known[f.Name]
		if !ok && r.fd.refCount(f.Name) > 0 {
			// A file of the last commit (or another the copy refers to)
			// not described yet: read its footer. One that cannot be read
			// counts as other bytes.
			m, err := fileMetaOf(r.dir, r.codec, f.Name)
			if err != nil {
				m = FileMeta{Name: f.Name, Length: -1}
			}
			have, ok = m, true
			r.known[f.Name] = m
		}
		if ok && !r.fd.tryIncRef(f.Name) {
			delete(r.known, f.Name) // released since: gone
			ok = false
		}
		if ok && have == f {
			r.mu.Unlock()
			r.stats.reused.Add(1)
			return obtained{how: obtainedReused}, nil
		}
		if ok {
			r.fd.decRef([]string{f.Name})
			if !aside {
				r.mu.Unlock()
				return obtained{how: obtainedSkipped}, nil
			}
		}
		ch := make(chan struct{})
		r.fetching[f.Name] = ch
		r.mu.Unlock()
		got, err := r.fetchFile(ctx, f, fetch, ok)
		r.mu.Lock()
		delete(r.fetching, f.Name)
		close(ch)
		if err == nil && got.how == obtainedFetched {
			r.known[f.Name] = f
		}
		r.mu.Unlock()
		return got, err
	}
}

// fetchFile fetches f into a temporary file, checks it and renames it into
// place (taking a reference), or leaves it aside when a same-named file
// differs.
func (r *Replica) fetchFile(ctx context.Context, f FileMeta, fetch FetchFunc, aside bool) (obtained, error) {
	part := f.Name + ".part"
	if err := r.dir.DeleteFile(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return obtained{}, fmt.Errorf("fetch %s: %w", f.Name, err)
	}
	fail := func(err error) (obtained, error) {
		r.dir.DeleteFile(part)
		return obtained{}, fmt.Errorf("fetch %s: %w", f.Name, err)
	}
	out, err := r.dir.CreateOutput(part, store.IOContext{Kind: store.IODefault, EstimatedSize: f.Length})
	if err != nil {
		return fail(err)
	}
	// The file is checksummed as it is written, not read back after
	// (a codec file; a commit point is small and verified after).
	var w io.Writer = out
	var check func() (uint32, error)
	if sw, ok := r.codec.(streamVerifier); ok && !strings.HasPrefix(f.Name, commitPrefix) {
		var sum io.Writer
		sum, check = sw.ChecksumWriter(f.Name, f.Length)
		w = io.MultiWriter(out, sum)
	}
	if err := fetch(ctx, f, w); err != nil {
		out.Close()
		return fail(err)
	}
	n := out.FilePointer()
	if err := out.Close(); err != nil {
		return fail(err)
	}
	if n != f.Length {
		return fail(fmt.Errorf("%w: got %d bytes, want %d", index.ErrCorrupt, n, f.Length))
	}
	if err := r.verifyFetched(ctx, f, part, check); err != nil {
		return fail(err)
	}
	r.stats.fetched.Add(1)
	r.stats.fetchedBytes.Add(f.Length)
	if aside {
		return obtained{how: obtainedAside, part: part}, nil
	}
	if err := r.dir.Rename(part, f.Name); err != nil {
		return fail(err)
	}
	r.fd.incRef([]string{f.Name})
	return obtained{how: obtainedFetched}, nil
}

// streamVerifier is a codec that checksums a file as it is written
// (codec.Codec).
type streamVerifier interface {
	ChecksumWriter(name string, length int64) (io.Writer, func() (uint32, error))
}

// verifyFetched checks that fetched file f, written to part, holds the
// bytes the primary described: check, if set, is the checksum computed
// while it was written; without, the file is read back and verified.
func (r *Replica) verifyFetched(ctx context.Context, f FileMeta, part string, check func() (uint32, error)) error {
	var sum uint32
	if check != nil {
		var err error
		if sum, err = check(); err != nil {
			return err
		}
	} else {
		meta, err := fileMetaOf(r.dir, r.codec, part)
		if err != nil {
			return err
		}
		checks, err := VerifyFiles(ctx, r.dir, r.codec, []string{part}, VerifyOptions{})
		if err != nil {
			return err
		}
		if c := checks[0]; c.Status != FileOK {
			return fmt.Errorf("%s: %v", c.Status, c.Err)
		}
		sum = meta.Checksum
	}
	if sum != f.Checksum {
		return fmt.Errorf("%w: footer checksum %#x, want %#x", index.ErrCorrupt, sum, f.Checksum)
	}
	return nil
}

// PreCopy fetches files of a merged segment the primary has not published
// yet (Options.MergedSegmentPreCopy on the primary), so that the checkpoint
// that references them copies nothing large. Files the copy has are
// skipped (as are same-named files with other bytes: the checkpoint
// install replaces those). They are kept until an installed checkpoint
// references them or PreCopyRetention passes. It returns how many files
// and bytes it fetched. It runs alongside InstallCheckpoint; a file both
// want is fetched once.
func (r *Replica) PreCopy(ctx context.Context, files []FileMeta, fetch FetchFunc) (int, int64, error) {
	for _, f := range files {
		if !validIndexFileName(f.Name) || f.Length < 0 {
			return 0, 0, fmt.Errorf("%w: pre-copy of file %q (length %d)", ErrInvalidCheckpoint, f.Name, f.Length)
		}
	}
	r.termMu.RLock()
	err := r.usableLocked()
	r.termMu.RUnlock()
	if err != nil {
		return 0, 0, err
	}
	var n int
	var bytes int64
	for _, f := range files {
		got, err := r.obtain(ctx, f, fetch, false)
		if err != nil {
			return n, bytes, fmt.Errorf("engine: pre-copy: %w", err)
		}
		if got.how == obtainedSkipped {
			continue
		}
		if got.how == obtainedFetched {
			n++
			bytes += f.Length
			r.stats.preCopied.Add(1)
		}
		r.mu.Lock()
		if _, pinned := r.preCopied[f.Name]; pinned {
			r.fd.decRef([]string{f.Name}) // pinned once already
		}
		r.preCopied[f.Name] = time.Now()
		r.mu.Unlock()
	}
	return n, bytes, nil
}

// expirePreCopiesLocked releases pre-copied files kept past
// PreCopyRetention, with r.mu held.
func (r *Replica) expirePreCopiesLocked() {
	for name, at := range r.preCopied {
		if time.Since(at) > r.opts.PreCopyRetention {
			delete(r.preCopied, name)
			r.fd.decRef([]string{name})
		}
	}
}

// Commit makes the installed checkpoint the copy's durable state: it
// fsyncs the checkpoint's files, writes segments_N with its segments, its
// seqNo, the translog's identity, the term and the global checkpoint, and
// then trims the translog below min(seqNo, global checkpoint)+1. It
// returns the last commit point — the previous one when nothing new was
// installed since, or when the installed checkpoint's seqNo is below what
// the translog was trimmed to already (a new primary's checkpoint, behind
// an old one the copy committed): committing it would leave operations in
// neither the commit nor the translog.
func (r *Replica) Commit(ctx context.Context) (*SegmentInfos, error) {
	r.commits.mu.Lock()
	defer r.commits.mu.Unlock()
	tl := r.tl.Load()
	r.mu.Lock()
	cp := r.installed
	if cp == nil || cp == r.committed || r.stale || cp.SeqNo+1 < int64(tl.Stats().TrimmedBelow) {
		r.mu.Unlock()
		return r.commits.last, nil
	}
	cp.Retain()
	r.mu.Unlock()
	defer cp.Release()
	if err := tl.Roll(ctx); err != nil {
		return nil, fmt.Errorf("engine: replica commit: roll translog: %w", err)
	}
	si := r.commitPoint(cp, tl)
	if err := r.commits.publishLocked(si); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.committed = cp
	r.lastCommit = time.Now()
	r.mu.Unlock()
	r.committedSeq.Store(cp.SeqNo)
	r.tracker.raiseTo(cp.SeqNo)
	// What a promotion replays: above the global checkpoint, or the
	// commit if lower (see Promote).
	if keep := min(cp.SeqNo, r.gcp.Load()) + 1; keep > 0 {
		if err := tl.TrimBelow(ctx, uint64(keep)); err != nil {
			return si, fmt.Errorf("engine: replica commit %d is durable but trimming the translog failed: %w", si.Generation, err)
		}
	}
	return si, nil
}

// commitPoint is the commit point of checkpoint cp over translog tl.
func (r *Replica) commitPoint(cp *ReplicationCheckpoint, tl *translog.Translog) *SegmentInfos {
	ud := maps.Clone(cp.Infos.UserData)
	if ud == nil {
		ud = map[string]string{}
	}
	ud[UserDataTranslogUUID] = tl.UUID().String()
	ud[UserDataTranslogGeneration] = strconv.FormatUint(tl.Stats().CurrentGen, 10)
	ud[UserDataPrimaryTerm] = strconv.FormatInt(r.term.Load(), 10)
	ud[UserDataGlobalCheckpoint] = strconv.FormatInt(r.gcp.Load(), 10)
	return &SegmentInfos{Generation: r.commits.nextGeneration(), SeqNo: cp.SeqNo, Counter: cp.Infos.Counter,
		UserData: ud, Segments: slices.Clone(cp.Infos.Segments)}
}

// commitDue says why a periodic commit is due, or "" (nothing installed
// since the last commit).
func (r *Replica) commitDue() string {
	r.mu.Lock()
	fresh, last := r.installed != nil && r.installed != r.committed, r.lastCommit
	r.mu.Unlock()
	if !fresh {
		return ""
	}
	return commitReason(&r.opts.TranslogOptions, r.tl.Load(), last)
}

// LastCommit returns the copy's last commit point, or nil.
func (r *Replica) LastCommit() *SegmentInfos {
	r.commits.mu.Lock()
	defer r.commits.mu.Unlock()
	return r.commits.last
}

// Checkpoint returns the installed checkpoint (nil before the first
// install), retained: Release it.
func (r *Replica) Checkpoint() *ReplicationCheckpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.installed == nil {
		return nil
	}
	return r.installed.Retain()
}

// Promote turns the replica into the primary of term (which must not be
// below the replica's): it seals the replica (ApplyOps, Trim and installs
// are refused from now on), commits the installed checkpoint, closes the
// replica and opens an Engine over the same files with PrimaryTerm term.
// The Engine's Open replays the translog above min(commit seqNo, global
// checkpoint) — honouring trim records and terms — fills seqNo gaps with
// no-ops of the new term, and names new segments from the new term's
// range, so they never collide with an old primary's. On error the
// replica stays sealed (or closed, if the failure came after): reopen the
// copy to retry.
func (r *Replica) Promote(ctx context.Context, term int64) (*Engine, error) {
	r.termMu.Lock()
	err := r.usableLocked()
	if err == nil {
		err = r.fenceLocked(term, "promotion")
	}
	if err == nil {
		r.sealed = true
	}
	r.termMu.Unlock()
	if err != nil {
		return nil, err
	}
	// After an install in progress (none starts once sealed).
	r.installMu.Lock()
	_, err = r.Commit(ctx)
	r.installMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("engine: promote: %w", err)
	}
	if err := r.Close(ctx); err != nil {
		return nil, fmt.Errorf("engine: promote: close replica: %w", err)
	}
	opts := r.opts
	opts.PrimaryTerm = term
	e, err := Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("engine: promote to term %d: %w", term, err)
	}
	return e, nil
}

// Acquire returns the current reader; Release it when done.
func (r *Replica) Acquire() *Reader {
	for {
		rd := r.current.Load()
		if rd.tryIncRef() {
			return rd
		}
	}
}

// AcquireReader is Acquire, refusing once the replica is closed or
// failed (Failure: searches go to another copy).
func (r *Replica) AcquireReader() (*Reader, error) {
	r.termMu.RLock()
	closed := r.closed
	r.termMu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if err := r.Failure(); err != nil {
		return nil, err
	}
	return r.Acquire(), nil
}

func (r *Replica) visible() int64 { return r.current.Load().SeqNo() }

// RefreshNotify returns a channel closed by the next install (or Close).
func (r *Replica) RefreshNotify() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refreshedCh
}

// WaitForGeneration blocks until operation seq is searchable on this copy
// (an installed checkpoint covers it), ctx ends, or the replica closes.
func (r *Replica) WaitForGeneration(ctx context.Context, seq int64) error {
	for {
		ch := r.RefreshNotify()
		if r.visible() >= seq {
			return nil
		}
		r.termMu.RLock()
		closed := r.closed
		r.termMu.RUnlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("engine: waiting for seq %d on a replica: %w", seq, ctx.Err())
		}
	}
}

// GetDocument returns the live document with id as of the installed
// checkpoint (no realtime get on a replica: that is the primary's).
func (r *Replica) GetDocument(id []byte) (doc Doc, found bool, err error) {
	rd := r.Acquire()
	defer rd.Release()
	leaf, d, ok := rd.LookupID(id)
	if !ok {
		return Doc{}, false, nil
	}
	if err := rd.Document(leaf, d, &doc.StoredDoc); err != nil {
		return Doc{}, false, fmt.Errorf("engine: get %q: %w", id, err)
	}
	doc.Version = rd.DocVersion(leaf, d)
	return doc, true, nil
}

// ReplicaStats counts a replica's work.
type ReplicaStats struct {
	CopyState
	NumDocs, DeletedDocs, Segments int
	SegmentBytes                   int64
	// Installs done; files fetched (checkpoints and pre-copies), their
	// bytes; files reused; files replaced; files pre-copied.
	Installs, FilesFetched, BytesFetched, FilesReused, FilesReplaced, FilesPreCopied int64
	Translog                                                                         translog.Stats
	CheckStats
}

// Stats returns the replica's counters.
func (r *Replica) Stats() ReplicaStats {
	st := ReplicaStats{CopyState: r.State(), Translog: r.tl.Load().Stats(),
		Installs: r.stats.installs.Load(), FilesFetched: r.stats.fetched.Load(), BytesFetched: r.stats.fetchedBytes.Load(),
		FilesReused: r.stats.reused.Load(), FilesReplaced: r.stats.replaced.Load(), FilesPreCopied: r.stats.preCopied.Load(),
		CheckStats: r.checks.stats()}
	rd := r.Acquire()
	st.NumDocs, st.Segments = rd.NumDocs(), len(rd.Leaves())
	st.DeletedDocs = rd.MaxDoc() - rd.NumDocs()
	for _, s := range rd.segs {
		st.SegmentBytes += s.sizeBytes
	}
	rd.Release()
	return st
}

// Close stops the replica: operations and installs are refused, the
// periodic committer stops, the translog is closed. Readers acquired
// before stay usable until released. What was installed since the last
// commit is not kept (Commit first to keep it); the translog keeps every
// operation.
func (r *Replica) Close(ctx context.Context) error {
	r.termMu.Lock()
	if r.closed {
		r.termMu.Unlock()
		return nil
	}
	r.closed = true
	r.termMu.Unlock()
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
	r.installMu.Lock()
	defer r.installMu.Unlock()
	r.commits.mu.Lock() // after a commit in progress
	r.releaseState()
	r.commits.mu.Unlock()
	err := r.tl.Load().Close()
	if r.ownDir {
		err = errors.Join(err, r.dir.Close())
	}
	return err
}

// releaseState drops the replica's references on its segments, installed
// checkpoint and pre-copies (never the last commit's: those files must
// stay), and publishes an empty reader.
func (r *Replica) releaseState() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.installed != nil {
		r.installed.Release()
		r.installed = nil
	}
	for name := range r.preCopied {
		r.fd.decRef([]string{name})
	}
	clear(r.preCopied)
	for _, s := range r.segs {
		s.decRef()
	}
	clear(r.segs)
	if old := r.current.Swap(newReader(nil, r.visibleOr(0), r.version+1)); old != nil {
		old.Release()
	}
	close(r.refreshedCh)
	r.refreshedCh = make(chan struct{})
}

func (r *Replica) visibleOr(def int64) int64 {
	if rd := r.current.Load(); rd != nil {
		return rd.SeqNo()
	}
	return def
}
