package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// liveDocsFiles writes segments' live docs as generation files (Lucene's
// ReadersAndUpdates.writeLiveDocs), for commit points and — without an
// fsync, as Lucene's writeAllDeletes does for NRT replication — for
// replication checkpoints, which a replica must be able to copy. A
// segment's newest file is reused while its live docs are the same
// bitset. Generations come from the segment counter, so a live-docs file
// name is never written twice with other bytes, across primaries too
// (see termCounterFloor); a segment's generations only grow.
type liveDocsFiles struct {
	mu      sync.Mutex // guards segState's liveFile, liveFileOf, delGen
	dir     store.Directory
	codec   index.Codec
	fd      *fileDeleter
	counter *atomic.Int64 // segmentSet.counter
}

// segments describes r's segments as a commit point or checkpoint lists
// them, writing the live-docs files they lack (with ioctx). It takes a
// reference on each live-docs file it lists, which the caller drops with
// release once it referenced them itself: a concurrent commit or
// checkpoint may meanwhile give a segment a newer file.
func (lf *liveDocsFiles) segments(r *Reader, ioctx store.IOContext) (segs []CommitSegment, release func(), err error) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	var held []string
	release = func() { lf.fd.decRef(held) }
	defer func() {
		if err != nil {
			release()
		}
	}()
	out := make([]CommitSegment, 0, len(r.segs))
	for i, s := range r.segs {
		live := r.leaves[i].Live
		cs := CommitSegment{Info: *s.info, SizeBytes: s.sizeBytes}
		if live != nil {
			if live != s.liveFileOf {
				if err := lf.writeLocked(s, live, ioctx); err != nil {
					return nil, nil, err
				}
			}
			cs.DelGen, cs.LiveDocs = s.delGen, s.liveFile
			lf.fd.incRef([]string{s.liveFile})
			held = append(held, s.liveFile)
			cs.DelCount = s.info.MaxDoc - live.Cardinality()
		}
		if dv := readerDocValuesUpdates(r.leaves[i].Reader); dv != nil {
			if f := s.dvFile.Load(); f == nil || dv != f.of {
				if err := lf.writeDocValuesLocked(s, dv, ioctx); err != nil {
					return nil, nil, err
				}
			}
			f := s.dvFile.Load()
			cs.DVGen, cs.DocValuesUpdates = f.gen, f.name
			lf.fd.incRef([]string{f.name})
			held = append(held, f.name)
		}
		out = append(out, cs)
	}
	return out, release, nil
}

// writeLocked writes live as s's next live-docs generation and makes it
// s's file.
func (lf *liveDocsFiles) writeLocked(s *segState, live *index.FixedBitSet, ioctx store.IOContext) error {
	gen := max(s.delGen+1, lf.counter.Add(1))
	name, err := lf.codec.WriteLiveDocs(lf.dir, s.info, gen, live, ioctx)
	if err != nil {
		return fmt.Errorf("live docs of %s: %w", s.info.Name, err)
	}
	s.setLiveFile(name, live, gen)
	return nil
}

// setLiveFile makes name (holding live, generation gen) the segment's
// live-docs file, moving the segment's file reference to it. The caller
// holds liveDocsFiles.mu or owns s alone (loading a commit).
func (s *segState) setLiveFile(name string, live *index.FixedBitSet, gen int64) {
	s.fd.incRef([]string{name})
	if s.liveFile != "" {
		s.fd.decRef([]string{s.liveFile})
	}
	s.liveFile, s.liveFileOf, s.delGen = name, live, gen
}

// writeDocValuesLocked writes dv, all of s's updates a reader sees, as s's
// next doc-values updates generation and makes it s's file.
func (lf *liveDocsFiles) writeDocValuesLocked(s *segState, dv *docValuesUpdates, ioctx store.IOContext) error {
	gen := lf.counter.Add(1)
	if f := s.dvFile.Load(); f != nil {
		gen = max(gen, f.gen+1)
	}
	name, err := lf.codec.WriteDocValuesUpdates(lf.dir, s.info, gen, dv.flatten(), ioctx)
	runtime.KeepAlive(dv) // flatten may give a file run's own bytes
	if err != nil {
		return fmt.Errorf("doc-values updates of %s: %w", s.info.Name, err)
	}
	s.setDocValuesFile(name, dv, gen)
	return nil
}

// dvFileRef is a segment's doc-values updates generation file: its name,
// the updates it holds and its generation.
type dvFileRef struct {
	name string
	of   *docValuesUpdates
	gen  int64
}

// setDocValuesFile makes name (holding dv, generation gen) the segment's
// doc-values updates file, moving its file reference, as setLiveFile.
func (s *segState) setDocValuesFile(name string, dv *docValuesUpdates, gen int64) {
	s.fd.incRef([]string{name})
	if old := s.dvFile.Swap(&dvFileRef{name: name, of: dv, gen: gen}); old != nil {
		s.fd.decRef([]string{old.name})
	}
}

// loadDocValuesUpdates reads the doc-values updates generation a commit
// point or checkpoint names for s, if it is not s's already, and layers it
// over s. The caller owns s or holds the lock that guards it.
func (s *segState) loadDocValuesUpdates(c index.Codec, dir store.Directory, cs *CommitSegment) error {
	old := s.dvFile.Load()
	if old != nil && cs.DocValuesUpdates == old.name || old == nil && cs.DocValuesUpdates == "" {
		return nil
	}
	if cs.DocValuesUpdates == "" {
		return fmt.Errorf("%w: segment %s lost its doc-values updates (%s before)", ErrInvalidCheckpoint, s.info.Name, old.name)
	}
	f, err := c.OpenDocValuesUpdates(dir, s.info, cs.DVGen)
	if err != nil {
		return fmt.Errorf("engine: doc-values updates of %s: %w", s.info.Name, err)
	}
	dv := openDocValuesFile(cs.DocValuesUpdates, f)
	s.setDocValuesUpdates(dv)
	s.setDocValuesFile(cs.DocValuesUpdates, dv, cs.DVGen)
	return nil
}

// readerDocValuesUpdates is the updates a leaf reader layers, or nil.
func readerDocValuesUpdates(r index.LeafReader) *docValuesUpdates {
	if ur, ok := r.(*updatedLeafReader); ok {
		return ur.dv
	}
	return nil
}
