package reindex

import "github.com/sluice-search/sluice/cluster/routing"

// shardOf is the destination shard of a document with id and routing rt
// (nil: routed by id), as a bulk routes it.
func shardOf(id, rt []byte, dst routing.Params) int {
	key := id
	if len(rt) > 0 {
		key = rt
	}
	return routing.Shard(string(key), dst)
}
