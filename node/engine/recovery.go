package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// integrityChecker is implemented by codecs that can verify a segment end
// to end (codec.Codec).
type integrityChecker interface {
	CheckIntegrity(dir store.Directory, info *index.SegmentInfo) error
}

// openTranslog runs during Open, after the writer loaded the last commit:
// it optionally verifies the committed segments, opens the translog
// (truncating a torn tail, refusing corruption), replays the operations
// the commit lacks, refreshes, and starts the periodic committer.
func (e *Engine) openTranslog(ctx context.Context) error {
	rec := e.opts.Recovery
	if rec == nil {
		rec = new(Recovery)
	}
	e.dur.recovery = rec
	rec.setStage(RecoveryLoading)
	defer rec.setStage(RecoveryDone)
	if e.opts.CheckIntegrityOnOpen {
		if err := e.checkCommitIntegrity(); err != nil {
			return err
		}
	}
	if e.opts.TranslogPath == "" {
		return e.settleTerm(commitTerm(e.w.LastCommit()))
	}
	// The translog syncs in the background every SyncInterval; Request
	// durability additionally waits for a sync per operation or bulk
	// (logOp, Bulk.Sync), which lets a bulk append without fsyncing.
	e.dur.mode.Store(uint32(e.opts.Durability))
	// A replica's recovery may have left a translog reset half done.
	var uuid string
	if last := e.w.LastCommit(); last != nil {
		uuid = last.UserData[UserDataTranslogUUID]
	}
	if err := finishTranslogReset(e.opts.TranslogPath, uuid); err != nil {
		return err
	}
	tl, err := translog.Open(ctx, e.opts.TranslogPath, translog.Options{Durability: translog.Async,
		SyncInterval: e.opts.SyncInterval, Logger: e.opts.Logger})
	if err != nil {
		return fmt.Errorf("engine: open translog %s: %w", e.opts.TranslogPath, err)
	}
	err = e.settleTerm(max(commitTerm(e.w.LastCommit()), int64(tl.Stats().MaxTerm)))
	if err == nil {
		err = e.replayTranslog(ctx, tl)
	}
	if err != nil {
		tl.Close()
		return err
	}
	e.dur.tl = tl
	e.dur.lastCommit = time.Now()
	e.dur.stop, e.dur.done = make(chan struct{}), make(chan struct{})
	go e.committer()
	return nil
}

// checkCommitIntegrity runs the codec's full check on every segment of the
// last commit.
func (e *Engine) checkCommitIntegrity() error {
	si := e.w.LastCommit()
	if si == nil {
		return nil
	}
	ic, ok := e.opts.Codec.(integrityChecker)
	if !ok {
		e.opts.Logger.Warn("engine: codec cannot check integrity; skipped", "codec", e.opts.Codec.Name())
		return nil
	}
	for i := range si.Segments {
		info := si.Segments[i].Info
		if err := ic.CheckIntegrity(e.dir, &info); err != nil {
			return fmt.Errorf("engine: commit %d: segment %s: %w", si.Generation, info.Name, err)
		}
	}
	return nil
}

// settleTerm sets the engine's term at open from Options.PrimaryTerm and
// the highest term the commit and the translog hold, and jumps the
// segment counter to the term's range.
func (e *Engine) settleTerm(known int64) error {
	term, err := adoptTerm(e.opts.PrimaryTerm, known)
	if err != nil {
		return err
	}
	e.term.Store(term)
	e.w.segments.raiseCounter(termCounterFloor(term))
	return nil
}

