package translog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Snapshot iterates over the operations retained when it was taken, in the
// order they were written (not sorted by sequence number: concurrent
// writers interleave), for replay after recovery or to ship to a replica.
// It holds its files open, so trimming does not pull them away.
type Snapshot struct {
	from  uint64
	files []*os.File
	gens  []genInfo
	i     int
	rr    *recordReader
	uuid  UUID
	trims []trimPoint
	// ops and bytes of the generations finished reading.
	doneOps, doneBytes int64
}

// Snapshot returns the operations with sequence number >= fromSeqNo,
// without those a trim record voids (and without the trim records). Ops
// and trim records added after the call are not included.
func (t *Translog) Snapshot(ctx context.Context, fromSeqNo uint64) (*Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return nil, err
	}
	if err := t.flushLocked(); err != nil {
		return nil, err
	}
	s := &Snapshot{from: fromSeqNo, uuid: t.uuid, trims: slices.Clone(t.trims)}
	cur := t.cur
	cur.size = t.written
	for _, g := range append(t.old[:len(t.old):len(t.old)], cur) {
		if g.ops == 0 || g.maxSeq < fromSeqNo {
			continue
		}
		f, err := os.Open(filepath.Join(t.dir, genFileName(g.gen)))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("translog: %w", err)
		}
		s.files = append(s.files, f)
		s.gens = append(s.gens, g)
	}
	return s, ctx.Err()
}

// Next returns the next operation, valid until the following call, or
// io.EOF after the last.
func (s *Snapshot) Next() (*Op, error) {
	for {
		if s.rr == nil {
			if s.i == len(s.files) {
				return nil, io.EOF
			}
			rr, err := newRecordReader(s.files[s.i], s.gens[s.i].gen, s.uuid, s.gens[s.i].size)
			if err != nil {
				return nil, err
			}
			s.rr = rr
		}
		off := s.rr.off
		op, err := s.rr.next()
		switch {
		case errors.Is(err, io.EOF):
			s.doneOps += s.rr.info.ops
			s.doneBytes += s.gens[s.i].size
			s.rr = nil
			s.i++
			continue
		case err != nil:
			// Recovery validated these bytes, so this is new damage.
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, s.files[s.i].Name(), err)
		}
		if op.Type != OpTrim && op.SeqNo >= s.from && !s.trimmed(s.gens[s.i].gen, off, op) {
			return op, nil
		}
	}
}

// trimmed reports whether a trim record after op voids it.
func (s *Snapshot) trimmed(gen uint64, off int64, op *Op) bool {
	for i := range s.trims {
		if s.trims[i].voids(gen, off, op) {
			return true
		}
	}
	return false
}

// Size returns the records and bytes of the generations the snapshot
// reads: an upper bound of what Next returns (it skips ops below
// fromSeqNo).
func (s *Snapshot) Size() (ops, bytes int64) {
	for _, g := range s.gens {
		ops, bytes = ops+g.ops, bytes+g.size
	}
	return ops, bytes
}

// Read returns the records and bytes read so far, to compare with Size.
func (s *Snapshot) Read() (ops, bytes int64) {
	ops, bytes = s.doneOps, s.doneBytes
	if s.rr != nil {
		ops, bytes = ops+s.rr.info.ops, bytes+s.rr.off
	}
	return ops, bytes
}

// Close releases the snapshot's files.
func (s *Snapshot) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
