package mergepolicy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Segment describes one segment of a shard as the policy sees it.
type Segment struct {
	Name      string
	SizeBytes int64 // bytes on disk, deletes included
	MaxDoc    int   // docs written, deleted or not
	DelCount  int   // deleted docs, including deletes a running merge will carry over
}

// OneMerge is one merge to run: its inputs, largest first.
type OneMerge struct {
	Segments []string
	// EstimatedBytes is the expected size of the merged segment: the inputs'
	// sizes pro-rated by their live docs. The scheduler throttles by it.
	EstimatedBytes int64
	// Forced marks merges from FindForcedMerges (force-merge API); schedulers
	// may rate them differently.
	Forced bool
}

// MergeSpecification is what a Find* call decided.
type MergeSpecification struct {
	// Merges are disjoint and never include a segment that is already merging.
	Merges []OneMerge
	// Drop lists segments whose every doc is deleted (or that have no docs):
	// the engine removes them from the commit without merging. Segments that
	// are merging are never listed; their merge takes care of them.
	Drop []string
}

// Empty reports whether there is nothing to do.
func (s MergeSpecification) Empty() bool { return len(s.Merges) == 0 && len(s.Drop) == 0 }

// ErrInvalidSegments is wrapped by the error every Find* method returns for
// malformed input (duplicate or empty names, negative sizes, DelCount > MaxDoc).
var ErrInvalidSegments = errors.New("mergepolicy: invalid segments")

// TieredMergePolicy picks merges of roughly equal-sized segments so the
// segment count stays within a budget of SegmentsPerTier per size tier. It is
// stateless and safe for concurrent use. See the package doc.
type TieredMergePolicy struct {
	opts Options
}

// NewTieredMergePolicy applies defaults to opts and validates them.
func NewTieredMergePolicy(opts Options) (*TieredMergePolicy, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &TieredMergePolicy{opts: opts}, nil
}

// Options returns the effective options, defaults applied.
func (p *TieredMergePolicy) Options() Options { return p.opts }

// segSize is a segment with its pro-rated size computed once, so sorting sees
// stable values.
type segSize struct {
	name     string
	raw      int64 // SizeBytes
	size     int64 // raw pro-rated by live docs
	maxDoc   int
	delCount int
}

func (s segSize) liveDocs() int { return s.maxDoc - s.delCount }

func (s segSize) delPct() float64 {
	if s.maxDoc == 0 {
		return 0
	}
	return 100 * float64(s.delCount) / float64(s.maxDoc)
}

func fullyDeleted(s Segment) bool { return s.DelCount >= s.MaxDoc }

// proRated is Lucene's MergePolicy.size: the bytes the live docs occupy.
func proRated(s Segment) int64 {
	if s.MaxDoc <= 0 {
		return s.SizeBytes
	}
	live := float64(s.MaxDoc-s.DelCount) / float64(s.MaxDoc)
	return int64(float64(s.SizeBytes) * live)
}

func validate(segs []Segment) error {
	seen := make(map[string]struct{}, len(segs))
	for _, s := range segs {
		switch {
		case s.Name == "":
			return fmt.Errorf("%w: segment with empty name", ErrInvalidSegments)
		case s.SizeBytes < 0 || s.MaxDoc < 0 || s.DelCount < 0:
			return fmt.Errorf("%w: %s has a negative size or count", ErrInvalidSegments, s.Name)
		case s.DelCount > s.MaxDoc:
			return fmt.Errorf("%w: %s has DelCount %d > MaxDoc %d", ErrInvalidSegments, s.Name, s.DelCount, s.MaxDoc)
		}
		if _, dup := seen[s.Name]; dup {
			return fmt.Errorf("%w: duplicate segment %s", ErrInvalidSegments, s.Name)
		}
		seen[s.Name] = struct{}{}
	}
	return nil
}

