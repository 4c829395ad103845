package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// verifyChunk is how much of a file is checksummed between two pacing
// steps: a throttle wait, a CPU budget slot, a merge checkpoint. At the
// ~10 GB/s of CRC32 here a chunk costs ~100 µs of CPU once its pages are
// in memory, so a slot is never held long.
const verifyChunk = 1 << 20

// FileStatus is the outcome of verifying one file.
type FileStatus uint8

const (
	// FileOK: the checksum matches.
	FileOK FileStatus = iota
	// FileCorrupt: the file is damaged (FileCheck.Err wraps
	// index.ErrCorrupt and names the file).
	FileCorrupt
	// FileGone: the file was deleted before it could be opened — merged
	// away, or its commit superseded. Not an error: files are immutable,
	// and one deleted once opened is read to the end.
	FileGone
	// FileUnreadable: the file could not be opened for another reason
	// (permissions, an I/O error at open); Err says why. Not taken as
	// damage.
	FileUnreadable
)

func (s FileStatus) String() string {
	switch s {
	case FileOK:
		return "ok"
	case FileCorrupt:
		return "corrupt"
	case FileGone:
		return "gone"
	case FileUnreadable:
		return "unreadable"
	}
	return fmt.Sprintf("FileStatus(%d)", uint8(s))
}

// FileCheck is the result of verifying one file.
type FileCheck struct {
	Name   string
	Bytes  int64 // the file's length, once checked to the end
	Status FileStatus
	Err    error // FileCorrupt, FileUnreadable
}

// VerifyOptions pace a verification (VerifyFiles, Engine.Verify).
type VerifyOptions struct {
	// BytesPerSec caps the read rate; 0 or negative: as fast as it goes.
	BytesPerSec int64
	// Budget, if set, is held (a cpubudget.Scrub slot, after every
	// waiting flush and merge) while each chunk is checksummed, and the
	// check steps aside while goroutines wait for a CPU.
	Budget *cpubudget.Budget
	// Deep (Engine.Verify only) also decodes every segment of the current
	// reader end to end — each term's postings against its statistics,
	// norms, doc values, every stored document (the codec's
	// CheckIntegrity, like Lucene's CheckIndex) — which costs a CPU-bound
	// scan and is not throttled.
	Deep bool
}

// pacer spaces out the chunks of a verification: a byte-rate token
// bucket, a CPU budget slot held per chunk, and (merges) a checkpoint.
type pacer struct {
	ctx     context.Context
	limiter *rate.Limiter // nil: no rate limit
	budget  *cpubudget.Budget
	slot    *cpubudget.Slot
	check   func() // a merge's checkpoint; nil for others
}

// newLimiter returns a token bucket of bytesPerSec holding one chunk (so
// lateness carries over but no burst exceeds a chunk), or nil when
// unlimited.
func newLimiter(bytesPerSec int64) *rate.Limiter {
	if bytesPerSec <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bytesPerSec), verifyChunk)
}

// pace runs before each chunk of n <= verifyChunk bytes: it gives back the
// slot the previous chunk held (first stepping aside for goroutines that
// wait for a CPU), waits for the rate, then takes a slot for this chunk.
func (p *pacer) pace(n int) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if p.slot != nil {
		p.slot.StepAside(p.ctx, nil)
		p.slot.Release()
	}
	if p.limiter != nil {
		if err := p.limiter.WaitN(p.ctx, min(n, verifyChunk)); err != nil {
			return err
		}
	}
	if p.budget != nil {
		if p.slot == nil {
			p.slot, _ = p.budget.Acquire(p.ctx, cpubudget.Scrub, 0)
		} else {
			p.slot.Reacquire(p.ctx)
		}
	}
	if p.check != nil {
		p.check()
	}
	return p.ctx.Err()
}

// done releases the slot the last chunk held.
func (p *pacer) done() { p.slot.Release() }

// fileVerifier is implemented by codecs that can verify one of their files'
// checksum in paced chunks (codec.Codec).
type fileVerifier interface {
	VerifyChecksum(name string, data []byte, chunk int, pace func(n int) error) error
}

