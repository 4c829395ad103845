package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/source"
	"github.com/sluice-search/sluice/node/engine/store"
)

// In-place doc-values updates (Lucene's updatable numeric doc values, with
// the representation its 2014 benchmark post proposed instead of Lucene's
// rewrite of the whole field per update): a segment's updates are held in
// memory as runs — per field, docs ascending with one value each, one run
// per refresh that brought updates — layered over the segment's column by
// the reader. A refresh costs O(updates it applies · log), never O(segment):
// it sorts its own entries into a new run and shares the older runs.
// Runs of similar length are merged (newest wins), so a field has
// O(log updates) runs and a lookup O(log² updates) at worst. A commit or a
// replication checkpoint writes all of a segment's updates, cumulative, as
// one small generation file (codec.WriteDocValuesUpdates, "_N_gen.dvu");
// a merge folds them into the merged segment's column. Published readers
// hold their runs: a reader opened before an update keeps the old value.

// dvRun is one run of a field's updates; immutable once published. Its
// entries are fixed-width little-endian arrays, as a generation file holds
// them: either on the heap (a refresh's run, a merge of runs) or the
// file's own bytes (file set: a run written out or loaded from a commit,
// served where it lies — mmap'd, off the heap).
type dvRun struct {
	docs []byte // 4 bytes an entry, ascending
	vals []byte // 8 bytes an entry
	file *dvFileData
}

// dvFileData keeps an opened generation file open while a run over its
// bytes is reachable: the input is closed (unmapped) by a cleanup once
// no run refers to it. Runs read the bytes only in methods that keep the
// run alive to the end (runtime.KeepAlive), so no read outlives it.
type dvFileData struct{ name string } // a pointer field: not a tiny allocation, which AddCleanup may never see freed

// openDocValuesFile wraps an opened generation file as runs, one per
// field, closing the file once they are all unreachable.
func openDocValuesFile(name string, f *index.DocValuesUpdatesFile) *docValuesUpdates {
	if len(f.Fields) == 0 {
		f.Close()
		return nil
	}
	data := &dvFileData{name: name}
	runtime.AddCleanup(data, func(close func() error) { close() }, f.Close)
	u := &docValuesUpdates{fields: make(map[string]*dvFieldUpdates, len(f.Fields))}
	for _, fu := range f.Fields {
		u.fields[fu.Field] = &dvFieldUpdates{typ: fu.Type, terms: fu.Terms, runs: []*dvRun{{docs: fu.Docs, vals: fu.Values, file: data}}}
		u.count += fu.Len()
	}
	return u
}

func (r *dvRun) len() int { return len(r.docs) / 4 }

func (r *dvRun) doc(i int) int32 { return int32(binary.LittleEndian.Uint32(r.docs[4*i:])) }

func (r *dvRun) val(i int) int64 { return int64(binary.LittleEndian.Uint64(r.vals[8*i:])) }

// heapBytes is what the run holds on the heap: nothing when it is a file's.
func (r *dvRun) heapBytes() int64 {
	if r.file != nil {
		return 0
	}
	return int64(len(r.docs) + len(r.vals))
}

