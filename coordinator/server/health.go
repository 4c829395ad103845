package server

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Health computes cluster health from a state: per index and shard, with a
// reason for every shard that is not started. indices (names or aliases)
// limits it; empty means all.
func Health(st *state.Snapshot, indices []string, clusterName string) *sluicev1.ClusterHealthResponse {
	h := &sluicev1.ClusterHealthResponse{
		Status:            sluicev1.HealthStatus_HEALTH_STATUS_GREEN,
		NumberOfDataNodes: int32(len(st.Nodes)),
		ClusterName:       clusterName,
	}
	var xs []*state.Index
	if len(indices) == 0 {
		for _, name := range st.IndexNames("") {
			xs = append(xs, st.Indices[name])
		}
	} else {
		for _, name := range indices {
			r, _ := st.Resolve(name)
			xs = append(xs, r...)
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i].Name() < xs[j].Name() })
		xs = slices.CompactFunc(xs, func(a, b *state.Index) bool { return a == b })
	}
	for _, n := range watermark.Nodes(st) {
		if n.DiskWatermark > sluicev1.DiskWatermark_DISK_WATERMARK_OK {
			h.DiskWatermarkNodes = append(h.DiskWatermarkNodes, n)
		}
	}
	for _, x := range xs {
		ih := indexHealth(st, x)
		h.Indices = append(h.Indices, ih)
		h.RelocatingShards += ih.RelocatingShards
		h.Status = max(h.Status, ih.Status)
	}
	return h
}

func indexHealth(st *state.Snapshot, x *state.Index) *sluicev1.IndexHealth {
	info := st.Info(x)
	ih := &sluicev1.IndexHealth{Index: x.Name(), Status: info.Health, Shards: info.Shards, WriteBlock: info.WriteBlock}
	for _, sh := range ih.Shards {
		if sh.RelocatingFromNode != "" {
			ih.RelocatingShards++
		}
		if sh.State == sluicev1.ShardState_SHARD_STATE_STARTED && st.Live(sh.NodeId) {
			ih.ActiveShards++
			if sh.Primary {
				ih.ActivePrimaryShards++
			}
			continue
		}
		ih.UnassignedShards++
		if sh.State == sluicev1.ShardState_SHARD_STATE_INITIALIZING {
			ih.InitializingShards++
		}
		if sh.Reason == "" {
			sh.Reason = shardReason(st, sh)
		}
	}
	return ih
}

// shardReason explains a copy that is not active and has no stored reason.
func shardReason(st *state.Snapshot, sh *sluicev1.ShardRouting) string {
	switch sh.State {
	case sluicev1.ShardState_SHARD_STATE_STARTED:
		return fmt.Sprintf("node [%s] is no longer registered (its lease expired); the allocator has yet to mark the copy", sh.NodeId)
	case sluicev1.ShardState_SHARD_STATE_INITIALIZING:
		if !st.Live(sh.NodeId) {
			return fmt.Sprintf("assigned to node [%s], which is not live", sh.NodeId)
		}
		return fmt.Sprintf("opening on node [%s]", sh.NodeId)
	case sluicev1.ShardState_SHARD_STATE_UNASSIGNED:
		return "waiting for the allocator"
	}
	return sh.State.String()
}

// State builds the ClusterState response.
func State(st *state.Snapshot, clusterName, allocator string) *sluicev1.ClusterStateResponse {
	resp := &sluicev1.ClusterStateResponse{ClusterName: clusterName, Allocator: allocator, Revision: st.Revision,
		Nodes: watermark.Nodes(st), Settings: metadata.EffectiveSettings(st.Settings)}
	for _, n := range resp.Nodes {
		n.Draining, n.Copies = st.Draining(n.Id), int32(st.CopiesOn(n.Id))
	}
	for _, name := range st.IndexNames("") {
		resp.Indices = append(resp.Indices, st.Info(st.Indices[name]))
	}
	resp.Aliases = metadata.Aliases(st, "")
	return resp
}
