package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// SegmentInfos is a commit point (Lucene's segments_N): the segments of the
// index and their live-docs generations, the highest sequence number the
// commit contains, and user data (the translog's position, for recovery).
// It is written as "segments_<gen base 36>": a magic and version, a JSON
// body and a CRC32 footer, published by rename so a reader never sees half
// of one.
type SegmentInfos struct {
	Generation int64             `json:"generation"`
	SeqNo      int64             `json:"seq_no"`
	Counter    int64             `json:"counter"` // next segment name
	UserData   map[string]string `json:"user_data,omitempty"`
	Segments   []CommitSegment   `json:"segments"`
}

// CommitSegment is one segment of a commit point.
type CommitSegment struct {
	Info      index.SegmentInfo `json:"info"`
	DelGen    int64             `json:"del_gen"` // 0: no live-docs file
	DelCount  int               `json:"del_count"`
	LiveDocs  string            `json:"live_docs,omitempty"`
	SizeBytes int64             `json:"size_bytes"`
	// DVGen and DocValuesUpdates name the segment's in-place doc-values
	// updates generation file (0 and "": none).
	DVGen            int64  `json:"dv_gen,omitempty"`
	DocValuesUpdates string `json:"dv_updates,omitempty"`
}

// Files lists every file the commit point references, itself included.
func (si *SegmentInfos) Files() []string {
	files := []string{commitFileName(si.Generation)}
	for _, s := range si.Segments {
		files = append(files, s.Info.Files...)
		if s.LiveDocs != "" {
			files = append(files, s.LiveDocs)
		}
		if s.DocValuesUpdates != "" {
			files = append(files, s.DocValuesUpdates)
		}
	}
	return files
}

const (
	commitPrefix  = "segments_"
	pendingPrefix = "pending_segments_"
	commitMagic   = "SLSI"
	commitVersion = 1
)

func commitFileName(gen int64) string { return commitPrefix + strconv.FormatInt(gen, 36) }

func encodeSegmentInfos(si *SegmentInfos) ([]byte, error) {
	return frameJSON(commitMagic, commitVersion, si)
}

// DecodeSegmentInfos parses a commit point file; damage is an error wrapping
// index.ErrCorrupt.
func DecodeSegmentInfos(data []byte) (*SegmentInfos, error) {
	si := new(SegmentInfos)
	if err := unframeJSON(data, commitMagic, commitVersion, si); err != nil {
		return nil, fmt.Errorf("commit point: %w: %w", err, index.ErrCorrupt)
	}
	return si, nil
}

// frameJSON encodes v as commit points and checkpoints are framed: magic,
// a version byte, a JSON body and a big-endian CRC32 of everything before
// it.
func frameJSON(magic string, version byte, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteByte(version)
	b.Write(body)
	return binary.BigEndian.AppendUint32(b.Bytes(), crc32.ChecksumIEEE(b.Bytes())), nil
}

// unframeJSON checks frameJSON's framing and decodes the body into v; the
// error says what is wrong.
func unframeJSON(data []byte, magic string, version byte, v any) error {
	n := len(data) - 4
	switch {
	case n < len(magic)+1 || string(data[:len(magic)]) != magic:
		return errors.New("bad header")
	case crc32.ChecksumIEEE(data[:n]) != binary.BigEndian.Uint32(data[n:]):
		return errors.New("checksum mismatch")
	case data[len(magic)] != version:
		return fmt.Errorf("unknown version %d", data[len(magic)])
	}
	return json.Unmarshal(data[len(magic)+1:n], v)
}

// ReadLatestCommit returns the newest commit point in dir, or nil if there is
// none.
func ReadLatestCommit(dir store.Directory) (*SegmentInfos, error) {
	names, err := dir.ListAll()
	if err != nil {
		return nil, fmt.Errorf("engine: list index files: %w", err)
	}
	gen := int64(-1)
	for _, n := range names {
		if g, ok := strings.CutPrefix(n, commitPrefix); ok {
			if v, err := strconv.ParseInt(g, 36, 64); err == nil && v > gen {
				gen = v
			}
		}
	}
	if gen < 0 {
		return nil, nil
	}
	in, err := dir.OpenInput(commitFileName(gen))
	if err != nil {
		return nil, fmt.Errorf("engine: open commit %d: %w", gen, err)
	}
	defer in.Close()
	si, err := DecodeSegmentInfos(in.Bytes())
	if err != nil {
		return nil, fmt.Errorf("engine: %s: %w", commitFileName(gen), err)
	}
	return si, nil
}

