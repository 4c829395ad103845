// Package rebalance holds which shard copies the allocator's rebalancing may
// move: the cluster setting rebalance_enable, as Elasticsearch's
// cluster.routing.rebalance.enable. It says nothing about moves a node
// must make (drain, disk past the high watermark): those are made whatever
// it says.
package rebalance

import (
	"strings"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Enable is which copies rebalancing may move.
type Enable string

// The values of rebalance_enable.
const (
	All       Enable = "all"       // primaries and replicas (the default)
	Primaries Enable = "primaries" // primaries only
	Replicas  Enable = "replicas"  // replicas only
	None      Enable = "none"      // nothing: the cluster is not rebalanced
)

// Values are the valid settings, in the order the docs list them.
var Values = []Enable{All, Primaries, Replicas, None}

// Parse reads a rebalance_enable value; "" is All. A value that is none of
// Values is an InvalidArgument naming the field.
func Parse(s string) (Enable, error) {
	if s == "" {
		return All, nil
	}
	for _, v := range Values {
		if Enable(s) == v {
			return v, nil
		}
	}
	names := make([]string, len(Values))
	for i, v := range Values {
		names[i] = string(v)
	}
	return "", state.InvalidFieldf("rebalance_enable", "rebalance_enable: [%s] is not one of %s", s, strings.Join(names, ", "))
}

// FromSettings reads the setting of s (nil: the default). A stored value
// that does not parse (never written by UpdateClusterSettings) counts as
// the default, so a bad record cannot stop allocation.
func FromSettings(s *sluicev1.ClusterSettings) Enable {
	e, err := Parse(s.GetRebalanceEnable())
	if err != nil {
		return All
	}
	return e
}

// Allows reports whether rebalancing may move a copy that is a primary
// (or a replica).
func (e Enable) Allows(primary bool) bool {
	switch e {
	case All:
		return true
	case Primaries:
		return primary
	case Replicas:
		return !primary
	}
	return false
}