// replayTranslog applies the translog's operations above the last
// commit's SeqNo. The translog is in append order, not sequence order
// (concurrent writers append after taking their numbers), and after a
// change of primary it may hold two records for one seqNo, so replay
// decides first which record wins:
//
//   - a trim record voids the older terms' records above its bound before
//     it (the snapshot never returns them);
//   - of the records of one seqNo, the one with the highest term wins (a
//     new primary reassigned the number; a no-op filling a gap wins over
//     the old primary's unacknowledged operation); the others are void;
//   - per id, the winning record with the highest seqNo wins.
//
// A first pass finds each id's winner (and, only when records of more
// than one term are above the commit, each seqNo's highest term first);
// the last pass applies the winners in seqNo order, each with its
// recorded number (AdvanceSeqNo skips the gaps superseded, void or
// never-logged operations leave), holding back only the few records that
// arrived ahead of a lower number. Replayed operations are not logged
// again; afterwards the writer continues after the highest number seen,
// so new operations outrank every logged one on the next replay, and the
// seqNos between the commit and that number that no record holds are
// filled with no-ops of the engine's term (fillGaps).
func (e *Engine) replayTranslog(ctx context.Context, tl *translog.Translog) error {
	var from, committed int64
	last := e.w.LastCommit()
	if last != nil {
		from, committed = last.SeqNo, last.SeqNo
		if want, ok := last.UserData[UserDataTranslogUUID]; ok && want != tl.UUID().String() {
			return fmt.Errorf("engine: translog %s is %s but commit %d needs %s: %w",
				e.opts.TranslogPath, tl.UUID(), last.Generation, want, translog.ErrCorrupt)
		}
		// A replica's commit (a promotion) may hold operations an old
		// primary never acknowledged, at seqNos the new history gave to
		// others: replay from the global checkpoint it knew, by id, over
		// them (replaying an operation the segments hold is harmless).
		if g, err := strconv.ParseInt(last.UserData[UserDataGlobalCheckpoint], 10, 64); err == nil && g < from {
			from = max(g, 0)
		}
		// Never below what the translog can give back: operations a copy
		// got as files only (a relocation target whose primary logged
		// nothing past the copied checkpoint, a replica whose translog was
		// trimmed at its commit) are in its segments alone, and resetting
		// below them would hand their seqNos to new writes.
		if st := tl.Stats(); st.Ops == 0 || st.MinSeqNo > st.MaxSeqNo {
			from = committed
		} else if lowest := int64(st.MinSeqNo) - 1; lowest > from {
			from = min(lowest, committed)
		}
		if from < committed {
			e.w.resetSeqNo(from)
			e.dur.recommit, e.dur.replayedFrom = true, from
		}
	}
	start := time.Now()
	st := tl.Stats()
	seen, err := newSeqSet(from, int64(st.MaxSeqNo))
	if err != nil {
		return err
	}
	type winner struct {
		seq  int64
		term uint64
	}
	latest := make(map[string]winner)
	// In-place doc-values updates are not per-id winners: each applies,
	// in seqNo order, unless the id's winning index or delete comes after
	// it (it then updated a doc that is gone).
	type dvOp struct {
		id   string
		seq  int64
		term uint64
	}
	var dvOps []dvOp
	maxSeen := from
	var total int
	var minTerm, maxTerm uint64 = math.MaxUint64, 0
	// seqTerm: each seqNo's highest term, when more than one term is
	// above the commit (nil: every record of a seqNo has the same term).
	var seqTerm map[int64]uint64
	collect := func(op *translog.Op) error {
		if op.Type == translog.OpNoOp {
			return nil
		}
		seq := int64(op.SeqNo)
		if seqTerm != nil && seqTerm[seq] != op.PrimaryTerm {
			return nil // void: a newer primary reassigned seq
		}
		if op.Type == translog.OpUpdateDocValues {
			dvOps = append(dvOps, dvOp{string(op.ID), seq, op.PrimaryTerm})
			return nil
		}
		if w, ok := latest[string(op.ID)]; !ok || seq > w.seq || seq == w.seq && op.PrimaryTerm > w.term {
			latest[string(op.ID)] = winner{seq, op.PrimaryTerm}
		}
		return nil
	}
	rec := e.dur.recovery
	rec.setStage(RecoveryScanning)
	err = scanTranslog(ctx, tl, from, rec, func(op *translog.Op) error {
		total++
		seq := int64(op.SeqNo)
		maxSeen = max(maxSeen, seq)
		seen.add(seq)
		minTerm, maxTerm = min(minTerm, op.PrimaryTerm), max(maxTerm, op.PrimaryTerm)
		return collect(op)
	})
	if err != nil {
		return err
	}
	if total == 0 {
		return nil
	}
	if minTerm != maxTerm {
		seqTerm = make(map[int64]uint64)
		clear(latest)
		dvOps = dvOps[:0]
		err = scanTranslog(ctx, tl, from, rec, func(op *translog.Op) error {
			seq := int64(op.SeqNo)
			seqTerm[seq] = max(seqTerm[seq], op.PrimaryTerm)
			return nil
		})
		if err == nil {
			err = scanTranslog(ctx, tl, from, rec, collect)
		}
		if err != nil {
			return err
		}
	}
	order := make([]int64, 0, len(latest)+len(dvOps))
	for _, w := range latest {
		order = append(order, w.seq)
	}
	keepDV := make(map[int64]uint64, len(dvOps))
	for _, u := range dvOps {
		if w, ok := latest[u.id]; (!ok || w.seq < u.seq) && keepDV[u.seq] == 0 {
			keepDV[u.seq] = u.term
			order = append(order, u.seq)
		}
	}
	slices.Sort(order)
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] {
			return fmt.Errorf("engine: translog holds two ids at seq %d in one term: %w", order[i], translog.ErrCorrupt)
		}
	}
	held := make(map[int64]translog.Op)
	var applied int
	rec.setStage(RecoveryReplaying)
	rec.opsTotal.Store(int64(len(order)))
	err = scanTranslog(ctx, tl, from, rec, func(op *translog.Op) error {
		if op.Type == translog.OpNoOp {
			return nil
		}
		seq := int64(op.SeqNo)
		if op.Type == translog.OpUpdateDocValues {
			if keepDV[seq] != op.PrimaryTerm || applied == len(order) || seq < order[applied] {
				return nil // superseded, void, or a duplicate of one applied
			}
		} else if w := latest[string(op.ID)]; w.seq != seq || w.term != op.PrimaryTerm || applied == len(order) || seq < order[applied] {
			return nil // superseded, void, or a duplicate of one applied
		}
		if seq != order[applied] {
			// Ahead of a lower number still to come: keep a copy (the
			// snapshot reuses its buffer).
			held[seq] = translog.Op{Type: op.Type, SeqNo: op.SeqNo, PrimaryTerm: op.PrimaryTerm,
				ID: slices.Clone(op.ID), Routing: slices.Clone(op.Routing), Source: slices.Clone(op.Source)}
			return nil
		}
		if err := e.replayOp(ctx, op); err != nil {
			return err
		}
		rec.replayed.Add(1)
		for applied++; applied < len(order); applied++ {
			h, ok := held[order[applied]]
			if !ok {
				break
			}
			delete(held, order[applied])
			if err := e.replayOp(ctx, &h); err != nil {
				return err
			}
			rec.replayed.Add(1)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if applied != len(order) {
		return fmt.Errorf("engine: translog replay applied %d of %d operations: %w", applied, len(order), translog.ErrCorrupt)
	}
	e.w.AdvanceSeqNo(maxSeen + 1)
	gaps, err := e.fillGaps(ctx, tl, seen, committed, maxSeen)
	if err != nil {
		return err
	}
	rec.setStage(RecoveryRefreshing)
	if _, err := e.w.Refresh(ctx, true); err != nil {
		return fmt.Errorf("engine: refresh after translog replay: %w", err)
	}
	// took: scan, replay and refresh; recovery_took adds opening the
	// translog, which reads and checks every record first.
	p := rec.Progress()
	e.opts.Logger.Info("engine: recovered from translog", "from_seq_no", from, "max_seq_no", maxSeen,
		"ops", total, "applied", applied, "gaps_filled", gaps, "terms", fmt.Sprintf("%d..%d", minTerm, maxTerm),
		"bytes", p.BytesTotal, "truncated_bytes", tl.Stats().TruncatedBytes,
		"took", time.Since(start), "recovery_took", p.Elapsed)
	return nil
}

// fillGaps logs a no-op of the engine's term for every seqNo above the
// commit (committed) up to maxSeen that no record holds (an operation that had its
// number when the process died, before it was logged; or one a trim
// record voided), so that every number up to maxSeen is accounted for
// — a copy's local checkpoint can pass it — and a record an old primary
// gave one of these numbers, wherever it still is, loses to the no-op's
// newer term (Elasticsearch's fillSeqNoGaps). It returns how many it
// logged.
func (e *Engine) fillGaps(ctx context.Context, tl *translog.Translog, seen *seqSet, committed, maxSeen int64) (int, error) {
	var ops []translog.Op
	term := uint64(e.term.Load())
	// Below the commit's seqNo the segments hold what the log lacks.
	for seq := max(seen.from, committed) + 1; seq <= maxSeen; seq++ {
		if !seen.has(seq) {
			ops = append(ops, translog.Op{Type: translog.OpNoOp, SeqNo: uint64(seq), PrimaryTerm: term, Source: []byte("gap filled at open")})
		}
	}
	if len(ops) == 0 {
		return 0, nil
	}
	if _, err := tl.AddBatch(ctx, ops); err != nil {
		return 0, fmt.Errorf("engine: filling %d seqNo gaps: %w", len(ops), err)
	}
	if err := tl.Sync(ctx); err != nil {
		return 0, fmt.Errorf("engine: filling %d seqNo gaps: %w", len(ops), err)
	}
	return len(ops), nil
}

// seqSet is a set of the seqNos above from, a bit per number.
type seqSet struct {
	from int64
	bits []uint64
}

// maxSeqSetBits bounds a seqSet: a translog spanning more numbers than
// this above its commit is not one this engine wrote.
const maxSeqSetBits = 1 << 34

func newSeqSet(from, maxSeq int64) (*seqSet, error) {
	n := max(maxSeq-from, 0)
	if n > maxSeqSetBits {
		return nil, fmt.Errorf("engine: translog spans seqNos %d..%d above its commit: %w", from+1, maxSeq, translog.ErrCorrupt)
	}
	return &seqSet{from: from, bits: make([]uint64, (n+63)/64)}, nil
}

func (s *seqSet) add(seq int64) {
	if i := seq - s.from - 1; i >= 0 && i < int64(len(s.bits))*64 {
		s.bits[i/64] |= 1 << (i % 64)
	}
}

func (s *seqSet) has(seq int64) bool {
	i := seq - s.from - 1
	return i >= 0 && i < int64(len(s.bits))*64 && s.bits[i/64]&(1<<(i%64)) != 0
}

// scanTranslog calls fn for every retained operation above seq, and
// reports how far it read to rec every 1024 operations.
func scanTranslog(ctx context.Context, tl *translog.Translog, above int64, rec *Recovery, fn func(*translog.Op) error) error {
	snap, err := tl.Snapshot(ctx, uint64(above)+1)
	if err != nil {
		return fmt.Errorf("engine: translog snapshot: %w", err)
	}
	defer snap.Close()
	ops, bytes := snap.Size()
	if RecoveryStage(rec.stage.Load()) == RecoveryScanning {
		rec.opsTotal.Store(ops)
	}
	rec.bytesTotal.Store(bytes)
	report := func() {
		ops, bytes := snap.Read()
		if RecoveryStage(rec.stage.Load()) == RecoveryScanning {
			rec.ops.Store(ops)
		}
		rec.bytes.Store(bytes)
	}
	defer report()
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			report()
		}
		op, err := snap.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("engine: translog replay: %w", err)
		}
		if err := fn(op); err != nil {
			return err
		}
	}
}