// committer writes commit points (Lucene's IndexWriter.commit under its
// commitLock): one at a time, each a snapshot of the published segments
// with live-docs files for the segments whose deletes changed, every file
// fsynced before the commit point is published. It keeps the last commit
// point's files referenced in the fileDeleter (only the last is kept).
type committer struct {
	dir  store.Directory
	fd   *fileDeleter
	live *liveDocsFiles

	// mu serialises commits (the writer's Commit holds it from its
	// refresh to the commit point's publication); it guards the fields
	// below and segState's commit fields.
	mu    sync.Mutex
	last  *SegmentInfos
	files []string // referenced in the fileDeleter
}

// CommitOptions tune Commit.
type CommitOptions struct {
	// UserData is stored in the commit point (e.g. translog generation).
	UserData map[string]string
}

// Commit makes every operation completed before the call durable: it
// refreshes (applying deletes), writes live-docs files for segments whose
// deletes changed, fsyncs every file the commit references, writes the
// commit point to a temporary file, fsyncs it, renames it into place and
// fsyncs the directory. The previous commit's files are released once the
// new one is durable (only the last commit is kept). Refreshes and indexing
// continue while the files are synced.
func (w *IndexWriter) Commit(ctx context.Context, opts CommitOptions) (*SegmentInfos, error) {
	w.commits.mu.Lock()
	defer w.commits.mu.Unlock()
	if _, err := w.Refresh(ctx, true); err != nil {
		return nil, err
	}
	// Snapshot the refreshed segments: hold a reader so none is closed
	// while we write and sync. The AddIndexes markers are read with it,
	// so the commit records exactly the adds its segments hold.
	w.segments.mu.Lock()
	r := w.Acquire()
	userData := w.segments.withAddMarkersLocked(opts.UserData)
	w.segments.mu.Unlock()
	defer r.Release()
	return w.commits.commitLocked(r, userData, &w.segments.counter)
}

// commitLocked writes the commit point of r's segments, with live-docs
// files for those whose newest file (a checkpoint's, or the last
// commit's) holds other bits than r's.
func (c *committer) commitLocked(r *Reader, userData map[string]string, counter *atomic.Int64) (*SegmentInfos, error) {
	si := &SegmentInfos{Generation: c.nextGeneration(), SeqNo: r.SeqNo(), UserData: userData}
	segs, release, err := c.live.segments(r, store.IOContext{Kind: store.IOCommit})
	if err != nil {
		return nil, fmt.Errorf("engine: commit: %w", err)
	}
	defer release() // after the commit's own references, below
	si.Segments = segs
	// After the live-docs files: their generations come from the counter.
	si.Counter = counter.Load()
	if err := c.publishLocked(si); err != nil {
		return nil, err
	}
	return si, nil
}

// publishLocked makes si the last commit point: it fsyncs the files si
// references, writes and publishes the commit point, references its files
// and releases the previous commit's.
func (c *committer) publishLocked(si *SegmentInfos) error {
	files := si.Files()
	if err := c.dir.Sync(files[1:]); err != nil {
		return fmt.Errorf("engine: commit: sync: %w", err)
	}
	if err := c.writeCommitPoint(si); err != nil {
		return err
	}
	c.fd.incRef(files)
	if c.files != nil {
		c.fd.decRef(c.files)
	}
	c.last, c.files = si, files
	return nil
}

// nextGeneration is the generation of the next commit point.
func (c *committer) nextGeneration() int64 {
	if c.last != nil {
		return c.last.Generation + 1
	}
	return 1
}

