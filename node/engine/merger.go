package engine

import (
	"context"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/merge"
)

// DefaultMerger is the SegmentMerger over node/engine/merge's merged view.
func DefaultMerger(ctx context.Context, inputs []MergeInput) (index.LeafReader, DocMap, error) {
	in := make([]merge.Input, len(inputs))
	for i, x := range inputs {
		in[i] = merge.Input{Reader: x.Reader, Live: x.Live}
	}
	r, err := merge.NewReader(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return r, r.DocMap, nil
}
