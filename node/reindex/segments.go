package reindex

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
	"github.com/sluice-search/sluice/segmentcopy"
)

// segmentTargets returns the destination shards a segment copy of the
// slice's source shard adds into — every destination shard drawing from it
// — or why the slice must copy documents instead: the request is not one a
// segment copy can serve (a bad request), or a destination shard is not
// open here or has another mapping than the source (a fallback).
func (r *Runner) segmentTargets(ctx context.Context, req *nodev1.RunReindexSliceRequest, src *shard.Shard, dst routing.Params) ([]*shard.Shard, string, error) {
	rt, err := routing.ParseDest(req.GetRouting())
	if why := (segmentcopy.Request{Query: req.GetQuery(), MaxDocs: req.GetMaxDocs(), RequestsPerSecond: req.GetRequestsPerSecond(),
		SubSliced: req.GetSubSlice() != nil, KeepsRouting: err == nil && rt.Keeps()}).Refusal(); why != "" {
		return nil, "", fmt.Errorf("%w: segment copy: %s", ErrInvalid, why)
	}
	srcP := routing.Params{Shards: int(req.GetSourceShards()), RoutingShards: dst.RoutingShards}
	if err := routing.Colocatable(srcP, dst); err != nil {
		return nil, "", fmt.Errorf("%w: segment copy: %v", ErrInvalid, err)
	}
	k := dst.Shards / srcP.Shards
	s := int(req.GetSource().GetShard())
	marker := segmentMarker(req)
	var out []*shard.Shard
	for d := s * k; d < (s+1)*k; d++ {
		sh, err := r.openShard(ctx, shard.ID{IndexUUID: req.GetDestIndexUuid(), Shard: d})
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, fmt.Sprintf("destination shard %d is not open on this node", d), nil
		}
		if !querydsl.SameMapping(src.Mapping(), sh.Mapping()) {
			return nil, fmt.Sprintf("destination shard %d's mapping differs from the source's", d), nil
		}
		// Added segments are not checked against ids already there: only
		// an empty shard (or one this slice already added to) takes them.
		// A shard written to otherwise — by an earlier run of this slice
		// that copied documents, say — gets documents, idempotent by _id.
		if _, done := sh.Marker(marker); !done && !sh.Empty() {
			return nil, fmt.Sprintf("destination shard %d already holds documents", d), nil
		}
		out = append(out, sh)
	}
	return out, "", nil
}

// openShard returns shard id once it is open here, waiting up to
// DestOpenWait: a restarted node resumes slices while it is still opening
// its shards, and a destination shard that opens a moment later should
// still get segments rather than send the slice down the slow path.
func (r *Runner) openShard(ctx context.Context, id shard.ID) (*shard.Shard, error) {
	deadline := time.Now().Add(r.opts.DestOpenWait)
	for {
		sh, err := r.host.Get(id)
		if err == nil || time.Now().After(deadline) {
			return sh, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// segmentMarker names a slice's segment copy in the destination shards'
// commits.
func segmentMarker(req *nodev1.RunReindexSliceRequest) string {
	return fmt.Sprintf("reindex/%s/%d", req.GetTaskId(), req.GetSlice())
}

// runSegments copies the slice by segments: the pinned committed reader of
// the source shard is added (engine.AddIndexes) into each destination
// shard in targets, keeping in each the docs that route to it, and each
// add is committed with a marker naming the task and slice, so a rerun
// after a crash adds nothing twice. It reports once, at the end: the live
// docs added, which must be the source's live docs (verification counts
// per source shard as for documents).
func (cp *copyRun) runSegments(ctx context.Context, targets []*shard.Shard) error {
	marker := segmentMarker(cp.req)
	var routes [][]uint16
	if len(targets) > 1 {
		var err error
		if routes, err = routeDocs(ctx, cp.rd, cp.dst); err != nil {
			return fmt.Errorf("route the docs of source shard %v: %w", cp.req.GetSource(), err)
		}
	}
	var added int64
	for _, sh := range targets {
		var keep func(leaf, doc int) bool
		if routes != nil {
			d := uint16(sh.ID().Shard)
			keep = func(leaf, doc int) bool { return routes[leaf][doc] == d }
		}
		if err := cp.r.writeBlocked(sh.ID().IndexUUID); err != nil {
			return err
		}
		res, err := sh.AddIndexes(ctx, cp.rd, engine.AddIndexesOptions{Marker: marker, Keep: keep})
		if err != nil {
			// A corrupt source (index.ErrCorrupt) is not worth retrying:
			// the node's error table says FAILED_PRECONDITION.
			return fmt.Errorf("destination shard %v: add segments of source shard %v: %w", sh.ID(), cp.req.GetSource(), err)
		}
		cp.r.opts.Logger.Debug("reindex: segments added", "task", cp.req.GetTaskId(), "slice", cp.req.GetSlice(),
			"dest_shard", sh.ID().Shard, "docs", res.Docs, "dropped", res.Dropped, "segments", res.Segments,
			"linked", res.Linked, "copied", res.Copied, "already_added", res.AlreadyAdded)
		added += int64(res.Docs)
	}
	if added != cp.sel.total {
		return fmt.Errorf("reindex slice %d: segment copy added %d docs for %d live docs of source shard %v",
			cp.req.GetSlice(), added, cp.sel.total, cp.req.GetSource())
	}
	return cp.stream.Send(&nodev1.RunReindexSliceResponse{
		Total: cp.sel.total, Copied: added, Created: added,
		Cursor: cursor{fingerprint: cp.fp, next: cp.rd.MaxDoc()}.encode(), Done: true,
		Restarted: cp.restarted, Throttled: durationpb.New(0),
		CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS,
	})
}

// routeDocs returns the destination shard of every live doc of rd, by leaf
// and doc, routed as a bulk would route it: by its stored routing, else
// its _id. One sequential read of the stored fields serves every
// destination shard of a split (each stored block is decompressed once).
func routeDocs(ctx context.Context, rd *engine.Reader, dst routing.Params) ([][]uint16, error) {
	leaves := rd.Leaves()
	routes := make([][]uint16, len(leaves))
	var sd index.StoredDoc
	for li, l := range leaves {
		stored := l.Reader.StoredFields()
		rs := make([]uint16, l.Reader.MaxDoc())
		for d := range rs {
			if d%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if l.Live != nil && !l.Live.Get(d) {
				continue
			}
			if err := stored.Document(d, &sd); err != nil {
				return nil, fmt.Errorf("leaf %d doc %d: %w", li, d, err)
			}
			rs[d] = uint16(shardOf(sd.ID, sd.Routing, dst))
		}
		routes[li] = rs
	}
	return routes, nil
}