func (c *committer) writeCommitPoint(si *SegmentInfos) error {
	data, err := encodeSegmentInfos(si)
	if err != nil {
		return fmt.Errorf("engine: commit: encode: %w", err)
	}
	tmp := pendingPrefix + strconv.FormatInt(si.Generation, 36)
	final := commitFileName(si.Generation)
	out, err := c.dir.CreateOutput(tmp, store.IOContext{Kind: store.IOCommit})
	if err != nil {
		return fmt.Errorf("engine: commit: %w", err)
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		c.dir.DeleteFile(tmp)
		return fmt.Errorf("engine: commit: write %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		c.dir.DeleteFile(tmp)
		return fmt.Errorf("engine: commit: close %s: %w", tmp, err)
	}
	if err := c.dir.Sync([]string{tmp}); err != nil {
		c.dir.DeleteFile(tmp)
		return fmt.Errorf("engine: commit: sync %s: %w", tmp, err)
	}
	if err := c.dir.Rename(tmp, final); err != nil {
		c.dir.DeleteFile(tmp)
		return fmt.Errorf("engine: commit: publish %s: %w", final, err)
	}
	if err := c.dir.SyncMetaData(); err != nil {
		return fmt.Errorf("engine: commit: sync directory: %w", err)
	}
	return nil
}

// loaded records the commit point a new writer opened, whose files it
// references.
func (c *committer) loaded(si *SegmentInfos, files []string) {
	c.mu.Lock()
	c.last, c.files = si, files
	c.mu.Unlock()
}

// LastCommit returns the last commit point written or loaded, or nil.
func (w *IndexWriter) LastCommit() *SegmentInfos {
	w.commits.mu.Lock()
	defer w.commits.mu.Unlock()
	return w.commits.last
}

// isIndexFile reports whether name is one of the engine's files (segment
// files start with "_"), as opposed to files others keep in the directory.
func isIndexFile(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, commitPrefix) || strings.HasPrefix(name, pendingPrefix)
}

// deleteUnreferenced deletes the engine's files in dir that keep is
// missing: flushes, merges and copies a crash left behind. Their names
// would otherwise collide with the segments named next.
func deleteUnreferenced(dir store.Directory, log *slog.Logger, keep []string) error {
	names, err := dir.ListAll()
	if err != nil {
		return fmt.Errorf("engine: list index files: %w", err)
	}
	for _, n := range names {
		if isIndexFile(n) && !slices.Contains(keep, n) {
			if err := dir.DeleteFile(n); err != nil {
				log.Warn("engine: deleting unreferenced file", "file", n, "err", err)
			}
		}
	}
	return nil
}

// openCommitSegments opens the segments of si, with their live docs, as
// segStates referencing their files (core and live-docs) in fd.
func openCommitSegments(dir store.Directory, c index.Codec, fd *fileDeleter, si *SegmentInfos) ([]*segState, error) {
	var segs []*segState
	fail := func(err error) ([]*segState, error) {
		for _, s := range segs {
			s.decRef()
		}
		return nil, err
	}
	for i := range si.Segments {
		cs := &si.Segments[i]
		info := cs.Info
		r, err := c.OpenSegment(dir, &info)
		if err != nil {
			return fail(fmt.Errorf("engine: open segment %s: %w", info.Name, err))
		}
		s := newSegState(&info, r, fd, dir)
		segs = append(segs, s)
		if cs.DelGen > 0 {
			live, err := c.ReadLiveDocs(dir, &info, cs.DelGen)
			if err != nil {
				return fail(fmt.Errorf("engine: live docs of %s: %w", info.Name, err))
			}
			s.live = live
			s.delCount = info.MaxDoc - live.Cardinality()
			s.setLiveFile(cs.LiveDocs, live, cs.DelGen)
		}
		if err := s.loadDocValuesUpdates(c, dir, cs); err != nil {
			return fail(err)
		}
	}
	return segs, nil
}

// loadCommit opens the segments of si into the writer, which must be new,
// and deletes index files the commit does not reference (left by a crash
// between flush and commit).
func (w *IndexWriter) loadCommit(si *SegmentInfos) error {
	segs, err := openCommitSegments(w.dir, w.codec, w.fd, si)
	if err != nil {
		return err
	}
	for _, s := range segs {
		s.delCursor = w.delTail
	}
	files := si.Files()
	w.fd.incRef(files)
	if err := deleteUnreferenced(w.dir, w.log, files); err != nil {
		for _, s := range segs {
			s.decRef()
		}
		return err
	}
	w.segments.load(segs, si)
	w.commits.loaded(si, files)
	w.seqNo = si.SeqNo
	w.version++
	r := newReader(segs, si.SeqNo, w.version)
	r.appliedSeqNo.Store(si.SeqNo)
	r.addMarkers = cloneMarkers(w.segments.addMarkers)
	w.current.Store(r)
	w.refreshed.Store(si.SeqNo)
	return nil
}
