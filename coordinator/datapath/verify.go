package datapath

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sluice-search/sluice/cluster/fanout"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// failedWait bounds how long a verification whose node no longer holds a
// copy waits for the copy's routing entry to say why: a copy the node's
// scrubber just failed is closed a moment before it is reported FAILED.
const failedWait = 2 * time.Second

// VerifyIndex verifies the shard copies of an index (or of every index an
// alias names), all at once (each node runs one verification at a time):
// every file's checksum, and with deep every segment decoded. A copy that
// is FAILED reports its routing reason without calling its node; one that
// is not started, or whose node cannot be reached, is UNAVAILABLE.
func (d *DataPath) VerifyIndex(ctx context.Context, req *sluicev1.VerifyIndexRequest) (*sluicev1.VerifyIndexResponse, error) {
	if req.GetIndex() == "" {
		return nil, invalidf("index: required")
	}
	if req.Shard != nil && req.GetShard() < 0 {
		return nil, invalidf("shard: must not be negative, got %d", req.GetShard())
	}
	if req.GetMaxBytesPerSec() < 0 {
		return nil, invalidf("max_bytes_per_sec: must not be negative, got %d", req.GetMaxBytesPerSec())
	}
	st, err := d.cache.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	xs, err := st.Resolve(req.GetIndex())
	if err != nil {
		return nil, err
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].Name() < xs[j].Name() })
	resp := &sluicev1.VerifyIndexResponse{}
	var wg sync.WaitGroup
	for _, x := range xs {
		lo, hi := 0, len(x.Shards)
		if req.Shard != nil {
			if int(req.GetShard()) >= len(x.Shards) {
				return nil, invalidf("shard: index [%s] has %d shards, no shard %d", x.Name(), len(x.Shards), req.GetShard())
			}
			lo, hi = int(req.GetShard()), int(req.GetShard())+1
		}
		for n := lo; n < hi; n++ {
			sh := x.Shards[n]
			if sh == nil {
				resp.Shards = append(resp.Shards, &sluicev1.ShardVerification{Index: x.Name(), Shard: int32(n),
					Status: sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_UNAVAILABLE, Failure: "routing entry missing"})
				continue
			}
			for _, c := range sh.Routing.GetCopies() {
				sv := &sluicev1.ShardVerification{Index: x.Name(), Shard: int32(n), NodeId: c.GetNodeId(), Primary: c.GetPrimary()}
				resp.Shards = append(resp.Shards, sv)
				if done := unverifiable(st, c, sv); done {
					continue
				}
				t := target{index: x.Name(), uuid: x.UUID(), shard: n, node: c.GetNodeId()}
				fanout.Go(&wg, func() { d.verifyCopy(ctx, req, t, c.GetAllocationId(), sv) })
			}
		}
	}
	wg.Wait()
	return resp, nil
}

// unverifiable fills sv for a copy that is not started on a live node —
// FAILED with its routing reason, UNAVAILABLE otherwise — and says
// whether it did.
func unverifiable(st *state.Snapshot, r *statev1.ShardCopy, sv *sluicev1.ShardVerification) bool {
	switch {
	case r.GetState() == sluicev1.ShardState_SHARD_STATE_FAILED:
		sv.Status, sv.Failure = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_FAILED, r.GetReason()
	case r.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED || !st.Live(r.GetNodeId()):
		sv.Status = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_UNAVAILABLE
		sv.Failure = fmt.Sprintf("%s on node %q", r.GetState(), r.GetNodeId())
		if r.GetReason() != "" {
			sv.Failure += ": " + r.GetReason()
		}
	default:
		return false
	}
	return true
}

// verifyCopy asks the copy's node to verify it and fills sv.
func (d *DataPath) verifyCopy(ctx context.Context, req *sluicev1.VerifyIndexRequest, t target, alloc string, sv *sluicev1.ShardVerification) {
	c, err := d.nodes.Client(t.node)
	var resp *nodev1.VerifyShardResponse
	if err == nil {
		resp, err = c.VerifyShard(ctx, &nodev1.VerifyShardRequest{Shard: t.id(), Deep: req.GetDeep(), MaxBytesPerSec: req.GetMaxBytesPerSec()})
	} else {
		err = fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err != nil {
		if notHere(err) && d.nowUnverifiable(ctx, t, alloc, sv) {
			return
		}
		sv.Status = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_UNAVAILABLE
		sv.Error = d.opts.Errors.Detail(fmt.Errorf("[%s][%d] on node %s: %w", t.index, t.shard, t.node, err))
		sv.Failure = sv.Error.GetReason()
		return
	}
	sv.Files, sv.Segments, sv.Bytes, sv.Took = resp.GetFiles(), resp.GetSegments(), resp.GetBytes(), resp.GetTook()
	sv.Status = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_OK
	damage := ""
	for _, f := range sv.Files {
		if f.GetStatus() == sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_CORRUPT && damage == "" {
			damage = f.GetError()
		}
	}
	for _, s := range sv.Segments {
		if s.GetError() != "" && damage == "" {
			damage = s.GetError()
		}
	}
	switch {
	case damage != "":
		sv.Status, sv.Failure = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_DAMAGED, damage
	case resp.GetFailure() != "":
		// Failed before, for a file this verification no longer sees (a
		// merge's input, merged away meanwhile).
		sv.Status, sv.Failure = sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_FAILED, resp.GetFailure()
	}
}

// nowUnverifiable waits briefly for the routing entry of a copy its node
// no longer holds to say why (a failed copy is closed just before it is
// reported FAILED), and fills sv if it does.
func (d *DataPath) nowUnverifiable(ctx context.Context, t target, alloc string, sv *sluicev1.ShardVerification) bool {
	wctx, cancel := context.WithTimeout(ctx, failedWait)
	defer cancel()
	var c *statev1.ShardCopy
	st, _ := d.cache.WaitFor(wctx, func(st *state.Snapshot) bool {
		x := st.ByUUID[t.uuid]
		if x == nil || t.shard >= len(x.Shards) || x.Shards[t.shard] == nil {
			return false
		}
		c = state.CopyByAllocation(x.Shards[t.shard].Routing, alloc)
		return c == nil || c.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED
	})
	if c == nil {
		// Moved or removed: nothing left to verify there.
		c = &statev1.ShardCopy{NodeId: t.node, State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED, Reason: "the copy was moved or removed meanwhile"}
	}
	return st != nil && unverifiable(st, c, sv)
}