// VerifyFiles checksums each named file of dir in full, decoding nothing:
// codec files against their CRC32 footers, commit points (segments_N)
// against theirs. It is what anything that copies or re-reads index files
// — replication, recovery, a scrub — checks them with. A file deleted
// before it could be opened is FileGone, not an error; one deleted while
// being read is read to the end (mmap keeps it). Only a cancelled ctx (or
// a failed rate wait) stops it early, returning what was done with the
// error.
func VerifyFiles(ctx context.Context, dir store.Directory, c index.Codec, names []string, opts VerifyOptions) ([]FileCheck, error) {
	p := &pacer{ctx: ctx, limiter: newLimiter(opts.BytesPerSec), budget: opts.Budget}
	defer p.done()
	out := make([]FileCheck, 0, len(names))
	for _, name := range names {
		fc, err := verifyFile(p, dir, c, name)
		if err != nil {
			return out, err
		}
		out = append(out, fc)
	}
	return out, nil
}

// verifyFile checksums one file, paced by p. The error is p's (the
// verification was interrupted); damage is reported in the FileCheck.
func verifyFile(p *pacer, dir store.Directory, c index.Codec, name string) (fc FileCheck, err error) {
	fc.Name = name
	in, oerr := dir.OpenInput(name)
	if oerr != nil {
		fc.Status, fc.Err = FileUnreadable, oerr
		if errors.Is(oerr, fs.ErrNotExist) {
			fc.Status, fc.Err = FileGone, nil
		}
		return fc, nil
	}
	defer in.Close() // unmapped as soon as it is checked
	// A scan reads each page once: sequential read-ahead, and pages
	// touched through this mapping do not count as recently used.
	store.Advise(in, store.AdviceSequential)
	data := in.Bytes()
	// An I/O error under a mapped page (a failing disk, a file cut short
	// underneath) is a fault; in this goroutine it panics instead of
	// killing the process, and the file is reported damaged.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			fc.Status = FileCorrupt
			fc.Err = fmt.Errorf("%w: %s: unreadable: memory fault at %#x", index.ErrCorrupt, name, re.Addr())
			err = nil
		}
	}()
	var verr error
	if strings.HasPrefix(name, commitPrefix) {
		// A commit point is small: checked (and parsed) at once.
		for off := 0; off < len(data) && verr == nil; off += verifyChunk {
			verr = p.pace(min(verifyChunk, len(data)-off))
		}
		if verr == nil {
			if _, derr := DecodeSegmentInfos(data); derr != nil {
				verr = fmt.Errorf("%s: %w", name, derr)
			}
		}
	} else if fv, ok := c.(fileVerifier); ok {
		verr = fv.VerifyChecksum(name, data, verifyChunk, p.pace)
	} else {
		fc.Status, fc.Err = FileUnreadable, fmt.Errorf("engine: codec %s cannot verify %s", c.Name(), name)
		return fc, nil
	}
	switch {
	case verr == nil:
		fc.Status = FileOK
	case errors.Is(verr, index.ErrCorrupt):
		fc.Status, fc.Err = FileCorrupt, verr
	default:
		return fc, verr // paced out: cancelled
	}
	fc.Bytes = int64(len(data))
	return fc, nil
}

// checkState is an engine's verification state: which files the
// scrubber's current pass has verified, and counters for Stats.
type checkState struct {
	mu       sync.Mutex
	verified map[string]int64 // file -> scrub pass that verified it
	passDone int64            // last pass whose every file was verified
	doneAt   time.Time        // when

	bytes, files, corrupt atomic.Int64
}

func (cs *checkState) stats() CheckStats {
	st := CheckStats{VerifiedBytes: cs.bytes.Load(), VerifiedFiles: cs.files.Load(), CorruptFiles: cs.corrupt.Load()}
	cs.mu.Lock()
	st.ScrubbedAt = cs.doneAt
	cs.mu.Unlock()
	return st
}

// record counts one file's check and returns its damage, if any.
func (cs *checkState) record(fc FileCheck) error {
	cs.bytes.Add(fc.Bytes)
	switch fc.Status {
	case FileOK:
		cs.files.Add(1)
	case FileCorrupt:
		cs.files.Add(1)
		cs.corrupt.Add(1)
		return fc.Err
	}
	return nil
}

