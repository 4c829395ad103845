package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// FileMeta describes one index file: what a replica compares its own copy
// of the name with (same length and checksum: the same file).
type FileMeta struct {
	Name   string `json:"name"`
	Length int64  `json:"length"`
	// Checksum is the CRC32 (IEEE) the file's codec footer records.
	Checksum uint32 `json:"checksum"`
}

// ReplicationCheckpoint is what a primary's refresh published, for
// replicas to copy (OpenSearch's ReplicationCheckpoint with Lucene's
// CopyState): the segments of the reader with their live-docs files
// (Infos, a commit point without a generation), the seqNo every operation
// up to which it reflects, the primary's term, a version increasing with
// every checkpoint the primary makes, and every file it references. On the
// primary (Engine.Checkpoint) it pins its files — they are not deleted
// while it is retained, whatever refreshes, merges and commits do — until
// its last Release. A decoded one (DecodeCheckpoint) pins nothing.
// Checkpoints are ordered by (Term, Version).
type ReplicationCheckpoint struct {
	Term    int64        `json:"term"`
	Version int64        `json:"version"`
	SeqNo   int64        `json:"seq_no"`
	Infos   SegmentInfos `json:"infos"`
	// Files are sorted by name: each segment's core files and live-docs
	// file, nothing else.
	Files []FileMeta `json:"files"`

	pin *filePin
}

// filePin holds fileDeleter references on files until its last release.
type filePin struct {
	refs  atomic.Int32
	fd    *fileDeleter
	files []string
}

func newFilePin(fd *fileDeleter, files []string) *filePin {
	p := &filePin{fd: fd, files: files}
	p.refs.Store(1)
	fd.incRef(files)
	return p
}

func (p *filePin) release() {
	switch n := p.refs.Add(-1); {
	case n == 0:
		p.fd.decRef(p.files)
	case n < 0:
		panic("engine: checkpoint released too often")
	}
}

// Retain takes another reference on a pinned checkpoint (each Retain
// needs its Release) and returns it.
func (cp *ReplicationCheckpoint) Retain() *ReplicationCheckpoint {
	if cp.pin != nil {
		cp.pin.refs.Add(1)
	}
	return cp
}

// Release drops a reference; after the last, the primary may delete the
// files no reader, commit or other checkpoint still references. A no-op
// on a decoded checkpoint.
func (cp *ReplicationCheckpoint) Release() {
	if cp.pin != nil {
		cp.pin.release()
	}
}

// Newer reports whether cp comes after other in (Term, Version) order.
func (cp *ReplicationCheckpoint) Newer(other *ReplicationCheckpoint) bool {
	return other == nil || cp.Term > other.Term || cp.Term == other.Term && cp.Version > other.Version
}

// File returns the meta of a file of the checkpoint.
func (cp *ReplicationCheckpoint) File(name string) (FileMeta, bool) {
	i, ok := slices.BinarySearchFunc(cp.Files, name, func(f FileMeta, n string) int { return strings.Compare(f.Name, n) })
	if !ok {
		return FileMeta{}, false
	}
	return cp.Files[i], true
}

// Size is the bytes of all the checkpoint's files.
func (cp *ReplicationCheckpoint) Size() int64 {
	var n int64
	for _, f := range cp.Files {
		n += f.Length
	}
	return n
}

const (
	checkpointMagic   = "SLCP"
	checkpointVersion = 1
	// maxCheckpointBytes bounds an encoded checkpoint a replica accepts.
	maxCheckpointBytes = 64 << 20
)

// MarshalBinary encodes the checkpoint (for the wire): "SLCP", a version
// byte, a JSON body and a big-endian CRC32 of everything before it — the
// commit point's framing.
func (cp *ReplicationCheckpoint) MarshalBinary() ([]byte, error) {
	b, err := frameJSON(checkpointMagic, checkpointVersion, cp)
	if err != nil {
		return nil, fmt.Errorf("engine: encode checkpoint: %w", err)
	}
	return b, nil
}

// DecodeCheckpoint decodes and validates an encoded checkpoint (one that
// came over the network): bad framing, a bad checksum or inconsistent
// content — file names that are not index files, files the segments do
// not reference or the reverse, impossible counts — is an error wrapping
// ErrInvalidCheckpoint that says what is wrong.
func DecodeCheckpoint(data []byte) (*ReplicationCheckpoint, error) {
	if len(data) > maxCheckpointBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidCheckpoint, len(data), maxCheckpointBytes)
	}
	cp := new(ReplicationCheckpoint)
	if err := unframeJSON(data, checkpointMagic, checkpointVersion, cp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCheckpoint, err)
	}
	if err := cp.validate(); err != nil {
		return nil, err
	}
	return cp, nil
}

