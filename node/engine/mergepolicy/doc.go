// Package mergepolicy decides which segments of a shard to merge. It holds
// TieredMergePolicy, a Go rendering of Lucene 10's TieredMergePolicy
// (lucene/core/src/java/org/apache/lucene/index/TieredMergePolicy.java). It
// is pure: it reads segment descriptors and returns merges; running them is
// the engine's job, and throttling them is mergescheduler's.
//
// # Using it
//
// After every flush and every finished merge the engine calls
//
//	spec, err := policy.FindMerges(segments, merging)
//
// with one Segment per live segment (SizeBytes on disk, MaxDoc, DelCount
// including deletes a running merge will carry over) and the set of segments
// already in registered or running merges. It drops spec.Drop from the
// commit (every doc deleted: nothing to merge), marks each merge's inputs as
// merging and hands the merges to the scheduler, with OneMerge.EstimatedBytes
// as the size estimate. FindForcedMerges serves the force-merge API (call it
// again after each round finishes until it returns nothing);
// FindForcedDeletesMerges serves expunge-deletes.
//
// # The algorithm
//
// Sizes are pro-rated by live docs (a 1 GB segment with half its docs deleted
// counts as 500 MB). Segments above half of MaxMergedSegmentBytes are set
// aside, unless deletes are over DeletesPctAllowed both in the index and in
// that segment. For the rest a budget is computed: tiers start at
// max(smallest segment, FloorSegmentBytes) and grow by SegmentsPerTier up to
// the max size; each tier may hold SegmentsPerTier segments. While the
// eligible segments exceed the budget, or their deletes exceed
// DeletesPctAllowed of the docs, the policy scores candidates: sorted largest
// first, a candidate starts at each segment and packs following ones until
// SegmentsPerTier segments (any number while the result is under the floor)
// or the max size. The score multiplies
//
//   - skew: the largest input over the total, both floored (1/n balanced,
//     near 1 lopsided; lopsided merges cost O(N^2) over time),
//   - size^0.05: gently prefer smaller merges,
//   - (live bytes / raw bytes)^2: strongly prefer merges that reclaim deletes,
//
// and the lowest wins; its segments leave the pool and the search repeats.
// A merge that would not grow its largest input by 50% is skipped unless that
// input is delete-heavy (this stops rewriting one big segment over and over).
// At most one max-sized merge is proposed per call, and none while merges
// totalling the max size already run. TargetSearchConcurrency caps the docs
// per merged segment so searches can be sliced.
//
// Forced merges bin-pack from the smallest segment up to
// max(total/N, MaxMergedSegmentBytes) x 1.25 (no cap when N is 1), always
// rewriting segments with deletes.
//
// # Defaults, checked against Lucene
//
//   - MaxMergedSegmentBytes 5 GiB.
//   - SegmentsPerTier 8: lowered from 10 in apache/lucene#14823 (2025); more
//     aggressive merging, write amplification 3.4 -> 3.8 in Lucene's sim.
//   - FloorSegmentBytes 16 MiB: raised from 2 MiB in apache/lucene#14189
//     (Lucene 10.2), as READING.md says.
//   - DeletesPctAllowed 20, ForceMergeDeletesPctAllowed 10,
//     TargetSearchConcurrency 1.
//   - MaxMergeAtOnce does not exist: Lucene removed it in apache/lucene#14165;
//     above the floor a merge takes at most SegmentsPerTier segments, below it
//     any number. We follow current Lucene rather than the old knob.
//
// # Where we differ from Lucene
//
//   - Fully deleted segments are returned in MergeSpecification.Drop (Lucene's
//     IndexWriter drops them itself, outside the policy), and are never merge
//     inputs. A merging segment that becomes fully deleted is left to its merge.
//   - Inputs are plain descriptors plus a merging set; force merge takes the
//     participating segments from the caller instead of Lucene's
//     segmentsToMerge map (so there is no "original segment" flag).
//   - Forced merges bin-pack by pro-rated size (Lucene uses raw size there,
//     pro-rated elsewhere).
//   - No full-flush (merge-on-refresh) merges, no compound-file settings.
//   - Options are a plain struct: zero means default, so a literal 0 for
//     ForceMergeDeletesPctAllowed ("any delete") needs a tiny positive value.
//
// The simulation test (simulate_test.go) indexes tens of GiB of random
// flushes, with and without updates, runs merges that overlap further flushes
// and deletes, and reports write amplification (about 3.9 append-only and
// 4.5 with updates at the defaults, in line with Lucene's 3.8 and 4.9).
// SLUICE_LONG_TESTS=1 runs it 10x longer; SLUICE_MERGE_SEED replays a seed.
package mergepolicy
