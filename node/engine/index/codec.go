package index

import (
	"context"
	"encoding/binary"

	"github.com/sluice-search/sluice/node/engine/document"

	"github.com/sluice-search/sluice/node/engine/store"
)

// Codec writes and reads segments: the on-disk format behind an interface
// (Lucene 4's idea), so formats can evolve with old segments still readable.
type Codec interface {
	// Name is written into SegmentInfo.Codec and commit points.
	Name() string
	// WriteSegment writes src (every doc 0..src.MaxDoc()-1, deleted or not:
	// deletes live in separate live-docs generations) as the segment named
	// by info into dir, and sets info.Files. Files are written with ioctx
	// (flush vs merge, throttling). On error, files already written are
	// removed.
	WriteSegment(ctx context.Context, dir store.Directory, info *SegmentInfo, src LeafReader, ioctx store.IOContext) error
	// OpenSegment opens a segment written by this codec, verifying file
	// headers (codec name, version, segment ID) and footers; corruption is
	// an error wrapping ErrCorrupt.
	OpenSegment(dir store.Directory, info *SegmentInfo) (SegmentReader, error)
	// WriteLiveDocs writes live docs as generation gen of the segment and
	// returns the file name; ReadLiveDocs reads it back.
	WriteLiveDocs(dir store.Directory, info *SegmentInfo, gen int64, live *FixedBitSet, ioctx store.IOContext) (string, error)
	ReadLiveDocs(dir store.Directory, info *SegmentInfo, gen int64) (*FixedBitSet, error)
	// WriteDocValuesUpdates writes every in-place doc-values update of a
	// segment (all fields, cumulative) as generation gen and returns the
	// file name; ReadDocValuesUpdates reads it back onto the heap,
	// checksummed; OpenDocValuesUpdates checks it the same way and serves
	// the arrays from the file's bytes (mmap'd: off the Go heap).
	WriteDocValuesUpdates(dir store.Directory, info *SegmentInfo, gen int64, fields []FixedNumericUpdates, ioctx store.IOContext) (string, error)
	ReadDocValuesUpdates(dir store.Directory, info *SegmentInfo, gen int64) ([]NumericUpdates, error)
	OpenDocValuesUpdates(dir store.Directory, info *SegmentInfo, gen int64) (*DocValuesUpdatesFile, error)
}

// SegmentReader is an open on-disk segment. It holds mmap'd files; Close
// releases them once no search uses the reader (the engine ref-counts).
type SegmentReader interface {
	LeafReader
	Info() *SegmentInfo
	// RAMBytesUsed is the Go heap held by the reader (FST roots, small
	// metadata); mmap'd bytes are not counted.
	RAMBytesUsed() int64
	Close() error
}

// NumericUpdates are one field's doc values of a segment updated in place
// (the engine's doc-values updates): Docs strictly ascending, one Value
// each, read over the segment's own column. Type is the field's mapping
// type: a numeric one, or Keyword, whose Values index Terms (the field's
// term table: every value an update of the segment gave it).
type NumericUpdates struct {
	Field  string
	Type   document.FieldType
	Docs   []int32
	Values []int64
	Terms  [][]byte
}

// FixedNumericUpdates are NumericUpdates as fixed-width little-endian
// arrays — Docs 4 bytes an entry, Values 8 — the form a generation file
// holds them in, so that they can be binary-searched where they lie.
type FixedNumericUpdates struct {
	Field  string
	Type   document.FieldType
	Docs   []byte
	Values []byte
	Terms  [][]byte // Keyword: the term table Values index
	// Each, when set, gives the N entries in doc order instead of Docs
	// and Values, so that a writer streams them from where they are
	// (several runs, merged as they are read) without a copy.
	Each func(yield func(doc int32, val int64))
	N    int
}

// Len is the number of entries.
func (f *FixedNumericUpdates) Len() int {
	if f.Each != nil {
		return f.N
	}
	return len(f.Docs) / 4
}

// All calls yield with every entry in doc order.
func (f *FixedNumericUpdates) All(yield func(doc int32, val int64)) {
	if f.Each != nil {
		f.Each(yield)
		return
	}
	for i := range f.Len() {
		yield(f.Doc(i), f.Value(i))
	}
}

// Doc is entry i's doc.
func (f *FixedNumericUpdates) Doc(i int) int32 {
	return int32(binary.LittleEndian.Uint32(f.Docs[4*i:]))
}

// Value is entry i's value.
func (f *FixedNumericUpdates) Value(i int) int64 {
	return int64(binary.LittleEndian.Uint64(f.Values[8*i:]))
}

// Fixed is u as fixed-width arrays.
func (u *NumericUpdates) Fixed() FixedNumericUpdates {
	f := FixedNumericUpdates{Field: u.Field, Type: u.Type, Terms: u.Terms,
		Docs: make([]byte, 0, 4*len(u.Docs)), Values: make([]byte, 0, 8*len(u.Values))}
	for _, d := range u.Docs {
		f.Docs = binary.LittleEndian.AppendUint32(f.Docs, uint32(d))
	}
	for _, v := range u.Values {
		f.Values = binary.LittleEndian.AppendUint64(f.Values, uint64(v))
	}
	return f
}

// Numeric is f copied onto the heap as NumericUpdates.
func (f *FixedNumericUpdates) Numeric() NumericUpdates {
	u := NumericUpdates{Field: f.Field, Type: f.Type, Terms: f.Terms, Docs: make([]int32, f.Len()), Values: make([]int64, len(f.Values)/8)}
	for i := range u.Docs {
		u.Docs[i] = f.Doc(i)
	}
	for i := range u.Values {
		u.Values[i] = f.Value(i)
	}
	return u
}

// DocValuesUpdatesFile is a generation file opened in place: Fields'
// arrays are slices of the file's bytes, valid until Close.
type DocValuesUpdatesFile struct {
	Fields []FixedNumericUpdates
	Close  func() error
}
