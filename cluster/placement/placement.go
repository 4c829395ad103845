// Package placement decides which data node takes each unassigned shard
// copy. It is a pure function of a snapshot (nodes, what they hold, what
// needs a home), so the allocator's behaviour is tested with tables, without
// etcd.
//
// Rules, in order:
//
//  1. Never two copies of one shard on one node (matters once replicas exist).
//  2. Skip nodes that take no copies (Node.Refuse: draining, disk past the
//     high watermark), and for a replica (or a move) nodes that take no
//     replicas (Node.RefuseReplicas: disk past the low watermark; the
//     primary of a new shard is exempt, as in Elasticsearch). A copy no
//     node takes stays where it is, with every node's reason.
//  3. A hint (Shard.Prefer) wins when the preferred node is eligible: local
//     reindex asks for a destination shard on the node of its source shard.
//  4. Spread an index across zones: prefer the zone holding the fewest
//     shards of that index.
//  5. Spread an index across nodes: prefer the node holding the fewest
//     shards of that index.
//  6. Balance the cluster: fewest shards in total, then most disk free,
//     then node id (deterministic).
//
// Shards are placed one at a time and each placement updates the counts, so
// a batch spreads the same way as shards placed one by one.
package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-search/sluice/cluster/routing"
)

// Node is a live data node.
type Node struct {
	ID        string
	Zone      string
	DiskFree  int64
	DiskTotal int64
	// Refuse, if set, says why the node takes no copies at all.
	Refuse string
	// RefuseReplicas, if set, says why the node takes no copies but the
	// primary of a new shard.
	RefuseReplicas string
}

// Copy is a shard copy that already has a node (in any state).
type Copy struct {
	Index string // index uuid
	Shard int
	Node  string
}

// Shard is a shard copy that needs a node.
type Shard struct {
	Index  string // index uuid
	Shard  int
	Prefer string // a node id to use if eligible; "" for none
	// NewPrimary: the primary of a new shard, which a node that refuses
	// replicas (low disk watermark) still takes.
	NewPrimary bool
}

// Decision assigns a shard to a node; Node is "" when no node is eligible,
// with the reason in Reason.
type Decision struct {
	Shard  Shard
	Node   string
	Reason string
}

// Place decides a node for every shard in unassigned, given the live nodes
// and the copies they already hold (copies on nodes not in nodes count
// toward rule 1 but not toward balance).
func Place(nodes []Node, assigned []Copy, unassigned []Shard) []Decision {
	s := newSnapshot(nodes, assigned)
	out := make([]Decision, 0, len(unassigned))
	for _, sh := range unassigned {
		d := Decision{Shard: sh}
		if n, why := s.pick(sh); n != nil {
			d.Node = n.ID
			s.add(Copy{Index: sh.Index, Shard: sh.Shard, Node: n.ID})
		} else {
			d.Reason = why
		}
		out = append(out, d)
	}
	return out
}

type shardKey struct {
	index string
	shard int
}

type snapshot struct {
	nodes      []Node
	total      map[string]int            // node -> copies
	perIndex   map[string]map[string]int // index -> node -> copies
	perZone    map[string]map[string]int // index -> zone -> copies
	holders    map[shardKey][]string     // shard -> nodes holding a copy
	zoneOfNode map[string]string
}

func newSnapshot(nodes []Node, assigned []Copy) *snapshot {
	s := &snapshot{
		nodes:      nodes,
		total:      map[string]int{},
		perIndex:   map[string]map[string]int{},
		perZone:    map[string]map[string]int{},
		holders:    map[shardKey][]string{},
		zoneOfNode: map[string]string{},
	}
	for _, n := range nodes {
		s.zoneOfNode[n.ID] = n.Zone
	}
	for _, c := range assigned {
		s.add(c)
	}
	return s
}

func (s *snapshot) add(c Copy) {
	k := shardKey{c.Index, c.Shard}
	s.holders[k] = append(s.holders[k], c.Node)
	zone, live := s.zoneOfNode[c.Node]
	if !live {
		return
	}
	s.total[c.Node]++
	inc(s.perIndex, c.Index, c.Node)
	inc(s.perZone, c.Index, zone)
}

func inc(m map[string]map[string]int, a, b string) {
	if m[a] == nil {
		m[a] = map[string]int{}
	}
	m[a][b]++
}

// refusal says why node n takes no copy sh, or "" if it may.
func (s *snapshot) refusal(n *Node, sh Shard) string {
	switch {
	case slices.Contains(s.holders[shardKey{sh.Index, sh.Shard}], n.ID):
		return "holds a copy of the shard already"
	case n.Refuse != "":
		return n.Refuse
	case n.RefuseReplicas != "" && !sh.NewPrimary:
		return n.RefuseReplicas
	}
	return ""
}

// pick returns the best eligible node for sh, or nil and why no node is.
func (s *snapshot) pick(sh Shard) (*Node, string) {
	var candidates []*Node
	var why []string
	for i := range s.nodes {
		if r := s.refusal(&s.nodes[i], sh); r != "" {
			why = append(why, fmt.Sprintf("node [%s] %s", s.nodes[i].ID, r))
			continue
		}
		candidates = append(candidates, &s.nodes[i])
	}
	if len(s.nodes) == 0 {
		return nil, "no live data nodes"
	}
	if len(candidates) == 0 {
		return nil, "no node can take the copy: " + strings.Join(why, "; ")
	}
	if sh.Prefer != "" {
		for _, n := range candidates {
			if n.ID == sh.Prefer {
				return n, ""
			}
		}
	}
	return slices.MinFunc(candidates, func(a, b *Node) int {
		return cmp.Or(
			cmp.Compare(s.perZone[sh.Index][a.Zone], s.perZone[sh.Index][b.Zone]),
			cmp.Compare(s.perIndex[sh.Index][a.ID], s.perIndex[sh.Index][b.ID]),
			cmp.Compare(s.total[a.ID], s.total[b.ID]),
			cmp.Compare(b.DiskFree, a.DiskFree),
			cmp.Compare(a.ID, b.ID),
		)
	}), ""
}

// Colocate returns the destination index's shards, each preferring the node
// that holds the one source shard its documents come from (see
// routing.SourceShard), so a reindex copies shard to shard on one node.
// srcNodes[s] is the node of source shard s ("" if unassigned). It fails
// with routing.ErrNotColocatable when the shard counts do not allow it.
func Colocate(destIndex string, src, dst routing.Params, srcNodes []string) ([]Shard, error) {
	if len(srcNodes) != src.Shards {
		return nil, fmt.Errorf("placement: %d source nodes for %d source shards", len(srcNodes), src.Shards)
	}
	out := make([]Shard, dst.Shards)
	for d := range out {
		s, err := routing.SourceShard(src, dst, d)
		if err != nil {
			return nil, err
		}
		out[d] = Shard{Index: destIndex, Shard: d, Prefer: srcNodes[s]}
	}
	return out, nil
}
