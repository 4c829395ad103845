package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// UserDataAddedPrefix starts the commit user-data key of every AddIndexes
// marker: "added_indexes:" + marker.
const UserDataAddedPrefix = "added_indexes:"

// AddIndexesOptions tune AddIndexes.
type AddIndexesOptions struct {
	// Marker names this add (a reindex uses task/slice/destination shard).
	// Every later commit records it in its user data, published together
	// with the segments; when the writer already has it — from its last
	// commit, or an earlier AddIndexes — nothing is added, so a rerun after
	// a crash or a resumed copy never adds twice. Required.
	Marker string
	// Keep, if set, is asked for every live doc of the source, by leaf of
	// the source reader and doc in that leaf; docs it rejects are deleted
	// in the added copy (a split: each destination shard keeps the docs
	// that route to it — the caller reads whatever decides that once, not
	// once per destination). nil keeps every live doc.
	Keep func(leaf, doc int) bool
}

// AddIndexesResult describes one AddIndexes.
type AddIndexesResult struct {
	// AlreadyAdded: the marker was present and nothing was done; Docs is
	// then what that earlier add added.
	AlreadyAdded bool
	// Segments added (segments left without a live doc are skipped).
	Segments int
	// Docs: live docs added. Dropped: source live docs Keep rejected.
	Docs, Dropped int
	// Files hard-linked, and copied where a link was impossible.
	Linked, Copied int
}

// checksumVerifier is implemented by segment readers that can verify the
// full checksum of every file of their segment without decoding it
// (the codec's).
type checksumVerifier interface {
	VerifyChecksums() error
}

// verifyChecksums verifies r's files if its reader can, else does nothing.
func verifyChecksums(r index.SegmentReader) error {
	if cv, ok := r.(checksumVerifier); ok {
		return cv.VerifyChecksums()
	}
	return nil
}

// AddIndexes adds the segments of src, a point-in-time reader of another
// index written with the same codec (and the same mapping: nothing is
// re-analysed), to this index without rewriting them (Lucene's
// addIndexes(CodecReader...) without the merge; Elasticsearch's
// _clone/_split). Each segment's files are hard-linked into this directory
// (copied when linking fails) under a fresh name from this writer's
// counter; the segment keeps its ID, which the codec checks in every file
// header (headers do not name the segment). Each file's checksum is
// verified before the segment is opened, so a corrupt source is detected,
// not served. The copy's live docs are the source's live docs that Keep
// accepts. The segments are published at once by a refresh, together with
// the marker; they become durable at the next commit, which records the
// marker (Engine.AddIndexes commits).
//
// The added segments keep the source's _seq_no and _primary_term columns,
// but those are another index's versions: the segments are marked
// (SegmentInfo.ForeignVersions) and their docs have no version here
// (UnassignedSeqNo: no if_seq_no matches) until a write here gives them
// one. The added docs are not in the translog:
// a crash before the commit leaves their files unreferenced (deleted at
// open) and the marker absent, so the add is redone; after it, they are in
// the commit. Operations on this index concurrent with the add are ordered
// before it: the add does not check ids against existing docs, so the
// caller must not add ids the index holds (a reindex adds into an empty
// destination).
func (w *IndexWriter) AddIndexes(ctx context.Context, src *Reader, opts AddIndexesOptions) (AddIndexesResult, error) {
	var res AddIndexesResult
	if opts.Marker == "" {
		return res, errors.New("engine: AddIndexes needs a marker")
	}
	if docs, ok := w.AddMarker(opts.Marker); ok {
		return AddIndexesResult{AlreadyAdded: true, Docs: docs}, nil
	}
	var added []*segState
	fail := func(err error) (AddIndexesResult, error) {
		for _, s := range added {
			s.decRef()
		}
		return AddIndexesResult{}, err
	}
	for i, s := range src.segs {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if s.info.Codec != w.codec.Name() {
			return fail(fmt.Errorf("engine: add segment %s: codec %s, this index writes %s", s.info.Name, s.info.Codec, w.codec.Name()))
		}
		live, dropped := keptDocs(src.leaves[i], i, opts.Keep)
		res.Dropped += dropped
		n := s.info.MaxDoc
		if live != nil {
			n = live.Cardinality()
		}
		if n == 0 {
			continue
		}
		if n == s.info.MaxDoc {
			live = nil
		}
		seg, linked, copied, err := w.linkSegment(s, src.leaves[i].Reader)
		if err != nil {
			return fail(err)
		}
		added = append(added, seg)
		res.Linked += linked
		res.Copied += copied
		if live != nil {
			seg.live, seg.delCount = live, seg.info.MaxDoc-n
		}
		res.Segments++
		res.Docs += n
	}

	w.segments.mu.Lock()
	if docs, ok := w.segments.addMarkerLocked(opts.Marker); ok {
		w.segments.mu.Unlock()
		for _, s := range added {
			s.decRef()
		}
		return AddIndexesResult{AlreadyAdded: true, Docs: docs}, nil
	}
	w.mu.Lock()
	closed := w.closed
	for _, s := range added {
		s.delCursor = w.delTail // deletes queued from now on apply to them
	}
	w.mu.Unlock()
	if closed {
		w.segments.mu.Unlock()
		return fail(ErrClosed)
	}
	w.segments.addPendingLocked(added, opts.Marker, res.Docs)
	w.segments.mu.Unlock()
	// The refresh publishes the segments with the marker (whichever
	// refresh runs first does).
	if _, err := w.Refresh(ctx, true); err != nil {
		return res, err
	}
	return res, nil
}

