package index

import (
	"context"

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
	// file name; ReadDocValuesUpdates reads it back, checksummed.
	WriteDocValuesUpdates(dir store.Directory, info *SegmentInfo, gen int64, fields []NumericUpdates, ioctx store.IOContext) (string, error)
	ReadDocValuesUpdates(dir store.Directory, info *SegmentInfo, gen int64) ([]NumericUpdates, error)
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
// type (a numeric one).
type NumericUpdates struct {
	Field  string
	Type   document.FieldType
	Docs   []int32
	Values []int64
}
