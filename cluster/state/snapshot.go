package state

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	mvccpb "go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/placement"
	"github.com/sluice-search/sluice/cluster/routing"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Snapshot is the cluster state read at one etcd revision. It is immutable
// once built: readers share it; writers build transactions from it.
type Snapshot struct {
	Revision int64
	Nodes    map[string]*Node  // live data nodes by id
	Indices  map[string]*Index // by name
	ByUUID   map[string]*Index // the same indices by uuid
	Aliases  map[string]*Alias // by alias name
	// Settings are the cluster settings as stored (cluster/settings; an
	// empty message when the key is absent: every default), and
	// SettingsModRevision the key's mod revision (0: absent).
	Settings            *sluicev1.ClusterSettings
	SettingsModRevision int64
	// Pins are the shards running tasks use in place (pins/<task-id>),
	// by task id: rebalancing leaves their primaries where they are.
	Pins map[string]*statev1.ShardPins
}

// Node is a registered (live) data node.
type Node struct {
	ID          string
	Info        *statev1.Node
	ModRevision int64
	Lease       int64
}

// Index is an index's stored metadata and routing table.
type Index struct {
	// Meta is the stored metadata: name, uuid, settings, mapping, state,
	// creation time. Shards, aliases and health are not stored in it.
	Meta        *statev1.Index
	ModRevision int64
	// Shards by shard number; an entry is nil only if its key is missing,
	// which a transaction never leaves behind.
	Shards []*Shard
}

// Shard is one shard's routing entry: its copies, primary term and
// in-sync set (copies.go reads them).
type Shard struct {
	Routing     *statev1.ShardRouting
	ModRevision int64
}

// Alias is a stored alias.
type Alias struct {
	Name        string
	Info        *statev1.Alias
	ModRevision int64
}

// ShardID names a shard of an index by the index uuid.
type ShardID struct {
	Index string // index uuid
	Shard int
}

func (id ShardID) String() string { return fmt.Sprintf("%s/%d", id.Index, id.Shard) }

// Name is the index name.
func (x *Index) Name() string { return x.Meta.GetName() }

// UUID is the index uuid.
func (x *Index) UUID() string { return x.Meta.GetUuid() }

// WriteBlocked returns an ErrWriteBlocked error naming the index and why
// while it refuses writes (its DiskBlock), else nil.
func (x *Index) WriteBlocked() error {
	b := x.Meta.GetDiskBlock()
	if b == nil {
		return nil
	}
	return &kindError{kind: ErrWriteBlocked, msg: fmt.Sprintf("index [%s] refuses writes: %s", x.Name(), b.GetReason())}
}

// Live reports whether the node is registered.
func (s *Snapshot) Live(nodeID string) bool {
	_, ok := s.Nodes[nodeID]
	return ok
}

// NodeAddress returns the address of a live node's internal services.
func (s *Snapshot) NodeAddress(nodeID string) (string, bool) {
	n, ok := s.Nodes[nodeID]
	if !ok {
		return "", false
	}
	return n.Info.GetAddress(), true
}