// indexFiles lists the files the engine serves or would recover from: those
// of the current reader's segments and of the last commit point (itself,
// its segments' files and live-docs files), sorted.
func (e *Engine) indexFiles() []string {
	r := e.w.Acquire()
	var names []string
	for _, s := range r.segs {
		names = append(names, s.files...)
	}
	r.Release()
	if c := e.w.LastCommit(); c != nil {
		names = append(names, c.Files()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (e *Engine) verifyFiles() []string                     { return e.indexFiles() }
func (e *Engine) verifyDir() (store.Directory, index.Codec) { return e.dir, e.w.codec }
func (e *Engine) checkState() *checkState                   { return &e.checks }
func (e *Engine) acquireVerify() *Reader                    { return e.w.Acquire() }
func (e *Engine) unusable() bool                            { return e.Failure() != nil || e.w.isClosed() }
func (e *Engine) failCopy(source string, cause error)       { e.fail(source, cause) }
func (e *Engine) logger() *slog.Logger                      { return e.opts.Logger }

// VerifyResult is what Engine.Verify found.
type VerifyResult struct {
	Files []FileCheck
	// Segments: with Deep, each segment of the current reader decoded end
	// to end; Err wraps index.ErrCorrupt when damaged.
	Segments []SegmentCheck
	Bytes    int64 // checksummed
	Took     time.Duration
}

// SegmentCheck is the result of decoding one segment (VerifyOptions.Deep).
type SegmentCheck struct {
	Name string
	Err  error
}

// Err joins the damage found, or is nil.
func (r *VerifyResult) Err() error {
	var errs []error
	for _, f := range r.Files {
		if f.Status == FileCorrupt {
			errs = append(errs, f.Err)
		}
	}
	for _, s := range r.Segments {
		if s.Err != nil {
			errs = append(errs, s.Err)
		}
	}
	return errors.Join(errs...)
}

// segmentChecker is implemented by segment readers that can decode their
// whole segment (the codec's CheckIntegrity).
type segmentChecker interface {
	CheckIntegrity() error
}

// Verify checksums every file of the engine's current reader and last
// commit now, whatever the scrubber verified already, and with Deep decodes
// every segment too (the on-demand `sluice shard verify`). Damage fails the
// engine as the scrubber's does — the store is marked corrupted and
// Failure reports the first damaged file — and is reported per file in
// the result (VerifyResult.Err). A failed engine can still be verified.
// The error is for a verification that could not run to the end (ctx).
func (e *Engine) Verify(ctx context.Context, opts VerifyOptions) (VerifyResult, error) {
	return verifyCopy(ctx, e, opts)
}

// verifyCopy is Engine.Verify and Replica.Verify.
func verifyCopy(ctx context.Context, c verifiable, opts VerifyOptions) (VerifyResult, error) {
	start := time.Now()
	var res VerifyResult
	var err error
	dir, codec := c.verifyDir()
	cs := c.checkState()
	res.Files, err = VerifyFiles(ctx, dir, codec, c.verifyFiles(), opts)
	for _, fc := range res.Files {
		res.Bytes += fc.Bytes
		if derr := cs.record(fc); derr != nil {
			c.failCopy("verify", derr)
		}
	}
	if err == nil && opts.Deep {
		r := c.acquireVerify()
		for _, s := range r.segs {
			if err = ctx.Err(); err != nil {
				break
			}
			sc, ok := s.reader.(segmentChecker)
			if !ok {
				continue
			}
			sg := SegmentCheck{Name: s.info.Name, Err: sc.CheckIntegrity()}
			if errors.Is(sg.Err, index.ErrCorrupt) {
				cs.corrupt.Add(1)
				c.failCopy("verify", sg.Err)
			}
			res.Segments = append(res.Segments, sg)
		}
		r.Release()
	}
	res.Took = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("engine: verify: %w", err)
	}
	return res, nil
}

// verifyMergeInputs checksums every file of a merge's inputs before the
// merged segment is written (Lucene's SegmentMerger checks its readers'
// integrity first): a merge copies what it reads, and would otherwise
// turn a damaged input into a well-checksummed output. The inputs are
// pinned, so their files are all there. It pauses at the merge's
// checkpoints; damage is an error wrapping index.ErrCorrupt.
func (w *IndexWriter) verifyMergeInputs(ctx context.Context, m *oneMerge, check func()) error {
	p := &pacer{ctx: ctx, check: check}
	for _, s := range m.inputs {
		for _, name := range s.files {
			fc, err := verifyFile(p, w.dir, w.codec, name)
			if err != nil {
				return fmt.Errorf("engine: merge: verify %s: %w", name, err)
			}
			switch fc.Status {
			case FileCorrupt:
				return fmt.Errorf("engine: merge input %s: %w", s.info.Name, fc.Err)
			case FileGone, FileUnreadable:
				return fmt.Errorf("engine: merge input %s: %s %s: %v", s.info.Name, name, fc.Status, fc.Err)
			}
		}
	}
	return nil
}

// noteCorruption passes an error that reports a damaged file to
// WriterOptions.OnCorruption.
func (w *IndexWriter) noteCorruption(source string, err error) {
	if f := w.opts.OnCorruption; f != nil && errors.Is(err, index.ErrCorrupt) {
		f(source, err)
	}
}