// split validates segs and separates the fully deleted, non-merging segments
// (to drop) from the rest, which it returns largest first (name breaks ties,
// so results are deterministic).
func split(segs []Segment, merging map[string]bool) (rest []segSize, drop []string, err error) {
	if err := validate(segs); err != nil {
		return nil, nil, err
	}
	rest = make([]segSize, 0, len(segs))
	for _, s := range segs {
		if fullyDeleted(s) && !merging[s.Name] {
			drop = append(drop, s.Name)
			continue
		}
		rest = append(rest, segSize{name: s.Name, raw: s.SizeBytes, size: proRated(s), maxDoc: s.MaxDoc, delCount: s.DelCount})
	}
	slices.SortFunc(rest, func(a, b segSize) int {
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	slices.Sort(drop)
	return rest, drop, nil
}

// FindMerges returns the natural merges for the segments of one shard;
// merging names the segments already in running or registered merges. It is
// what the engine calls after a flush or a finished merge.
func (p *TieredMergePolicy) FindMerges(segs []Segment, merging map[string]bool) (MergeSpecification, error) {
	all, drop, err := split(segs, merging)
	if err != nil {
		return MergeSpecification{}, err
	}
	spec := MergeSpecification{Drop: drop}
	o := &p.opts

	var (
		totIndexBytes  int64
		minSegBytes    int64 = math.MaxInt64
		totalDelDocs   int
		totalMaxDoc    int
		mergingBytes   int64
		eligible       = make([]segSize, 0, len(all))
		maxAllowedSegs = float64(0)
	)
	for _, s := range all {
		if merging[s.name] {
			mergingBytes += s.size
			// Its deletes are being reclaimed already: count only live docs.
			totalMaxDoc += s.liveDocs()
		} else {
			eligible = append(eligible, s)
			totalDelDocs += s.delCount
			totalMaxDoc += s.maxDoc
		}
		minSegBytes = min(minSegBytes, s.size)
		totIndexBytes += s.size
	}
	if len(eligible) == 0 {
		return spec, nil
	}
	totalDelPct := 0.0
	if totalMaxDoc > 0 {
		totalDelPct = 100 * float64(totalDelDocs) / float64(totalMaxDoc)
	}
	allowedDelCount := int(o.DeletesPctAllowed * float64(totalMaxDoc) / 100)

	// Grace segments over half the max size out of the budget, unless deletes
	// are piling up in them; count the first TargetSearchConcurrency-1
	// segments as whole slots so the top tier keeps several segments.
	tooBig, concurrencyCount := 0, 0
	kept := eligible[:0]
	for _, s := range eligible {
		if s.size > o.MaxMergedSegmentBytes/2 && (totalDelPct <= o.DeletesPctAllowed || s.delPct() <= o.DeletesPctAllowed) {
			tooBig++
			totIndexBytes -= s.size
			allowedDelCount -= s.delCount
			continue
		}
		if concurrencyCount+tooBig < o.TargetSearchConcurrency-1 {
			concurrencyCount++
			maxAllowedSegs++
			totIndexBytes -= s.size
		}
		kept = append(kept, s)
	}
	eligible = kept
	allowedDelCount = max(0, allowedDelCount)

	mergeFactor := int(o.SegmentsPerTier)
	// The budget: SegmentsPerTier segments per tier, tiers growing by
	// mergeFactor from the floor up to the max segment size.
	levelSize := max(minSegBytes, o.FloorSegmentBytes, 1)
	bytesLeft := totIndexBytes
	for {
		segCountLevel := float64(bytesLeft) / float64(levelSize)
		if segCountLevel < o.SegmentsPerTier || levelSize == o.MaxMergedSegmentBytes {
			maxAllowedSegs += math.Ceil(segCountLevel)
			break
		}
		maxAllowedSegs += o.SegmentsPerTier
		bytesLeft -= int64(o.SegmentsPerTier * float64(levelSize))
		if levelSize > o.MaxMergedSegmentBytes/int64(mergeFactor) {
			levelSize = o.MaxMergedSegmentBytes // also avoids overflow
		} else {
			levelSize *= int64(mergeFactor)
		}
	}
	maxAllowedSegs = max(maxAllowedSegs, o.SegmentsPerTier, float64(o.TargetSearchConcurrency-tooBig))

	spec.Merges = p.doFindMerges(eligible, findParams{
		kind:              natural,
		mergeFactor:       mergeFactor,
		allowedSegCount:   int(maxAllowedSegs),
		allowedDelCount:   allowedDelCount,
		allowedDocCount:   ceilDiv(totalMaxDoc-totalDelDocs, o.TargetSearchConcurrency),
		maxMergeIsRunning: mergingBytes >= o.MaxMergedSegmentBytes,
	})
	return spec, nil
}

type mergeKind int

const (
	natural mergeKind = iota
	forcedDeletes
)

type findParams struct {
	kind              mergeKind
	mergeFactor       int
	allowedSegCount   int
	allowedDelCount   int
	allowedDocCount   int
	maxMergeIsRunning bool
}

// doFindMerges repeatedly picks the best-scoring candidate among eligible
// (sorted largest first) until the index is within budget. Each candidate
// starts at one segment and packs following (smaller) ones while they fit.
func (p *TieredMergePolicy) doFindMerges(eligible []segSize, fp findParams) []OneMerge {
	o := &p.opts
	var merges []OneMerge
	picked := make([]bool, len(eligible))
	// A deletes trigger can make many large segments mergeable at once; take
	// one max-sized merge per call and pick up the next one later.
	haveOneLargeMerge := false
	candidate := make([]int, 0, 16)
	var best []int

	for {
		remaining, remainingDel := 0, 0
		for i, s := range eligible {
			if !picked[i] {
				remaining++
				remainingDel += s.delCount
			}
		}
		if remaining == 0 {
			return merges
		}
		if fp.kind == natural && remaining <= fp.allowedSegCount && remainingDel <= fp.allowedDelCount {
			return merges
		}

		var (
			bestScore      float64
			haveBest       bool
			bestTooLarge   bool
			bestMergeBytes int64
		)
		best = best[:0]
		for start := range eligible {
			if picked[start] {
				continue
			}
			candidate = candidate[:0]
			hitTooLarge := false
			var bytesThisMerge int64
			docsThisMerge := 0
			for idx := start; idx < len(eligible); idx++ {
				// Under the floor a merge may take any number of segments:
				// tiny segments must grow fast.
				if !(len(candidate) < fp.mergeFactor || bytesThisMerge < o.FloorSegmentBytes) ||
					bytesThisMerge >= o.MaxMergedSegmentBytes ||
					!(bytesThisMerge < o.FloorSegmentBytes || docsThisMerge <= fp.allowedDocCount) {
					break
				}
				if picked[idx] {
					continue
				}
				s := eligible[idx]
				if bytesThisMerge+s.size > o.MaxMergedSegmentBytes ||
					(bytesThisMerge > o.FloorSegmentBytes && docsThisMerge+s.liveDocs() > fp.allowedDocCount) {
					// Only the byte cap counts as "too large": such merges make
					// max-sized segments that stay put for a long time.
					hitTooLarge = hitTooLarge || bytesThisMerge+s.size > o.MaxMergedSegmentBytes
					if len(candidate) > 0 {
						// Skip it and try packing smaller segments instead.
						continue
					}
					// A lone segment over the cap can still be rewritten
					// alone to reclaim its deletes.
				}
				candidate = append(candidate, idx)
				bytesThisMerge += s.size
				docsThisMerge += s.liveDocs()
			}
			if len(candidate) == 0 {
				continue
			}
			largest := eligible[candidate[0]]
			// A merge must grow its largest input by at least 50%, or the
			// same big segment gets rewritten over and over (O(N^2)), unless
			// that segment carries many deletes.
			if !hitTooLarge && fp.kind == natural && float64(bytesThisMerge) < float64(largest.size)*1.5 &&
				float64(largest.delCount) < float64(largest.maxDoc)*o.DeletesPctAllowed/100 {
				continue
			}
			// Rewriting one segment only makes sense to drop its deletes.
			if len(candidate) == 1 && largest.delCount == 0 {
				continue
			}
			// Candidates only get smaller from here on.
			if haveBest && !hitTooLarge && len(candidate) < fp.mergeFactor {
				break
			}
			score := p.score(eligible, candidate, hitTooLarge)
			if (!haveBest || score < bestScore) && (!hitTooLarge || !fp.maxMergeIsRunning) {
				best = append(best[:0], candidate...)
				bestScore, haveBest = score, true
				bestTooLarge = hitTooLarge
				bestMergeBytes = bytesThisMerge
			}
		}
		if !haveBest {
			return merges
		}
		if !haveOneLargeMerge || !bestTooLarge || fp.kind == forcedDeletes {
			haveOneLargeMerge = haveOneLargeMerge || bestTooLarge
			m := OneMerge{Segments: make([]string, len(best)), EstimatedBytes: bestMergeBytes}
			for i, idx := range best {
				m.Segments[i] = eligible[idx].name
			}
			merges = append(merges, m)
		}
		// Taken or skipped, these are out of the running for this call.
		for _, idx := range best {
			picked[idx] = true
		}
	}
}

// score rates a candidate merge; lower is better. It multiplies the skew
// (largest input over the total, both floored: 1/n for a balanced merge, near
// 1 for a lopsided one), a gentle size penalty, and the square of the share of
// bytes that survive, which strongly favours merges that reclaim deletes.
func (p *TieredMergePolicy) score(eligible []segSize, candidate []int, hitTooLarge bool) float64 {
	var before, after, afterFloored int64
	for _, idx := range candidate {
		s := eligible[idx]
		after += s.size
		afterFloored += p.floorSize(s.size)
		before += s.raw
	}
	var skew float64
	if hitTooLarge {
		// This merge will not cascade, so its skew cannot cause N^2 cost:
		// pretend it is perfectly balanced.
		skew = 1 / float64(int(p.opts.SegmentsPerTier))
	} else {
		skew = float64(p.floorSize(eligible[candidate[0]].size)) / float64(afterFloored)
	}
	score := skew * math.Pow(float64(after), 0.05)
	if before > 0 {
		nonDelRatio := float64(after) / float64(before)
		score *= nonDelRatio * nonDelRatio
	}
	return score
}

func (p *TieredMergePolicy) floorSize(b int64) int64 { return max(b, p.opts.FloorSegmentBytes) }

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