// Resolve returns the indices a name means: the index of that name, or every
// index an alias of that name points to (sorted by name).
func (s *Snapshot) Resolve(name string) ([]*Index, error) {
	if x, ok := s.Indices[name]; ok {
		return []*Index{x}, nil
	}
	if a, ok := s.Aliases[name]; ok {
		out := make([]*Index, 0, len(a.Info.GetIndices()))
		for _, n := range a.Info.GetIndices() {
			if x, ok := s.Indices[n]; ok {
				out = append(out, x)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
		return out, nil
	}
	return nil, NotFoundf("no such index [%s]", name)
}

// ResolveOne resolves a name that must mean exactly one index.
func (s *Snapshot) ResolveOne(name string) (*Index, error) {
	xs, err := s.Resolve(name)
	if err != nil {
		return nil, err
	}
	if len(xs) != 1 {
		return nil, Invalidf("alias [%s] points to %d indices, expected one", name, len(xs))
	}
	return xs[0], nil
}

// ResolveWrite resolves the index writes to a name go to: the index itself,
// an alias's only index, or an alias's write index.
func (s *Snapshot) ResolveWrite(name string) (*Index, error) {
	if x, ok := s.Indices[name]; ok {
		return x, nil
	}
	a, ok := s.Aliases[name]
	if !ok {
		return nil, NotFoundf("no such index [%s]", name)
	}
	target := a.Info.GetWriteIndex()
	if target == "" {
		if len(a.Info.GetIndices()) != 1 {
			return nil, Invalidf("alias [%s] points to %d indices and has no write index", name, len(a.Info.GetIndices()))
		}
		target = a.Info.GetIndices()[0]
	}
	x, ok := s.Indices[target]
	if !ok {
		return nil, NotFoundf("no such index [%s] (write index of alias [%s])", target, name)
	}
	return x, nil
}

// AliasesOf returns the aliases pointing at an index, sorted.
func (s *Snapshot) AliasesOf(index string) []string {
	var out []string
	for name, a := range s.Aliases {
		if slices.Contains(a.Info.GetIndices(), index) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// IndexNames returns the index names starting with prefix, sorted.
func (s *Snapshot) IndexNames(prefix string) []string {
	var out []string
	for name := range s.Indices {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// PinnedBy says who pins shard id in place ("" if nothing does): the
// holder of the first pin, by task id, that names it.
func (s *Snapshot) PinnedBy(id ShardID) string {
	for _, task := range slices.Sorted(maps.Keys(s.Pins)) {
		p := s.Pins[task]
		for _, x := range p.GetIndices() {
			if x.GetIndexUuid() == id.Index && (len(x.GetShards()) == 0 || slices.Contains(x.GetShards(), int32(id.Shard))) {
				return p.GetHolder()
			}
		}
	}
	return ""
}

// Info returns the index as the API shows it (sluice.v1.IndexInfo): the
// stored metadata with its aliases, routing table and health.
func (s *Snapshot) Info(x *Index) *sluicev1.IndexInfo {
	m := proto.Clone(x.Meta).(*statev1.Index)
	info := &sluicev1.IndexInfo{Name: m.GetName(), Uuid: m.GetUuid(), Settings: m.GetSettings(), Mapping: m.GetMapping(),
		State: m.GetState(), CreationTime: m.GetCreationTime()}
	info.Aliases = s.AliasesOf(x.Name())
	info.Shards = make([]*sluicev1.ShardRouting, 0, len(x.Shards))
	for n, sh := range x.Shards {
		if sh == nil {
			info.Shards = append(info.Shards, &sluicev1.ShardRouting{
				Shard: int32(n), Primary: true, State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED,
				Reason: "routing entry missing"})
			continue
		}
		r := sh.Routing
		for _, c := range r.GetCopies() {
			info.Shards = append(info.Shards, &sluicev1.ShardRouting{Shard: r.GetShard(), NodeId: c.GetNodeId(), Primary: c.GetPrimary(),
				State: c.GetState(), AllocationId: c.GetAllocationId(), Reason: c.GetReason(), Recovery: c.GetRecovery(),
				PrimaryTerm: r.GetPrimaryTerm(), InSync: InSync(r, c.GetAllocationId()), Move: c.GetMove(),
				RelocatingFromNode: CopyByAllocation(r, c.GetRelocatingFrom()).GetNodeId()})
		}
	}
	info.Health = s.IndexHealth(x)
	info.WriteBlock = m.GetDiskBlock().GetReason()
	return info
}

// NodeInfo returns a live node as the API shows it (sluice.v1.NodeInfo).
func NodeInfo(n *Node) *sluicev1.NodeInfo {
	return &sluicev1.NodeInfo{Id: n.ID, Address: n.Info.GetAddress(), Zone: n.Info.GetZone(), DiskFreeBytes: n.Info.GetDiskFreeBytes(),
		DiskTotalBytes: n.Info.GetDiskTotalBytes(), Live: true, Version: n.Info.GetVersion(), DataPath: n.Info.GetDataPath(),
		ShuttingDown: n.Info.GetShuttingDown()}
}

// AliasInfo returns an alias as the API shows it (sluice.v1.AliasInfo).
func AliasInfo(a *Alias) *sluicev1.AliasInfo {
	return &sluicev1.AliasInfo{Alias: a.Name, Indices: slices.Clone(a.Info.GetIndices()), WriteIndex: a.Info.GetWriteIndex()}
}

// IndexHealth is green when every copy of every shard is started, yellow
// when every shard is served but some copy is not started, and red when
// some shard is not served: it has no started primary and no started
// in-sync copy to promote (ShardHealth). A copy counts as started when its
// state says so and its node is registered: between a node's lease running
// out and the allocator marking its copies NODE_LEFT (which its follower
// checks make about a second after the process died), they are not
// counted.
func (s *Snapshot) IndexHealth(x *Index) sluicev1.HealthStatus {
	h := sluicev1.HealthStatus_HEALTH_STATUS_GREEN
	for _, sh := range x.Shards {
		if sh == nil {
			return sluicev1.HealthStatus_HEALTH_STATUS_RED
		}
		if h = max(h, s.ShardHealth(sh.Routing)); h == sluicev1.HealthStatus_HEALTH_STATUS_RED {
			return h
		}
	}
	return h
}

// ShardHealth is one shard's part of IndexHealth. A shard whose primary
// is lost but which has a started in-sync copy is yellow, not red: that
// copy holds every acknowledged operation, serves searches, and is the
// allocator's next primary (writes wait for the promotion).
//
// A relocation's target does not lower health while its source copy is
// active, as in Elasticsearch: the source still holds its place, and the
// move shows in relocating_shards. Green thus does not mean that nothing
// is moving: a caller that needs every copy in place waits for no
// relocating shards as well.
func (s *Snapshot) ShardHealth(r *statev1.ShardRouting) sluicev1.HealthStatus {
	if !slices.ContainsFunc(r.GetCopies(), func(c *statev1.ShardCopy) bool { return s.Serving(r, c) }) {
		return sluicev1.HealthStatus_HEALTH_STATUS_RED
	}
	for _, c := range r.GetCopies() {
		if !s.Active(c) && !s.Relocating(r, c) {
			return sluicev1.HealthStatus_HEALTH_STATUS_YELLOW
		}
	}
	return sluicev1.HealthStatus_HEALTH_STATUS_GREEN
}

// Relocating reports whether copy c of shard r is a relocation's target
// that is not yet started while its source copy is active: the move is
// under way and the shard has all its copies in service.
func (s *Snapshot) Relocating(r *statev1.ShardRouting, c *statev1.ShardCopy) bool {
	if c.GetRelocatingFrom() == "" || Started(c) {
		return false
	}
	return s.Active(CopyByAllocation(r, c.GetRelocatingFrom()))
}

// Serving reports whether copy c of shard r may serve reads: it is
// active and the primary or in sync (a replica that is not has missed
// operations).
func (s *Snapshot) Serving(r *statev1.ShardRouting, c *statev1.ShardCopy) bool {
	return s.Active(c) && (c.GetPrimary() || InSync(r, c.GetAllocationId()))
}

// ActivePrimary returns the primary of shard n of x if it is active, else
// nil.
func (s *Snapshot) ActivePrimary(x *Index, n int) *statev1.ShardCopy {
	if n < 0 || n >= len(x.Shards) || x.Shards[n] == nil {
		return nil
	}
	if p := Primary(x.Shards[n].Routing); s.Active(p) {
		return p
	}
	return nil
}

// Active reports whether a copy is started on a registered node.
func (s *Snapshot) Active(c *statev1.ShardCopy) bool {
	return Started(c) && s.Live(c.GetNodeId())
}

// decode builds a Snapshot from the key-values of one range read.
func decode(keys Keys, rev int64, kvs []*mvccpb.KeyValue) (*Snapshot, error) {
	st := &Snapshot{
		Revision: rev,
		Nodes:    map[string]*Node{},
		Indices:  map[string]*Index{},
		ByUUID:   map[string]*Index{},
		Aliases:  map[string]*Alias{},
		Settings: &sluicev1.ClusterSettings{},
		Pins:     map[string]*statev1.ShardPins{},
	}
	type shardKV struct {
		uuid  string
		shard int
		s     *Shard
	}
	var shards []shardKV
	for _, kv := range kvs {
		kind, name, shard, err := keys.parse(string(kv.Key))
		if err != nil {
			return nil, err
		}
		switch kind {
		case kindNode:
			info := &statev1.Node{}
			if err := Unmarshal(kv.Value, info); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			st.Nodes[name] = &Node{ID: name, Info: info, ModRevision: kv.ModRevision, Lease: kv.Lease}
		case kindIndex:
			info := &statev1.Index{}
			if err := Unmarshal(kv.Value, info); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			n := info.GetSettings().GetNumberOfShards()
			if n < 1 || n > routing.MaxShards {
				return nil, fmt.Errorf("%s: bad number_of_shards %d", kv.Key, n)
			}
			x := &Index{Meta: info, ModRevision: kv.ModRevision, Shards: make([]*Shard, n)}
			st.Indices[name] = x
			st.ByUUID[info.GetUuid()] = x
		case kindShard:
			r := &statev1.ShardRouting{}
			if err := Unmarshal(kv.Value, r); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			upgradeRouting(r)
			shards = append(shards, shardKV{name, shard, &Shard{Routing: r, ModRevision: kv.ModRevision}})
		case kindAlias:
			a := &statev1.Alias{}
			if err := Unmarshal(kv.Value, a); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			st.Aliases[name] = &Alias{Name: name, Info: a, ModRevision: kv.ModRevision}
		case kindSettings:
			cs := &statev1.ClusterSettings{}
			if err := Unmarshal(kv.Value, cs); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			if cs.Settings != nil {
				st.Settings = cs.Settings
			}
			st.SettingsModRevision = kv.ModRevision
		case kindPin:
			p := &statev1.ShardPins{}
			if err := Unmarshal(kv.Value, p); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			st.Pins[name] = p
		}
	}
	// Routing keys sort before... nothing in particular: attach them after
	// every index is known. Entries without an index (never left by a
	// transaction) are ignored.
	for _, s := range shards {
		if x, ok := st.ByUUID[s.uuid]; ok && s.shard < len(x.Shards) {
			x.Shards[s.shard] = s.s
		}
	}
	return st, nil
}

// PlacementNodes returns the live nodes as placement sees them.
func (s *Snapshot) PlacementNodes() []placement.Node {
	out := make([]placement.Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		out = append(out, placement.Node{ID: n.ID, Zone: n.Info.GetZone(),
			DiskFree: n.Info.GetDiskFreeBytes(), DiskTotal: n.Info.GetDiskTotalBytes()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CopiesOn counts the shard copies assigned to a node, in any state.
func (s *Snapshot) CopiesOn(node string) int {
	n := 0
	for _, x := range s.ByUUID {
		for _, sh := range x.Shards {
			if sh != nil && CopyOnNode(sh.Routing, node) != nil {
				n++
			}
		}
	}
	return n
}

// ShuttingDown reports whether a live node is stopping: it registered
// shutting_down (statev1.Node), and its primaries are being handed to
// in-sync replicas.
func (s *Snapshot) ShuttingDown(node string) bool {
	n, ok := s.Nodes[node]
	return ok && n.Info.GetShuttingDown()
}

// Draining reports whether a node is being drained (its id is in the
// cluster settings' drained_nodes).
func (s *Snapshot) Draining(node string) bool {
	return slices.Contains(s.Settings.GetDrainedNodes(), node)
}

// PlacementCopies returns every shard copy that has a node, live or not.
func (s *Snapshot) PlacementCopies() []placement.Copy {
	var out []placement.Copy
	for uuid, x := range s.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue
			}
			for _, c := range sh.Routing.GetCopies() {
				if c.GetNodeId() != "" {
					out = append(out, placement.Copy{Index: uuid, Shard: n, Node: c.GetNodeId()})
				}
			}
		}
	}
	return out
}