// keptDocs returns the live docs of leaf (number i of its reader) that
// keep accepts (nil: all of the segment's docs) and how many live docs
// keep rejected.
func keptDocs(leaf Leaf, i int, keep func(leaf, doc int) bool) (*index.FixedBitSet, int) {
	if keep == nil {
		if leaf.Live == nil {
			return nil, 0
		}
		return leaf.Live.Clone(), 0
	}
	maxDoc := leaf.Reader.MaxDoc()
	live := index.NewFixedBitSet(maxDoc)
	dropped := 0
	for d := range maxDoc {
		if leaf.Live != nil && !leaf.Live.Get(d) {
			continue
		}
		if keep(i, d) {
			live.Set(d)
		} else {
			dropped++
		}
	}
	return live, dropped
}

// linkSegment brings the core files of s into this directory under a new
// segment name and opens the segment, with every file's checksum verified
// in the bytes it now serves: those of the linked inode or of the copy,
// which need not be the bytes the source's reader holds (an NRT-cached
// source reads from RAM). The segment gets the in-place doc-values updates
// leaf (s as the source reader sees it) layers (addDocValuesUpdates). It
// returns the segment (all docs live; the caller sets its live docs) and
// how many files were hard-linked and copied.
func (w *IndexWriter) linkSegment(s *segState, leaf index.LeafReader) (seg *segState, linked, copied int, err error) {
	name := w.segments.nextName()
	info := &index.SegmentInfo{Name: name, ID: s.info.ID, MaxDoc: s.info.MaxDoc, Codec: s.info.Codec,
		Diagnostics: maps.Clone(s.info.Diagnostics), ForeignVersions: true}
	if info.Diagnostics == nil {
		info.Diagnostics = map[string]string{}
	}
	info.Diagnostics["source"] = "add_indexes"
	info.Diagnostics["added_from"] = s.info.Name
	info.Diagnostics["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	// Files are "<segment>.<ext>" (codec.fileName): the extension carries
	// over, the name is ours.
	cleanup := func(err error) (*segState, int, int, error) {
		for _, f := range info.Files {
			w.dir.DeleteFile(f)
		}
		return nil, 0, 0, err
	}
	for _, f := range s.info.Files {
		ext, ok := strings.CutPrefix(f, s.info.Name+".")
		if !ok {
			return cleanup(fmt.Errorf("engine: add segment %s: file %s is not named after it", s.info.Name, f))
		}
		to := name + "." + ext
		ok, err := store.LinkOrCopy(s.fd.dir, f, w.dir, to)
		if err != nil {
			return cleanup(fmt.Errorf("engine: add segment %s as %s: %w", s.info.Name, name, err))
		}
		info.Files = append(info.Files, to)
		if ok {
			linked++
		} else {
			copied++
		}
	}
	r, err := w.codec.OpenSegment(w.dir, info)
	if err != nil {
		return cleanup(fmt.Errorf("engine: add segment %s as %s: open: %w", s.info.Name, name, err))
	}
	if err := verifyChecksums(r); err != nil {
		r.Close()
		return cleanup(fmt.Errorf("engine: add segment %s as %s: %w", s.info.Name, name, err))
	}
	seg = newSegState(info, r, w.fd, w.dir)
	if dv := readerDocValuesUpdates(leaf).withoutVersions(); dv != nil {
		ok, err := w.addDocValuesUpdates(s, seg, dv)
		if err != nil {
			seg.decRef()
			return nil, 0, 0, fmt.Errorf("engine: add segment %s as %s: %w", s.info.Name, name, err)
		}
		switch ok {
		case dvLinked:
			linked++
		case dvCopied:
			copied++
		}
	}
	return seg, linked, copied, nil
}

// withoutVersions is u without the _seq_no and _primary_term updates —
// the source index's versions, which an added segment does not carry
// (SegmentInfo.ForeignVersions) — or nil if nothing else is left.
func (u *docValuesUpdates) withoutVersions() *docValuesUpdates {
	if u == nil || (u.fields[index.SeqNoField] == nil && u.fields[index.PrimaryTermField] == nil) {
		return u
	}
	out := &docValuesUpdates{fields: maps.Clone(u.fields), count: u.count}
	for _, name := range []string{index.SeqNoField, index.PrimaryTermField} {
		if f := out.fields[name]; f != nil {
			for _, r := range f.runs {
				out.count -= r.len()
			}
			delete(out.fields, name)
		}
	}
	if len(out.fields) == 0 {
		return nil
	}
	return out
}

// How addDocValuesUpdates brought a segment's updates over.
const (
	dvInMemory = iota // written by the next commit
	dvLinked
	dvCopied
)

// addDocValuesUpdates gives seg, the copy of src, the doc-values updates
// dv that the source reader layers over src, so the copy serves current
// values, not the column as src was written. When src's newest generation
// file holds exactly dv (a committed reader's, as a segment-copy reindex
// pins) the file is linked under seg's name and checksummed, and becomes
// seg's file; otherwise — the updates are newer than the file, or the
// source replaced the file meanwhile — seg holds dv in memory and the
// commit that follows the add writes it. dv is the source's updates
// without its versions (withoutVersions): a file holding _seq_no updates
// — every in-place update writes them — is not dv, so it is not linked.
func (w *IndexWriter) addDocValuesUpdates(src, seg *segState, dv *docValuesUpdates) (int, error) {
	seg.setDocValuesUpdates(dv)
	f := src.dvFile.Load()
	if f == nil || f.of != dv {
		return dvInMemory, nil
	}
	rest, ok := strings.CutPrefix(f.name, src.info.Name)
	if !ok {
		return dvInMemory, nil
	}
	to := seg.info.Name + rest
	linked, err := store.LinkOrCopy(src.fd.dir, f.name, w.dir, to)
	if err != nil {
		return dvInMemory, nil
	}
	file, err := w.codec.OpenDocValuesUpdates(w.dir, seg.info, f.gen)
	if err != nil {
		w.dir.DeleteFile(to)
		return 0, fmt.Errorf("doc-values updates %s: %w", f.name, err)
	}
	got := openDocValuesFile(to, file)
	seg.setDocValuesUpdates(got)
	seg.setDocValuesFile(to, got, f.gen)
	if linked {
		return dvLinked, nil
	}
	return dvCopied, nil
}

// AddMarker reports whether an AddIndexes with this marker has been
// published (or loaded from the last commit), and the live docs it added.
func (w *IndexWriter) AddMarker(marker string) (docs int, ok bool) {
	w.segments.mu.Lock()
	defer w.segments.mu.Unlock()
	return w.segments.addMarkerLocked(marker)
}

// addMarkersFrom reads the markers a commit recorded.
func addMarkersFrom(si *SegmentInfos) map[string]string {
	m := map[string]string{}
	for k, v := range si.UserData {
		if marker, ok := strings.CutPrefix(k, UserDataAddedPrefix); ok {
			m[marker] = v
		}
	}
	return m
}

// withAddMarkers returns user data with every published marker added.
func withAddMarkers(ud, markers map[string]string) map[string]string {
	if len(markers) == 0 {
		return ud
	}
	out := make(map[string]string, len(ud)+len(markers))
	maps.Copy(out, ud)
	for m, v := range markers {
		out[UserDataAddedPrefix+m] = v
	}
	return out
}

// AddIndexes is IndexWriter.AddIndexes followed by a commit, so the added
// segments and the marker are durable (one commit point records both) when
// it returns. A marker already present returns at once.
func (e *Engine) AddIndexes(ctx context.Context, src *Reader, opts AddIndexesOptions) (AddIndexesResult, error) {
	if err := e.Failure(); err != nil {
		return AddIndexesResult{}, err
	}
	res, err := e.w.AddIndexes(ctx, src, opts)
	if err != nil || res.AlreadyAdded {
		return res, err
	}
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		return res, fmt.Errorf("engine: commit added segments: %w", err)
	}
	return res, nil
}
