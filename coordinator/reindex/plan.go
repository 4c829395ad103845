package reindex

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
	"github.com/sluice-search/sluice/segmentcopy"
)

func paramsOf(s *sluicev1.IndexSettings) routing.Params {
	return routing.Params{Shards: int(s.GetNumberOfShards()), RoutingShards: int(s.GetNumberOfRoutingShards())}
}

// destSettings are a created destination's settings: the source's, with the
// request's set fields on top. Unless the request fixes the routing shard
// count, the destination keeps the source's when that makes it
// co-locatable (its shard count a multiple of the source's and a divisor of
// the routing shards) — so a split stays local — and otherwise routes over
// its own shard count.
func destSettings(src, req *sluicev1.IndexSettings) *sluicev1.IndexSettings {
	out := proto.Clone(src).(*sluicev1.IndexSettings)
	if req != nil {
		proto.Merge(out, req)
	}
	if req.GetNumberOfRoutingShards() == 0 {
		p := routing.Params{Shards: int(out.GetNumberOfShards()), RoutingShards: int(src.GetNumberOfRoutingShards())}
		if routing.Colocatable(paramsOf(src), p) != nil {
			p.RoutingShards = p.Shards
		}
		out.NumberOfRoutingShards = int32(p.RoutingShards)
	}
	return out
}

// chooseMode resolves the requested mode against the layout: AUTO is LOCAL
// when every destination shard draws from one source shard, else REMOTE;
// LOCAL on a layout that cannot be co-located is an error.
func chooseMode(want sluicev1.ReindexMode, src, dst routing.Params) (mode sluicev1.ReindexMode, colocatable bool, err error) {
	cerr := routing.Colocatable(src, dst)
	colocatable = cerr == nil
	switch want {
	case sluicev1.ReindexMode_REINDEX_MODE_UNSPECIFIED, sluicev1.ReindexMode_REINDEX_MODE_AUTO:
		if colocatable {
			return sluicev1.ReindexMode_REINDEX_MODE_LOCAL, true, nil
		}
		return sluicev1.ReindexMode_REINDEX_MODE_REMOTE, false, nil
	case sluicev1.ReindexMode_REINDEX_MODE_LOCAL:
		if !colocatable {
			return 0, false, state.Invalidf("mode LOCAL: %v; use REMOTE or AUTO, or a destination shard count that is a multiple of %d dividing %d routing shards", cerr, src.Shards, src.RoutingShards)
		}
		return want, true, nil
	case sluicev1.ReindexMode_REINDEX_MODE_REMOTE, sluicev1.ReindexMode_REINDEX_MODE_BASELINE:
		return want, colocatable, nil
	}
	return 0, false, state.Invalidf("unknown mode %v", want)
}

// chooseCopyMethod decides whether a task copies segments or documents.
// Segments (each source shard's committed segments added into its
// co-located destination shards, nothing re-analysed) need a task that
// changes nothing about how documents are indexed or which are copied:
//
//   - mode LOCAL and a co-locatable layout with dest.routing "keep" (plan.Colocatable
//     already folds the routing in), so every destination shard draws
//     from one source shard on the same node;
//   - what package segmentcopy asks of the request, as the data nodes do:
//     no more slices than source shards (a segment is not cut by _id
//     hash), no query and no max_docs (segments carry every live doc), no
//     requests_per_second (a throttled task asked for a gentle,
//     document-paced copy);
//   - a destination that is empty (created by the task, or existing with
//     no documents) and whose mapping equals the source's, compared in
//     canonical form (fields, types, analyzers, options), not as JSON.
//
// AUTO falls back to documents and says why; SEGMENTS refuses with
// INVALID_ARGUMENT naming the reason; DOCUMENTS is today's copy. The
// mode must be decided (plan.Mode, plan.Colocatable, plan.DestDocsAtStart
// for an existing destination).
func chooseCopyMethod(req *sluicev1.ReindexRequest, plan *statev1.ReindexPlan, src routing.Params, srcMapping, dstMapping *sluicev1.Mapping) (sluicev1.ReindexCopyMethod, string, error) {
	want := req.GetCopyMethod()
	if want == sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS {
		return want, "", nil
	}
	reason := segmentIneligible(req, plan, src, srcMapping, dstMapping)
	switch {
	case reason == "":
		return sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS, "", nil
	case want == sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS:
		return 0, "", state.Invalidf("copy_method SEGMENTS: %s; use AUTO or DOCUMENTS", reason)
	}
	return sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS, reason, nil
}

