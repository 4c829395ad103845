package mergepolicy

import (
	"errors"
	"fmt"
	"math"
)

// Defaults, from Lucene 10.x TieredMergePolicy (see the package doc for where
// each one comes from).
const (
	DefaultMaxMergedSegmentBytes       int64   = 5 << 30  // 5 GiB
	DefaultSegmentsPerTier             float64 = 8        // Lucene 10.3+ (apache/lucene#14823); was 10
	DefaultFloorSegmentBytes           int64   = 16 << 20 // 16 MiB, Lucene 10.2+ (apache/lucene#14189); was 2 MiB
	DefaultDeletesPctAllowed           float64 = 20
	DefaultForceMergeDeletesPctAllowed float64 = 10
	DefaultTargetSearchConcurrency     int     = 1
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("mergepolicy: invalid options")

// Options configure a TieredMergePolicy. The zero value means "all defaults"
// once SetDefaults has run.
type Options struct {
	// MaxMergedSegmentBytes caps the (delete pro-rated) size of a segment
	// produced by natural merges and forced-deletes merges. Segments larger
	// than half of it are left alone unless they carry many deletes.
	MaxMergedSegmentBytes int64
	// SegmentsPerTier is how many segments each size tier may hold before a
	// merge is due; it is also the merge factor (segments per merge) above
	// the floor size. Must be >= 2.
	SegmentsPerTier float64
	// FloorSegmentBytes rounds small segments up when computing the segment
	// budget and the merge skew, so a long tail of tiny flushes is merged
	// aggressively. Merges whose result stays under the floor may take any
	// number of segments at once.
	FloorSegmentBytes int64
	// DeletesPctAllowed is the share of deleted docs (of all docs) tolerated
	// before merges are chosen purely to reclaim deletes. 5..50.
	DeletesPctAllowed float64
	// ForceMergeDeletesPctAllowed: FindForcedDeletesMerges only rewrites
	// segments whose delete share is above this. 0..100.
	ForceMergeDeletesPctAllowed float64
	// TargetSearchConcurrency keeps merges from producing segments with more
	// than 1/TargetSearchConcurrency of the live docs, so a search can be
	// split into that many similar slices. >= 1.
	TargetSearchConcurrency int
}

// SetDefaults fills every zero field with its default.
func (o *Options) SetDefaults() {
	orDefault(&o.MaxMergedSegmentBytes, DefaultMaxMergedSegmentBytes)
	orDefault(&o.SegmentsPerTier, DefaultSegmentsPerTier)
	orDefault(&o.FloorSegmentBytes, DefaultFloorSegmentBytes)
	orDefault(&o.DeletesPctAllowed, DefaultDeletesPctAllowed)
	orDefault(&o.ForceMergeDeletesPctAllowed, DefaultForceMergeDeletesPctAllowed)
	orDefault(&o.TargetSearchConcurrency, DefaultTargetSearchConcurrency)
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Validate reports the first out-of-range field. Call it after SetDefaults.
func (o Options) Validate() error {
	switch {
	case o.MaxMergedSegmentBytes <= 0:
		return fmt.Errorf("%w: MaxMergedSegmentBytes must be > 0, got %d", ErrInvalidOptions, o.MaxMergedSegmentBytes)
	case math.IsNaN(o.SegmentsPerTier) || o.SegmentsPerTier < 2:
		return fmt.Errorf("%w: SegmentsPerTier must be >= 2, got %v", ErrInvalidOptions, o.SegmentsPerTier)
	case o.FloorSegmentBytes <= 0:
		return fmt.Errorf("%w: FloorSegmentBytes must be > 0, got %d", ErrInvalidOptions, o.FloorSegmentBytes)
	case !(o.DeletesPctAllowed >= 5 && o.DeletesPctAllowed <= 50):
		return fmt.Errorf("%w: DeletesPctAllowed must be in [5, 50], got %v", ErrInvalidOptions, o.DeletesPctAllowed)
	case !(o.ForceMergeDeletesPctAllowed >= 0 && o.ForceMergeDeletesPctAllowed <= 100):
		return fmt.Errorf("%w: ForceMergeDeletesPctAllowed must be in [0, 100], got %v", ErrInvalidOptions, o.ForceMergeDeletesPctAllowed)
	case o.TargetSearchConcurrency < 1:
		return fmt.Errorf("%w: TargetSearchConcurrency must be >= 1, got %d", ErrInvalidOptions, o.TargetSearchConcurrency)
	}
	return nil
}