// validate checks what a replica relies on before it touches a file.
func (cp *ReplicationCheckpoint) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidCheckpoint, fmt.Sprintf(format, args...))
	}
	si := &cp.Infos
	switch {
	case cp.Term < 1:
		return bad("term %d", cp.Term)
	case cp.Version < 0:
		return bad("version %d", cp.Version)
	case cp.SeqNo < 0 || cp.SeqNo != si.SeqNo:
		return bad("seq_no %d (infos %d)", cp.SeqNo, si.SeqNo)
	case si.Counter < 0 || si.Generation != 0:
		return bad("counter %d, generation %d", si.Counter, si.Generation)
	}
	referenced := map[string]bool{}
	ref := func(seg, name string) error {
		if !validIndexFileName(name) {
			return bad("segment %q: file name %q", seg, name)
		}
		if referenced[name] {
			return bad("file %s referenced twice", name)
		}
		referenced[name] = true
		return nil
	}
	segs := map[string]bool{}
	for i := range si.Segments {
		cs := &si.Segments[i]
		name := cs.Info.Name
		if !validSegmentName(name) || segs[name] {
			return bad("segment name %q", name)
		}
		segs[name] = true
		if cs.Info.MaxDoc < 0 || cs.DelCount < 0 || cs.DelCount > cs.Info.MaxDoc || cs.DelGen < 0 || cs.SizeBytes < 0 {
			return bad("segment %s: max_doc %d, del_count %d, del_gen %d", name, cs.Info.MaxDoc, cs.DelCount, cs.DelGen)
		}
		if (cs.DelGen > 0) != (cs.LiveDocs != "") || (cs.LiveDocs == "") != (cs.DelCount == 0) {
			return bad("segment %s: del_gen %d, live docs %q, del_count %d", name, cs.DelGen, cs.LiveDocs, cs.DelCount)
		}
		if len(cs.Info.Files) == 0 {
			return bad("segment %s has no files", name)
		}
		for _, f := range cs.Info.Files {
			if !strings.HasPrefix(f, name+".") {
				return bad("segment %s: file %q not named after it", name, f)
			}
			if err := ref(name, f); err != nil {
				return err
			}
		}
		if (cs.DVGen > 0) != (cs.DocValuesUpdates != "") || cs.DVGen < 0 {
			return bad("segment %s: dv_gen %d, doc-values updates %q", name, cs.DVGen, cs.DocValuesUpdates)
		}
		for _, gen := range []string{cs.LiveDocs, cs.DocValuesUpdates} {
			if gen == "" {
				continue
			}
			if !strings.HasPrefix(gen, name+"_") {
				return bad("segment %s: generation file %q not named after it", name, gen)
			}
			if err := ref(name, gen); err != nil {
				return err
			}
		}
	}
	if len(cp.Files) != len(referenced) {
		return bad("%d files listed, %d referenced", len(cp.Files), len(referenced))
	}
	for i, f := range cp.Files {
		if !referenced[f.Name] || f.Length < 0 || i > 0 && cp.Files[i-1].Name >= f.Name {
			return bad("file %q (length %d): unreferenced, unsorted or repeated", f.Name, f.Length)
		}
	}
	return nil
}

// validSegmentName: "_" and a base-36 number, as the writer names them.
func validSegmentName(name string) bool {
	n, ok := strings.CutPrefix(name, "_")
	if !ok || n == "" {
		return false
	}
	v, err := strconv.ParseInt(n, 36, 64)
	return err == nil && v >= 0 && strconv.FormatInt(v, 36) == n
}

