package engine

import (
	"errors"
	"io/fs"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// segState is one segment of the index as the writer tracks it: the open
// reader, its current live docs and how far buffered deletes have been
// applied to it. It is ref-counted: the writer's segment list holds one
// reference and every published Reader holding it one more; at zero the
// reader is closed and its files released to the fileDeleter (Lucene's
// ReadersAndUpdates + the reader pool).
type segState struct {
	info   *index.SegmentInfo
	reader index.SegmentReader
	refs   atomic.Int32
	files  []string
	fd     *fileDeleter

	// Writer-side state, guarded by segmentSet.mu (the refresh
	// goroutine is the only one that changes it after the segment joins
	// the list).
	live       *index.FixedBitSet // nil: all live
	liveShared bool               // live is referenced by a published Reader: clone before changing
	delCount   int
	delCursor  *delNode // last delete applied
	flushGen   int64    // refresh generation whose swap the DWPT preceded
	ids        idDeleter
	sizeBytes  int64
	bloom      *idBloom // immutable once the segment is shared
	// The newest live-docs file written (by a commit or a checkpoint) or
	// loaded for the segment, the bitset it holds and its generation,
	// guarded by liveDocsFiles.mu. The segment holds a fileDeleter
	// reference on liveFile, as on its core files.
	liveFile   string
	liveFileOf *index.FixedBitSet
	delGen     int64
	// In-place doc-values updates (dvupdates.go): dv is the current
	// state and leaf the reader layering it (nil: none), dvPending what a
	// refresh's walk of the queue found and has not yet frozen. dvFile is
	// the newest generation file written or loaded (nil: none), with a
	// fileDeleter reference; changed under liveDocsFiles.mu like liveFile,
	// and atomic because AddIndexes of another index reads it to link the
	// file.
	dv        *docValuesUpdates
	leaf      index.LeafReader
	dvPending map[string]*dvPending
	dvFile    atomic.Pointer[dvFileRef]
	// metas describes the core files for checkpoints (metaOnce).
	metaOnce sync.Once
	metas    []FileMeta
	metaErr  error
}

func newSegState(info *index.SegmentInfo, r index.SegmentReader, fd *fileDeleter, dir store.Directory) *segState {
	s := newSegStateNoBloom(info, r, fd, dir)
	s.bloom = newIDBloom(r)
	return s
}

// newSegStateNoBloom leaves the bloom filter to the caller (merges build it
// with pause checkpoints).
func newSegStateNoBloom(info *index.SegmentInfo, r index.SegmentReader, fd *fileDeleter, dir store.Directory) *segState {
	s := &segState{info: info, reader: r, fd: fd, files: append([]string(nil), info.Files...)}
	if info.ForeignVersions {
		s.leaf = newUpdatedLeafReader(r, nil, true)
	}
	s.refs.Store(1)
	fd.incRef(s.files)
	for _, f := range s.files {
		if n, err := dir.FileLength(f); err == nil {
			s.sizeBytes += n
		}
	}
	return s
}

func (s *segState) incRef() { s.refs.Add(1) }

func (s *segState) decRef() {
	if n := s.refs.Add(-1); n == 0 {
		if err := s.reader.Close(); err != nil {
			slog.Warn("engine: closing segment reader", "segment", s.info.Name, "err", err)
		}
		s.fd.decRef(s.files)
		if s.liveFile != "" {
			s.fd.decRef([]string{s.liveFile})
		}
		if f := s.dvFile.Load(); f != nil {
			s.fd.decRef([]string{f.name})
		}
	} else if n < 0 {
		panic("engine: segment " + s.info.Name + " released too often")
	}
}

func (s *segState) numDocs() int { return s.info.MaxDoc - s.delCount }

// fileDeleter deletes index files once nothing references them (Lucene's
// IndexFileDeleter): segments (open in the writer or in a reader) and commit
// points incRef their files. Deletion failures are retried on the next
// decRef, so a file a platform refuses to delete is not leaked forever.
type fileDeleter struct {
	dir     store.Directory
	mu      sync.Mutex
	refs    map[string]int
	pending map[string]bool // ref count hit zero but delete failed
	deleted atomic.Int64
}

func newFileDeleter(dir store.Directory) *fileDeleter {
	return &fileDeleter{dir: dir, refs: make(map[string]int), pending: make(map[string]bool)}
}

func (d *fileDeleter) incRef(files []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range files {
		d.refs[f]++
		delete(d.pending, f)
	}
}

func (d *fileDeleter) decRef(files []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range files {
		switch n := d.refs[f]; {
		case n > 1:
			d.refs[f] = n - 1
		case n == 1:
			delete(d.refs, f)
			d.pending[f] = true
		default:
			panic("engine: file " + f + " released too often")
		}
	}
	for f := range d.pending {
		// Gone already (a promoted replica's files: the new primary's
		// open deleted what its commit lacks) is deleted.
		if err := d.dir.DeleteFile(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("engine: deleting unreferenced file; will retry", "file", f, "err", err)
			continue
		}
		delete(d.pending, f)
		d.deleted.Add(1)
	}
}

// tryIncRef takes a reference on a file something references already,
// and reports whether it did: one nothing references may be being
// deleted.
func (d *fileDeleter) tryIncRef(f string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refs[f] == 0 {
		return false
	}
	d.refs[f]++
	return true
}

// refCount reports a file's references.
func (d *fileDeleter) refCount(f string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refs[f]
}

// segmentName is Lucene's "_" + base-36 counter.
func segmentName(n int64) string { return "_" + strconv.FormatInt(n, 36) }
