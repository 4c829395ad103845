// Package routing maps documents to shards, as Elasticsearch does:
//
//	shard = floorMod(murmur3(routing or _id), routing_shards) / (routing_shards / shards)
//
// The routing shard count is fixed when an index is created (default: the
// shard count). Because a shard is a contiguous range of routing shards, an
// index whose shard count is a multiple k of another's, with the same routing
// shard count, splits each source shard s into destination shards
// s*k .. s*k+k-1: every destination shard's documents come from exactly one
// source shard (SourceShard), which is what makes local reindex possible.
//
// The hash is 32-bit MurmurHash3 (x86_32, seed 0) over the UTF-8 bytes of the
// routing value. (Elasticsearch hashes UTF-16 code units instead, so shard
// numbers differ from an Elasticsearch index with the same settings.)
package routing

import (
	"errors"
	"fmt"
)

// MaxShards is the largest shard count an index may have.
const MaxShards = 1024

// Params are an index's shard counts.
type Params struct {
	Shards        int // number of primary shards, >= 1
	RoutingShards int // a multiple of Shards
}

// Validate checks that p can route documents.
func (p Params) Validate() error {
	switch {
	case p.Shards < 1 || p.Shards > MaxShards:
		return fmt.Errorf("number_of_shards must be between 1 and %d, got %d", MaxShards, p.Shards)
	case p.RoutingShards < p.Shards:
		return fmt.Errorf("number_of_routing_shards [%d] must be >= number_of_shards [%d]", p.RoutingShards, p.Shards)
	case p.RoutingShards%p.Shards != 0:
		return fmt.Errorf("number_of_routing_shards [%d] must be a multiple of number_of_shards [%d]", p.RoutingShards, p.Shards)
	}
	return nil
}

// Shard returns the shard a document with the given routing value (its _id
// unless a custom routing is given) belongs to. p must be valid.
func Shard(routing string, p Params) int {
	return ShardOfHash(Hash(routing), p)
}

// ShardOfHash is Shard for a precomputed Hash.
func ShardOfHash(h uint32, p Params) int {
	// floorMod of the signed hash, as Elasticsearch computes it in Java.
	r := int(int32(h)) % p.RoutingShards
	if r < 0 {
		r += p.RoutingShards
	}
	return r / (p.RoutingShards / p.Shards)
}

// ErrNotColocatable says documents of one destination shard come from more
// than one source shard, so a reindex cannot be purely local.
var ErrNotColocatable = errors.New("destination shards do not each draw from one source shard")

// SourceShard returns the one source shard that every document of
// destination shard d comes from, when src and dst share a routing shard
// count and dst.Shards is a multiple of src.Shards. Otherwise documents of d
// come from several source shards and it returns ErrNotColocatable.
func SourceShard(src, dst Params, d int) (int, error) {
	if err := Colocatable(src, dst); err != nil {
		return 0, err
	}
	if d < 0 || d >= dst.Shards {
		return 0, fmt.Errorf("destination shard %d out of range [0,%d)", d, dst.Shards)
	}
	return d / (dst.Shards / src.Shards), nil
}

// Colocatable reports (as a nil error) whether every destination shard
// draws from exactly one source shard.
func Colocatable(src, dst Params) error {
	if err := src.Validate(); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	if src.RoutingShards != dst.RoutingShards {
		return fmt.Errorf("%w: routing shards differ (%d vs %d)", ErrNotColocatable, src.RoutingShards, dst.RoutingShards)
	}
	if dst.Shards%src.Shards != 0 {
		return fmt.Errorf("%w: %d shards is not a multiple of %d", ErrNotColocatable, dst.Shards, src.Shards)
	}
	return nil
}