// validIndexFileName accepts a segment file name: "_", then letters,
// digits, '_' and '.', and no path.
func validIndexFileName(name string) bool {
	if len(name) < 2 || len(name) > 255 || name[0] != '_' || strings.Contains(name, "..") {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// footerChecksummer is implemented by codecs that can read a file's
// recorded checksum without hashing it (codec.Codec).
type footerChecksummer interface {
	FooterChecksum(name string, data []byte) (uint32, error)
}

// fileMetaOf reads a file's length and the checksum its footer records.
func fileMetaOf(dir store.Directory, c index.Codec, name string) (FileMeta, error) {
	fc, ok := c.(footerChecksummer)
	if !ok {
		return FileMeta{}, fmt.Errorf("engine: codec %s cannot read file checksums", c.Name())
	}
	in, err := dir.OpenInput(name)
	if err != nil {
		return FileMeta{}, err
	}
	defer in.Close()
	data := in.Bytes()
	sum, err := fc.FooterChecksum(name, data)
	if err != nil {
		return FileMeta{}, err
	}
	return FileMeta{Name: name, Length: int64(len(data)), Checksum: sum}, nil
}

// coreMetas describes the segment's core files (read once: they never
// change).
func (s *segState) coreMetas(dir store.Directory, c index.Codec) ([]FileMeta, error) {
	s.metaOnce.Do(func() {
		for _, f := range s.files {
			m, err := fileMetaOf(dir, c, f)
			if err != nil {
				s.metaErr = fmt.Errorf("engine: segment %s: %w", s.info.Name, err)
				return
			}
			s.metas = append(s.metas, m)
		}
	})
	return s.metas, s.metaErr
}

// checkpoints is the primary's checkpoint state.
type checkpoints struct {
	mu      sync.Mutex
	latest  *ReplicationCheckpoint // the engine's reference
	reader  int64                  // version of the reader latest describes
	version int64
}

// Checkpoint returns a replication checkpoint of the current reader,
// retained for the caller (Release it when done): the same one while
// nothing changed, else a new one with a higher Version. Building one
// writes, without fsync, a live-docs file for every segment whose deletes
// changed since its newest file (Lucene's writeAllDeletes) and reads each
// new file's footer for its checksum; files of segments seen before are
// not read again. Its SeqNo is the reader's boundary as far as deletes
// are applied (SkipDeletesOnRefresh: the last refresh that applied them).
// Safe for concurrent use; the node calls it after each refresh
// (RefreshNotify) and publishes the result to its replicas.
func (e *Engine) Checkpoint(ctx context.Context) (*ReplicationCheckpoint, error) {
	if err := e.Failure(); err != nil {
		return nil, err
	}
	c := &e.cps
	c.mu.Lock()
	defer c.mu.Unlock()
	r := e.w.Acquire()
	defer r.Release()
	seq, term := r.appliedSeqNo.Load(), e.term.Load()
	if l := c.latest; l != nil && c.reader == r.version && l.SeqNo == seq && l.Term == term {
		return l.Retain(), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := e.w
	segs, release, err := w.liveFiles.segments(r, store.IOContext{Kind: store.IOFlush})
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint: %w", err)
	}
	defer release() // after the pin's references, below
	cp := &ReplicationCheckpoint{Term: term, SeqNo: seq,
		Infos: SegmentInfos{SeqNo: seq, Counter: w.segments.counter.Load(), UserData: withAddMarkers(nil, r.addMarkers), Segments: segs}}
	for i, s := range r.segs {
		metas, err := s.coreMetas(e.dir, w.codec)
		if err != nil {
			return nil, fmt.Errorf("engine: checkpoint: %w", err)
		}
		cp.Files = append(cp.Files, metas...)
		for _, name := range []string{segs[i].LiveDocs, segs[i].DocValuesUpdates} {
			if name == "" {
				continue
			}
			m, err := fileMetaOf(e.dir, w.codec, name)
			if err != nil {
				return nil, fmt.Errorf("engine: checkpoint: generation %s of %s: %w", name, s.info.Name, err)
			}
			cp.Files = append(cp.Files, m)
		}
	}
	slices.SortFunc(cp.Files, func(a, b FileMeta) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(cp.Files))
	for i, f := range cp.Files {
		names[i] = f.Name
	}
	// r holds the core files, release the live-docs files: none can go
	// before the pin takes them.
	cp.pin = newFilePin(w.fd, names)
	c.version++
	cp.Version = c.version
	if c.latest != nil {
		c.latest.Release()
	}
	c.latest, c.reader = cp, r.version
	return cp.Retain(), nil
}

// releaseCheckpoints drops the engine's reference on its latest
// checkpoint (Close).
func (c *checkpoints) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest != nil {
		c.latest.Release()
		c.latest = nil
	}
}

// RefreshNotify returns a channel closed by the next refresh that
// publishes a reader or raises the current one's SeqNo (or by Close): a
// node waits on it, then takes a Checkpoint. Take the channel before the
// checkpoint, so a refresh in between is not missed.
func (e *Engine) RefreshNotify() <-chan struct{} {
	w := e.w
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refreshedCh
}

// OpenIndexFile opens one of the engine's files that something references
// — a retained checkpoint, a reader, the last commit, a merged segment
// being pre-copied — to stream it to a copy. Opened, it stays readable to
// the end even if it is deleted meanwhile. A file nothing references is an
// error wrapping fs.ErrNotExist. A referenced file missing from the
// directory (deleted or unmounted under the node) is damage: the engine
// fails, as for a corrupt file, instead of every copy asking for it again.
func (e *Engine) OpenIndexFile(name string) (store.IndexInput, error) {
	// Held while opening, so a file released meanwhile is not deleted
	// under the open and taken for a missing one.
	if !e.w.fd.tryIncRef(name) {
		return nil, fmt.Errorf("engine: open %s: not a file of this index: %w", name, fs.ErrNotExist)
	}
	defer e.w.fd.decRef([]string{name})
	in, err := e.dir.OpenInput(name)
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("engine: %s, a file the index references, is missing from its directory (%w): %w", name, err, index.ErrCorrupt)
		e.fail("open file", err)
		return nil, e.Failure()
	}
	return in, err
}

// ErrInvalidCheckpoint is wrapped by DecodeCheckpoint's errors and by a
// replica refusing a checkpoint it cannot install as described.
var ErrInvalidCheckpoint = errors.New("engine: invalid replication checkpoint")

// cloneMarkers copies AddIndexes markers for a reader (nil when none).
func cloneMarkers(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
