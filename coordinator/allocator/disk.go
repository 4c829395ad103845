package allocator

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/watermark"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Disk watermarks (cluster/watermark), as Elasticsearch's
// DiskThresholdDecider and DiskThresholdMonitor apply them, from the disk
// figures each node registers:
//
//   - past low, a node takes no new replica copies (the primary of a new
//     shard still goes there);
//   - past high, it takes no copies at all (and its copies are moved
//     away, moves.go);
//   - past the flood stage, every index with a copy on it gets a write
//     block (DiskBlocks): the data path refuses its writes with
//     RESOURCE_EXHAUSTED naming the node and its disk, until every node
//     holding a copy is below high again, when the allocator lifts the
//     block — Elasticsearch's index.blocks.read_only_allow_delete and its
//     automatic release. The gap between high and flood is the
//     hysteresis: a disk hovering at the flood stage does not flap.

// watermarks are the watermarks in force; stored settings that do not
// parse (never written by UpdateClusterSettings) count as the defaults.
func (in Input) watermarks() watermark.Watermarks {
	w, err := watermark.FromSettings(in.State.Settings)
	if err != nil {
		return watermark.Defaults()
	}
	return w
}

// diskLevel is where a live node's disk stands, and why.
func (in Input) diskLevel(node string) (sluicev1.DiskWatermark, string) {
	n, ok := in.State.Nodes[node]
	if !ok {
		return sluicev1.DiskWatermark_DISK_WATERMARK_UNSPECIFIED, ""
	}
	w := in.watermarks()
	free, total := n.Info.GetDiskFreeBytes(), n.Info.GetDiskTotalBytes()
	return w.Level(free, total), w.Reason(node, n.Info.GetDataPath(), free, total)
}

// IndexChange is an index record the allocator writes (its write block),
// guarded by the mod revision it was computed from.
type IndexChange struct {
	Key         string
	ModRevision int64
	Meta        *statev1.Index
}

// DiskBlocks returns the indices whose write block must be set (a node
// holding a copy is past the flood stage) or lifted (every node holding a
// copy is below the high watermark; a node that left counts as below).
func DiskBlocks(in Input) []IndexChange {
	var out []IndexChange
	for name, x := range in.State.Indices {
		var flooded, high []string
		for _, sh := range x.Shards {
			if sh == nil {
				continue
			}
			for _, c := range sh.Routing.GetCopies() {
				switch lvl, _ := in.diskLevel(c.GetNodeId()); lvl {
				case sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE:
					flooded = append(flooded, c.GetNodeId())
				case sluicev1.DiskWatermark_DISK_WATERMARK_HIGH:
					high = append(high, c.GetNodeId())
				}
			}
		}
		b := x.Meta.GetDiskBlock()
		var nb *statev1.DiskBlock
		switch {
		case b == nil && len(flooded) > 0:
			node := slices.Min(flooded)
			_, why := in.diskLevel(node)
			nb = &statev1.DiskBlock{NodeId: node, Reason: why, Since: timestamppb.New(in.Now)}
		case b != nil && (len(flooded) > 0 || len(high) > 0):
			continue // held until every node is below high again
		case b == nil:
			continue
		}
		m := proto.Clone(x.Meta).(*statev1.Index)
		m.DiskBlock = nb
		out = append(out, IndexChange{Key: in.Keys.Index(name), ModRevision: x.ModRevision, Meta: m})
	}
	slices.SortFunc(out, func(a, b IndexChange) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// refusals says why a node takes no copies (it is being drained, or its
// disk is past high), or no replicas (its disk is past low).
func (in Input) refusals(node string) (refuse, refuseReplicas string) {
	if in.State.Draining(node) {
		return "is being drained", ""
	}
	if in.State.ShuttingDown(node) {
		return "is shutting down", ""
	}
	lvl, why := in.diskLevel(node)
	switch {
	case lvl >= sluicev1.DiskWatermark_DISK_WATERMARK_HIGH:
		return "takes no copies: " + why, ""
	case lvl == sluicev1.DiskWatermark_DISK_WATERMARK_LOW:
		return "", "takes no replicas: " + why
	}
	return "", ""
}