// get is the run's value for doc. No defer: the lookup is on the path of
// every sorted or filtered doc, and a deferred KeepAlive cost it 1.4×
// (BenchmarkDocValuesUpdatesGet).
func (r *dvRun) get(doc int) (int64, bool) {
	docs := r.docs
	n := len(docs) >> 2
	if n == 0 || doc < int(r.doc(0)) || doc > int(r.doc(n-1)) {
		runtime.KeepAlive(r)
		return 0, false
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(binary.LittleEndian.Uint32(docs[4*m:4*m+4])) < doc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == n || int(binary.LittleEndian.Uint32(docs[4*lo:4*lo+4])) != doc {
		runtime.KeepAlive(r)
		return 0, false
	}
	v := r.val(lo)
	runtime.KeepAlive(r)
	return v, true
}

// dvFieldUpdates are one field's runs, oldest first. A keyword field's
// run values index terms, the field's term table: every value an update
// of the segment gave it, in the order first seen; append-only (a
// refresh that adds terms makes a new table), so older runs and readers
// keep reading theirs.
type dvFieldUpdates struct {
	typ   document.FieldType
	runs  []*dvRun
	terms [][]byte
}

// termsBytes approximates the heap of a keyword field's term table.
func (f *dvFieldUpdates) termsBytes() int64 {
	n := int64(24 * len(f.terms))
	for _, t := range f.terms {
		n += int64(len(t))
	}
	return n
}

// docValuesUpdates are a segment's updates as one reader sees them;
// immutable (a refresh that adds updates makes a new one sharing runs).
type docValuesUpdates struct {
	fields map[string]*dvFieldUpdates
	count  int // entries in all runs
}

// ramBytes is the heap the updates hold (12 bytes an entry of a heap run;
// runs served from a generation file hold none), counted in the indexing
// RAM budget.
func (u *docValuesUpdates) ramBytes() int64 {
	if u == nil {
		return 0
	}
	var n int64
	for _, f := range u.fields {
		for _, r := range f.runs {
			n += r.heapBytes()
		}
		n += f.termsBytes()
	}
	return n
}

// dvPendingEntry is an update a refresh's walk of the delete queue found
// for one doc of the segment, not yet in a run: val, or for a keyword
// field term (its id in the table is given at the freeze).
type dvPendingEntry struct {
	doc  int32
	val  int64
	term []byte
}

type dvPending struct {
	typ     document.FieldType
	entries []dvPendingEntry // in queue order
}

// addPendingUpdate buffers a value for doc until the next freezeDocValues.
func (s *segState) addPendingUpdate(field string, typ document.FieldType, doc int, val int64, term []byte) {
	if s.dvPending == nil {
		s.dvPending = map[string]*dvPending{}
	}
	p := s.dvPending[field]
	if p == nil {
		p = &dvPending{typ: typ}
		s.dvPending[field] = p
	}
	p.entries = append(p.entries, dvPendingEntry{doc: int32(doc), val: val, term: term})
}

// withPending returns u plus a new run per field of pending, merging runs
// of similar length; u is not changed.
func (u *docValuesUpdates) withPending(pending map[string]*dvPending) *docValuesUpdates {
	out := &docValuesUpdates{fields: map[string]*dvFieldUpdates{}}
	if u != nil {
		maps.Copy(out.fields, u.fields)
	}
	for name, p := range pending {
		// Stable: of one doc's entries the last in queue order wins.
		slices.SortStableFunc(p.entries, func(a, b dvPendingEntry) int { return cmp.Compare(a.doc, b.doc) })
		f := &dvFieldUpdates{typ: p.typ}
		if old := out.fields[name]; old != nil {
			f.runs, f.terms = slices.Clone(old.runs), old.terms
		}
		var ids map[string]int64 // keyword: the table's terms by id
		if p.typ == document.Keyword {
			ids = make(map[string]int64, len(f.terms))
			for i, t := range f.terms {
				ids[string(t)] = int64(i)
			}
			// Appending to the clipped table copies it: published ones
			// stay as they are.
			f.terms = slices.Clip(f.terms)
		}
		run := &dvRun{docs: make([]byte, 0, 4*len(p.entries)), vals: make([]byte, 0, 8*len(p.entries))}
		for i, e := range p.entries {
			if i+1 < len(p.entries) && p.entries[i+1].doc == e.doc {
				continue
			}
			if ids != nil {
				id, ok := ids[string(e.term)]
				if !ok {
					id = int64(len(f.terms))
					ids[string(e.term)] = id
					f.terms = append(f.terms, e.term)
				}
				e.val = id
			}
			run.append(e.doc, e.val)
		}
		f.runs = append(f.runs, run)
		// Merge the newest runs while the older is at most twice the newer:
		// run lengths then at least double going back, O(log n) runs. A
		// file's run is never merged on the heap: it stays where it lies
		// until the next write-out folds the runs after it in.
		for n := len(f.runs); n >= 2 && f.runs[n-2].file == nil && f.runs[n-2].len() <= 2*f.runs[n-1].len(); n = len(f.runs) {
			f.runs = append(f.runs[:n-2], mergeRuns(f.runs[n-2], f.runs[n-1]))
		}
		out.fields[name] = f
	}
	for _, f := range out.fields {
		for _, r := range f.runs {
			out.count += r.len()
		}
	}
	return out
}

func (r *dvRun) append(doc int32, val int64) {
	r.docs = binary.LittleEndian.AppendUint32(r.docs, uint32(doc))
	r.vals = binary.LittleEndian.AppendUint64(r.vals, uint64(val))
}

// mergeRuns merges two runs onto the heap; newer's value wins for a doc
// in both.
func mergeRuns(older, newer *dvRun) *dvRun {
	defer runtime.KeepAlive(older)
	defer runtime.KeepAlive(newer)
	n := older.len() + newer.len()
	out := &dvRun{docs: make([]byte, 0, 4*n), vals: make([]byte, 0, 8*n)}
	i, j := 0, 0
	for i < older.len() || j < newer.len() {
		switch {
		case j == newer.len() || i < older.len() && older.doc(i) < newer.doc(j):
			out.append(older.doc(i), older.val(i))
			i++
		default:
			if i < older.len() && older.doc(i) == newer.doc(j) {
				i++
			}
			out.append(newer.doc(j), newer.val(j))
			j++
		}
	}
	return out
}

// flatten is every field's updates as one run each, for a generation
// file, fields by name. A field with one run is given as it is (a file's
// bytes, perhaps: the caller keeps u alive while it reads them); one with
// several is streamed, its runs merged as they are read, so writing a
// segment's updates out never copies them onto the heap.
func (u *docValuesUpdates) flatten() []index.FixedNumericUpdates {
	if u == nil {
		return nil
	}
	out := make([]index.FixedNumericUpdates, 0, len(u.fields))
	for _, name := range slices.Sorted(maps.Keys(u.fields)) {
		f := u.fields[name]
		fu := index.FixedNumericUpdates{Field: name, Type: f.typ, Terms: f.terms}
		if runs := f.runs; len(runs) == 1 {
			fu.Docs, fu.Values = runs[0].docs, runs[0].vals
		} else {
			fu.Each = func(yield func(int32, int64)) { eachMerged(runs, yield) }
			fu.Each(func(int32, int64) { fu.N++ })
		}
		out = append(out, fu)
	}
	return out
}

// eachMerged calls yield with the entries of runs (oldest first) in doc
// order; of a doc in several runs, with the newest's value. There are
// O(log n) runs (and a file's): a scan of their heads per entry.
func eachMerged(runs []*dvRun, yield func(doc int32, val int64)) {
	defer runtime.KeepAlive(runs)
	pos := make([]int, len(runs))
	for {
		best, doc := -1, int32(0)
		for i, r := range runs {
			// <=: a later run is newer and wins a tie.
			if pos[i] < r.len() && (best < 0 || r.doc(pos[i]) <= doc) {
				best, doc = i, r.doc(pos[i])
			}
		}
		if best < 0 {
			return
		}
		yield(doc, runs[best].val(pos[best]))
		for i, r := range runs {
			if pos[i] < r.len() && r.doc(pos[i]) == doc {
				pos[i]++
			}
		}
	}
}

// updatedLeafReader is a segment's LeafReader with its doc-values updates
// layered over its numeric columns.
type updatedLeafReader struct {
	index.LeafReader
	dv  *docValuesUpdates // nil: none (a foreign segment's reader)
	fis *index.FieldInfos
	// foreign: the segment's own version columns are another index's
	// (SegmentInfo.ForeignVersions); only updates give docs a version.
	foreign bool

	sortedMu sync.Mutex
	sorted   map[string]*layeredSortedDocValues
}

func newUpdatedLeafReader(r index.LeafReader, dv *docValuesUpdates, foreign bool) index.LeafReader {
	if dv == nil || len(dv.fields) == 0 {
		if !foreign {
			return r
		}
		dv = nil
	}
	ur := &updatedLeafReader{LeafReader: r, dv: dv, fis: r.FieldInfos(), foreign: foreign}
	if dv == nil {
		return ur
	}
	// A field the segment has no column for (no doc of it had a value)
	// has one now: add it, so that merges and whoever walks the field
	// infos see it.
	var add []string
	for name, f := range dv.fields {
		if fi := ur.fis.ByName(name); fi == nil || fi.DocValues != dvKind(f.typ) {
			add = append(add, name)
		}
	}
	if len(add) > 0 {
		slices.Sort(add)
		infos := make([]index.FieldInfo, 0, ur.fis.Len()+len(add))
		for i := range ur.fis.Len() {
			fi := *ur.fis.ByNumber(i)
			if f := dv.fields[fi.Name]; f != nil {
				fi.DocValues, fi.Type = dvKind(f.typ), f.typ
				add = slices.DeleteFunc(add, func(n string) bool { return n == fi.Name })
			}
			infos = append(infos, fi)
		}
		for _, name := range add {
			typ := dv.fields[name].typ
			infos = append(infos, index.FieldInfo{Name: name, Number: len(infos), Type: typ, DocValues: dvKind(typ)})
		}
		if fis, err := index.NewFieldInfos(infos); err == nil {
			ur.fis = fis
		}
	}
	return ur
}

func (r *updatedLeafReader) FieldInfos() *index.FieldInfos { return r.fis }

func (r *updatedLeafReader) NumericDocValues(field string) index.NumericDocValues {
	f := r.dv.field(field)
	if r.foreign && (field == index.SeqNoField || field == index.PrimaryTermField) {
		// Another index's versions: only this index's updates count.
		if f == nil {
			return nil
		}
		return &layeredNumericDocValues{runs: f.runs}
	}
	base := r.LeafReader.NumericDocValues(field)
	if f == nil || f.typ == document.Keyword {
		return base
	}
	return &layeredNumericDocValues{base: base, runs: f.runs}
}

// field is the updates of the named field, or nil.
func (u *docValuesUpdates) field(name string) *dvFieldUpdates {
	if u == nil {
		return nil
	}
	return u.fields[name]
}

// SortedDocValues layers a keyword field's updates over the segment's
// column (layeredSortedDocValues), built on first use by each reader.
func (r *updatedLeafReader) SortedDocValues(field string) index.SortedDocValues {
	f := r.dv.field(field)
	if f == nil || f.typ != document.Keyword {
		return r.LeafReader.SortedDocValues(field)
	}
	r.sortedMu.Lock()
	defer r.sortedMu.Unlock()
	if l, ok := r.sorted[field]; ok {
		return l
	}
	if r.sorted == nil {
		r.sorted = map[string]*layeredSortedDocValues{}
	}
	l := newLayeredSortedDocValues(r.LeafReader.SortedDocValues(field), f)
	r.sorted[field] = l
	return l
}

// dvKind is the column kind of an updatable type.
func dvKind(t document.FieldType) index.DocValuesType {
	if t == document.Keyword {
		return index.DocValuesSorted
	}
	return index.DocValuesNumeric
}

// Document reads a stored document as the segment does (index.DocumentReader).
func (r *updatedLeafReader) Document(doc int, dst *index.StoredDoc) error {
	if d, ok := r.LeafReader.(index.DocumentReader); ok {
		return d.Document(doc, dst)
	}
	return r.LeafReader.StoredFields().Document(doc, dst)
}

// layeredNumericDocValues answers from the newest run holding the doc,
// else from the segment's column.
type layeredNumericDocValues struct {
	base index.NumericDocValues // nil: the segment has no column
	runs []*dvRun
}

func (l *layeredNumericDocValues) Get(doc int) (int64, bool) {
	for i := len(l.runs) - 1; i >= 0; i-- {
		if v, ok := l.runs[i].get(doc); ok {
			return v, true
		}
	}
	if l.base == nil {
		return 0, false
	}
	return l.base.Get(doc)
}

// carryDocValuesUpdates gives the merged segment the updates input i got
// while the merge ran (now differs from the snapshot the merge read):
// every update of the input, mapped through docMap — those the merge
// already folded in set the value it wrote, so carrying all is exact and
// needs no per-run bookkeeping.
func carryDocValuesUpdates(seg *segState, i int, snap, now *docValuesUpdates, docMap DocMap) {
	if now == snap || now == nil {
		return
	}
	for _, f := range now.flatten() {
		f.All(func(d int32, v int64) {
			nd := docMap(i, int(d))
			if nd < 0 {
				return
			}
			var term []byte
			if f.Type == document.Keyword {
				term = f.Terms[v]
			}
			seg.addPendingUpdate(f.Field, f.Type, nd, v, term)
		})
	}
	runtime.KeepAlive(now)
}

// CurrentSource returns src, the stored _source of doc in r (a leaf of a
// Reader), with the fields an in-place update changed set to their current
// values (source.Set, by the field's dotted path): what a copy of the
// document must hold to keep the updates when it is re-indexed — _source
// itself keeps the document as indexed. src is returned as is when no
// update reached the doc.
func CurrentSource(r index.LeafReader, doc int, src []byte) ([]byte, error) {
	dv := readerDocValuesUpdates(r)
	if dv == nil {
		return src, nil
	}
	var val []byte
	for _, name := range slices.Sorted(maps.Keys(dv.fields)) {
		if index.Reserved(name) { // _seq_no, _primary_term: not in _source
			continue
		}
		f := dv.fields[name]
		v, ok := (&layeredNumericDocValues{runs: f.runs}).Get(doc)
		if !ok {
			continue
		}
		if f.typ == document.Keyword {
			val, _ = json.Marshal(string(f.terms[v])) // a string always marshals
		} else {
			val = document.AppendNumericJSON(val[:0], f.typ, v)
		}
		var err error
		if src, err = source.Set(src, name, val); err != nil {
			return nil, fmt.Errorf("engine: doc %d: current value of %s: %w", doc, name, err)
		}
	}
	return src, nil
}

// writeOutDocValuesUpdatesLocked keeps the heap the segments' doc-values
// updates hold within their share of the indexing RAM budget (a quarter of
// RAMBufferBytes, counted with the DWPTs' RAM by the flush policy): when a
// refresh leaves them above it, the segments holding most are written out
// — each one's updates as its next generation file, which then serves them
// in place (mmap'd) — until they hold at most half the share. Lucene writes
// doc-values updates when its RAM buffer fills, likewise. Segments being
// merged are left alone: the merge folds their updates into its column.
// The caller holds segments.mu; it reports whether any segment changed.
func (w *IndexWriter) writeOutDocValuesUpdatesLocked() bool {
	share := w.opts.RAMBufferBytes / 4
	if w.opts.dvShare > 0 {
		share = w.opts.dvShare
	}
	var total int64
	for _, s := range w.segments.segs {
		total += s.dv.ramBytes()
	}
	defer func() { w.flushControl.setDocValuesBytes(total) }()
	if total <= share {
		return false
	}
	segs := slices.DeleteFunc(slices.Clone(w.segments.segs), func(s *segState) bool {
		return w.segments.merging[s] || s.dv.ramBytes() == 0
	})
	slices.SortFunc(segs, func(a, b *segState) int { return cmp.Compare(b.dv.ramBytes(), a.dv.ramBytes()) })
	changed := false
	for _, s := range segs {
		if total <= share/2 {
			break
		}
		held := s.dv.ramBytes()
		if err := w.liveFiles.writeOutDocValues(s); err != nil {
			w.log.Warn("engine: writing doc-values updates out failed; they stay on the heap", "segment", s.info.Name, "err", err)
			continue
		}
		total -= held - s.dv.ramBytes()
		w.stats.dvWriteOuts.Add(1)
		changed = true
	}
	return changed
}

// writeOutDocValues writes s's updates as its next generation file and
// makes the file serve them: s's updates become the file's runs.
func (lf *liveDocsFiles) writeOutDocValues(s *segState) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if err := lf.writeDocValuesLocked(s, s.dv, store.IOContext{Kind: store.IODefault}); err != nil {
		return err
	}
	f := s.dvFile.Load()
	file, err := lf.codec.OpenDocValuesUpdates(lf.dir, s.info, f.gen)
	if err != nil {
		return fmt.Errorf("doc-values updates of %s: %w", s.info.Name, err)
	}
	dv := openDocValuesFile(f.name, file)
	s.setDocValuesUpdates(dv)
	// The same file, now holding what s layers: a commit or checkpoint of
	// a reader with these updates lists it without writing another.
	s.dvFile.Store(&dvFileRef{name: f.name, of: dv, gen: f.gen})
	return nil
}

