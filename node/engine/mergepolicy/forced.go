package mergepolicy

import (
	"fmt"
	"math"
)

// FindForcedMerges returns the merges that bring segs down to at most
// maxSegmentCount segments (the force-merge API). segs should hold only the
// segments taking part: those that existed when the force merge was asked
// for, plus the outputs of its own merges; segments flushed since are left
// out by the caller. Call it again after each round of merges finishes, until
// it returns no merges.
//
// maxSegmentCount wins over MaxMergedSegmentBytes: merging to one segment has
// no size cap, and merging to N allows max(total/N, MaxMergedSegmentBytes)
// plus 25%. Segments with deletes are always rewritten. While any of segs is
// merging, nothing new is proposed, so rounds do not overlap.
func (p *TieredMergePolicy) FindForcedMerges(segs []Segment, maxSegmentCount int, merging map[string]bool) (MergeSpecification, error) {
	if maxSegmentCount < 1 {
		return MergeSpecification{}, fmt.Errorf("%w: maxSegmentCount must be >= 1, got %d", ErrInvalidSegments, maxSegmentCount)
	}
	all, drop, err := split(segs, merging)
	if err != nil {
		return MergeSpecification{}, err
	}
	spec := MergeSpecification{Drop: drop}

	var totalMergeBytes int64
	forceMergeRunning := false
	cands := make([]segSize, 0, len(all))
	for _, s := range all {
		if merging[s.name] {
			forceMergeRunning = true
			continue
		}
		totalMergeBytes += s.size
		cands = append(cands, s)
	}

	maxMergeBytes := p.opts.MaxMergedSegmentBytes
	if maxSegmentCount == 1 {
		maxMergeBytes = math.MaxInt64
	} else {
		maxMergeBytes = max(totalMergeBytes/int64(maxSegmentCount), maxMergeBytes)
		// Aim 25% high so the bins below rarely need a second pass.
		maxMergeBytes = min(maxMergeBytes, math.MaxInt64/5*4) * 5 / 4
	}

	foundDeletes := false
	kept := cands[:0]
	for _, s := range cands {
		if s.delCount != 0 {
			foundDeletes = true
		} else if s.size >= maxMergeBytes {
			// Already big and clean: leave it.
			continue
		}
		kept = append(kept, s)
	}
	cands = kept
	if len(cands) == 0 || forceMergeRunning {
		return spec, nil
	}
	if !foundDeletes && len(cands) <= maxSegmentCount && (maxSegmentCount > 1 || len(cands) == 1) {
		return spec, nil // already merged
	}

	if maxSegmentCount == 1 && totalMergeBytes < maxMergeBytes {
		spec.Merges = []OneMerge{forcedMerge(cands)}
		return spec, nil
	}

	// Bin-pack from the smallest segment up, so the biggest are left alone;
	// each bin of k segments removes k-1 from the count.
	index := len(cands) - 1
	resulting := len(cands)
	for {
		var bin []segSize
		var binBytes int64
		for index >= 0 && resulting > maxSegmentCount {
			s := cands[index]
			// Add while it fits, and always take at least two: moving to a
			// larger segment would not make a cheaper bin.
			if binBytes+s.size > maxMergeBytes && len(bin) >= 2 {
				break
			}
			bin = append(bin, s)
			binBytes += s.size
			index--
			if len(bin) > 1 {
				resulting--
			}
		}
		if len(bin) < 2 {
			return spec, nil
		}
		// Largest first, like natural merges.
		for i, j := 0, len(bin)-1; i < j; i, j = i+1, j-1 {
			bin[i], bin[j] = bin[j], bin[i]
		}
		spec.Merges = append(spec.Merges, forcedMerge(bin))
	}
}

func forcedMerge(segs []segSize) OneMerge {
	m := OneMerge{Segments: make([]string, len(segs)), Forced: true}
	for i, s := range segs {
		m.Segments[i] = s.name
		m.EstimatedBytes += s.size
	}
	return m
}

// FindForcedDeletesMerges returns merges that rewrite every segment whose
// delete share is above ForceMergeDeletesPctAllowed (the expunge-deletes
// API). Merges respect MaxMergedSegmentBytes; a lone segment over it is
// rewritten by itself.
func (p *TieredMergePolicy) FindForcedDeletesMerges(segs []Segment, merging map[string]bool) (MergeSpecification, error) {
	all, drop, err := split(segs, merging)
	if err != nil {
		return MergeSpecification{}, err
	}
	spec := MergeSpecification{Drop: drop}
	totalMaxDoc, totalDel := 0, 0
	eligible := make([]segSize, 0, len(all))
	for _, s := range all {
		totalMaxDoc += s.maxDoc
		totalDel += s.delCount
		if !merging[s.name] && s.delPct() > p.opts.ForceMergeDeletesPctAllowed {
			eligible = append(eligible, s)
		}
	}
	if len(eligible) == 0 {
		return spec, nil
	}
	spec.Merges = p.doFindMerges(eligible, findParams{
		kind:            forcedDeletes,
		mergeFactor:     math.MaxInt,
		allowedSegCount: math.MaxInt,
		allowedDocCount: ceilDiv(totalMaxDoc-totalDel, p.opts.TargetSearchConcurrency),
	})
	return spec, nil
}