// segmentIneligible says why a task cannot copy segments, or "".
func segmentIneligible(req *sluicev1.ReindexRequest, plan *statev1.ReindexPlan, src routing.Params, srcMapping, dstMapping *sluicev1.Mapping) string {
	why := segmentcopy.Request{Query: req.GetSource().GetQuery(), MaxDocs: req.GetMaxDocs(), RequestsPerSecond: req.GetRequestsPerSecond(),
		SubSliced: int(req.GetSlices()) > src.Shards, KeepsRouting: keepsRouting(req)}.Refusal()
	switch {
	case plan.GetMode() != sluicev1.ReindexMode_REINDEX_MODE_LOCAL:
		return fmt.Sprintf("mode is %v, segments need LOCAL", plan.GetMode())
	case why != "":
		return why
	case !plan.GetColocatable():
		return "destination shards do not each draw from one source shard"
	case plan.GetDestDocsAtStart() != 0:
		return "the destination holds documents"
	}
	a, aerr := querydsl.MappingFromProto(srcMapping)
	b, berr := querydsl.MappingFromProto(dstMapping)
	if aerr != nil || berr != nil || !querydsl.SameMapping(a, b) {
		return "the destination's mapping differs from the source's"
	}
	return ""
}

// planSlices cuts a source of n shards into slices as Elasticsearch's
// sliced scroll does: auto (0) or fewer than n means one slice per shard;
// more subdivides shards by _id hash, slice i reading shard i%n. max_docs
// is shared out evenly; a slice whose share is 0 is left out.
func planSlices(n, slices int, maxDocs int64) []*statev1.ReindexPlanSlice {
	total := max(slices, n)
	var out []*statev1.ReindexPlanSlice
	for i := range total {
		s := &statev1.ReindexPlanSlice{SourceShard: int32(i % n)}
		inShard := total / n
		if i%n < total%n {
			inShard++
		}
		if inShard > 1 {
			s.SubSlice = &sluicev1.Slice{Id: int32(i / n), Max: int32(inShard)}
		}
		if maxDocs > 0 {
			s.MaxDocs = maxDocs / int64(total)
			if int64(i) < maxDocs%int64(total) {
				s.MaxDocs++
			}
			if s.MaxDocs == 0 {
				continue
			}
		}
		s.Slice = int32(len(out))
		out = append(out, s)
	}
	return out
}

// MaxSlices bounds a task's slices, as Elasticsearch's
// index.max_slices_per_scroll.
const MaxSlices = 1024

// validate checks what can be checked before reading the cluster state.
func validate(req *sluicev1.ReindexRequest) error {
	switch {
	case req.GetSource().GetIndex() == "":
		return state.InvalidFieldf("source.index", "source.index is required")
	case req.GetDest().GetIndex() == "":
		return state.InvalidFieldf("dest.index", "dest.index is required")
	case req.GetSlices() < 0 || req.GetSlices() > MaxSlices:
		return state.InvalidFieldf("slices", "slices must be between 0 (auto) and %d, got %d", MaxSlices, req.GetSlices())
	case req.GetMaxDocs() < 0:
		return state.InvalidFieldf("max_docs", "max_docs must be >= 0, got %d", req.GetMaxDocs())
	}
	if err := checkRate(req.GetRequestsPerSecond()); err != nil {
		return err
	}
	if a := req.GetSwapAlias(); a != "" {
		if err := metadata.ValidateName("alias", a); err != nil {
			return fmt.Errorf("swap_alias: %w", err)
		}
	}
	if _, ok := sluicev1.ReindexCopyMethod_name[int32(req.GetCopyMethod())]; !ok {
		return state.Invalidf("unknown copy_method %v", req.GetCopyMethod())
	}
	switch req.GetDest().GetOpType() {
	case sluicev1.BulkAction_BULK_ACTION_UNSPECIFIED, sluicev1.BulkAction_BULK_ACTION_INDEX, sluicev1.BulkAction_BULK_ACTION_CREATE:
	default:
		return state.Invalidf("dest.op_type must be INDEX or CREATE, got %v", req.GetDest().GetOpType())
	}
	if _, err := routing.ParseDest(req.GetDest().GetRouting()); err != nil {
		return state.Invalidf("dest.%v", err)
	}
	return nil
}

// checkRate checks a requests_per_second: a finite number, 0 for
// unlimited.
func checkRate(rps float32) error {
	if f := float64(rps); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return state.InvalidFieldf("requests_per_second", "requests_per_second must be a finite number >= 0 (0: unlimited), got %v", rps)
	}
	return nil
}

// keepsRouting reports whether a (validated) request keeps each document's
// routing: only then does every destination shard of a colocatable layout
// draw from one source shard.
func keepsRouting(req *sluicev1.ReindexRequest) bool {
	r, err := routing.ParseDest(req.GetDest().GetRouting())
	return err == nil && r.Keeps()
}

// description is the task's human readable line.
func description(req *sluicev1.ReindexRequest) string {
	return fmt.Sprintf("reindex from [%s] to [%s]", req.GetSource().GetIndex(), req.GetDest().GetIndex())
}