// layeredSortedDocValues is a keyword column with a segment's updates
// layered over it. Ordinals must keep term order across the segment's
// own terms and the updates' new ones without renumbering the segment's
// (O(segment terms) at every reopen): the combined dictionary is the
// segment's n terms with the table's terms the segment lacks (extra,
// sorted) slotted in, extra[j] before segment ord at[j]. Then segment ord
// o is o + |{j : at[j] <= o}|, extra[j] is at[j] + j, and LookupOrd
// inverts that by a binary search over the extras: O(log u) for u extra
// terms, and building it costs O(table · log n) — the table's size, the
// distinct values updates gave the field in the segment, not the
// segment's.
type layeredSortedDocValues struct {
	base  index.SortedDocValues // nil: the segment has no column
	n     int                   // base.ValueCount()
	runs  []*dvRun
	extra [][]byte // table terms the segment lacks, sorted
	at    []int    // at[j]: segment ord extra[j] goes before
	ordOf []int    // table id → combined ord
}

func newLayeredSortedDocValues(base index.SortedDocValues, f *dvFieldUpdates) *layeredSortedDocValues {
	l := &layeredSortedDocValues{base: base, runs: f.runs, ordOf: make([]int, len(f.terms))}
	if base != nil {
		l.n = base.ValueCount()
	}
	// Each table term: its segment ord (>= 0), or where it goes (-1-at).
	pos := make([]int, len(f.terms))
	var extra []int // table ids
	for id, t := range f.terms {
		o := sort.Search(l.n, func(i int) bool { return bytes.Compare(l.base.LookupOrd(i), t) >= 0 })
		if o < l.n && bytes.Equal(l.base.LookupOrd(o), t) {
			pos[id] = o
			continue
		}
		pos[id] = -1 - o
		extra = append(extra, id)
	}
	slices.SortFunc(extra, func(a, b int) int { return bytes.Compare(f.terms[a], f.terms[b]) })
	for j, id := range extra {
		l.extra = append(l.extra, f.terms[id])
		l.at = append(l.at, -1-pos[id])
		l.ordOf[id] = -1 - pos[id] + j
	}
	for id, p := range pos {
		if p >= 0 {
			l.ordOf[id] = l.segOrd(p)
		}
	}
	return l
}

// segOrd is the combined ord of segment ord o.
func (l *layeredSortedDocValues) segOrd(o int) int {
	if len(l.at) == 0 {
		return o
	}
	return o + sort.SearchInts(l.at, o+1)
}

func (l *layeredSortedDocValues) Ord(doc int) int {
	for i := len(l.runs) - 1; i >= 0; i-- {
		if id, ok := l.runs[i].get(doc); ok {
			return l.ordOf[id]
		}
	}
	if l.base == nil {
		return -1
	}
	o := l.base.Ord(doc)
	if o < 0 {
		return o
	}
	return l.segOrd(o)
}

func (l *layeredSortedDocValues) LookupOrd(ord int) []byte {
	// The first extra at or after ord: those before it come before ord.
	j := sort.Search(len(l.at), func(j int) bool { return l.at[j]+j >= ord })
	if j < len(l.at) && l.at[j]+j == ord {
		return l.extra[j]
	}
	return l.base.LookupOrd(ord - j)
}

func (l *layeredSortedDocValues) ValueCount() int { return l.n + len(l.extra) }