// replayOp applies one logged operation to the writer, with its recorded
// sequence number, without logging it.
func (e *Engine) replayOp(ctx context.Context, op *translog.Op) error {
	want := int64(op.SeqNo)
	e.w.AdvanceSeqNo(want)
	var seq int64
	var err error
	switch op.Type {
	case translog.OpDelete:
		seq, _, err = e.w.DeleteWith(ctx, op.ID, OpOptions{PrimaryTerm: int64(op.PrimaryTerm)})
	case translog.OpIndex:
		doc, perr := e.parse(op.ID, op.Routing, op.Source, true)
		if perr != nil {
			return fmt.Errorf("engine: replay seq %d: %w", want, perr)
		}
		seq, _, err = e.w.UpdateWith(ctx, op.ID, doc, OpOptions{PrimaryTerm: int64(op.PrimaryTerm)})
		e.docs.Put(doc)
	case translog.OpUpdateDocValues:
		dv, perr := e.parseDocValues(op.ID, op.Source)
		if perr != nil {
			return fmt.Errorf("engine: replay seq %d: %w", want, perr)
		}
		seq, err = e.applyDocValues(ctx, op.ID, dv, OpOptions{PrimaryTerm: int64(op.PrimaryTerm)}, func(int64) error {
			_, err := e.w.Refresh(ctx, true) // no refresher yet
			return err
		})
		if errors.Is(err, ErrDocumentMissing) {
			// Acknowledged against a doc this history no longer has (an old
			// primary's): nothing to update, and the seqNo stays used.
			e.opts.Logger.Warn("engine: replayed doc-values update of a missing document", "id", string(op.ID), "seq_no", want)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("engine: replay %v %q (seq %d): %w", op.Type, op.ID, want, err)
	}
	if seq != want {
		return fmt.Errorf("engine: replay of seq %d got seq %d", want, seq)
	}
	return nil
}

// RecoveryStage is how far Open is.
type RecoveryStage int32

const (
	// RecoveryLoading: loading the last commit, checking its segments
	// (CheckIntegrityOnOpen) and opening the translog, which reads and
	// checks every record.
	RecoveryLoading RecoveryStage = iota
	// RecoveryScanning: first pass over the translog, finding each id's
	// newest operation.
	RecoveryScanning
	// RecoveryReplaying: second pass, applying those operations.
	RecoveryReplaying
	// RecoveryRefreshing: publishing the replayed operations.
	RecoveryRefreshing
	// RecoveryDone: Open returned (successfully or not).
	RecoveryDone
)

func (s RecoveryStage) String() string {
	switch s {
	case RecoveryLoading:
		return "loading"
	case RecoveryScanning:
		return "scanning translog"
	case RecoveryReplaying:
		return "replaying translog"
	case RecoveryRefreshing:
		return "refreshing"
	case RecoveryDone:
		return "done"
	}
	return fmt.Sprintf("RecoveryStage(%d)", int32(s))
}

// Recovery follows an engine's Open: pass one in TranslogOptions.Recovery
// and read its Progress from another goroutine while Open runs (a node
// shows it for shards still recovering; Engine.Recovery returns it after).
// Reading it costs a few atomic loads.
type Recovery struct {
	stage             atomic.Int32
	ops, opsTotal     atomic.Int64
	bytes, bytesTotal atomic.Int64
	replayed          atomic.Int64
	began             [RecoveryDone + 1]atomic.Int64 // when each stage began, unix ns
}

// RecoveryProgress is a Recovery at one moment.
type RecoveryProgress struct {
	Stage RecoveryStage
	// Ops of OpsTotal operations and Bytes of BytesTotal translog bytes
	// are done in the current stage: read while scanning (OpsTotal is the
	// records of the generations to read, an upper bound), applied while
	// replaying (OpsTotal is the operations to apply: the newest per id).
	Ops, OpsTotal     int64
	Bytes, BytesTotal int64
	// Replayed counts the operations applied so far, Elapsed the time
	// since the translog recovery started (until it finished, once Done).
	Replayed int64
	Elapsed  time.Duration
}

// Progress returns the current progress.
func (r *Recovery) Progress() RecoveryProgress {
	p := RecoveryProgress{Stage: RecoveryStage(r.stage.Load()), Ops: r.ops.Load(), OpsTotal: r.opsTotal.Load(),
		Bytes: r.bytes.Load(), BytesTotal: r.bytesTotal.Load(), Replayed: r.replayed.Load()}
	if p.Stage >= RecoveryReplaying {
		p.Ops = p.Replayed
	}
	p.Elapsed = r.between(RecoveryLoading, RecoveryDone)
	return p
}

func (r *Recovery) setStage(s RecoveryStage) {
	r.began[s].Store(time.Now().UnixNano())
	r.stage.Store(int32(s))
}

// stageTime is how long stage s took (so far).
func (r *Recovery) stageTime(s RecoveryStage) time.Duration { return r.between(s, s+1) }

// between is the time from stage from's start to the next stage at or
// after to that began (or now).
func (r *Recovery) between(from, to RecoveryStage) time.Duration {
	start := r.began[from].Load()
	if start == 0 {
		return 0
	}
	end := time.Now().UnixNano()
	for s := to; s <= RecoveryDone; s++ {
		if t := r.began[s].Load(); t != 0 {
			end = t
			break
		}
	}
	return time.Duration(end - start)
}

// Recovery returns how the engine's Open went: the operations it replayed
// from the translog and how long that took.
func (e *Engine) Recovery() *Recovery { return e.dur.recovery }
