package metadata

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/placement"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// Service is the metadata API over a cluster's etcd state.
type Service struct {
	Store *state.Store
	// Now and NewID are replaceable for tests.
	Now   func() time.Time
	NewID func() string
	// MaxTxnOps bounds the writes of one etcd transaction (etcd's
	// --max-txn-ops, default 128); an index with more shards is created in
	// several transactions, staying CREATING until the last one.
	MaxTxnOps int
}

// New returns a Service over store.
func New(store *state.Store) *Service {
	return &Service{Store: store, Now: time.Now, NewID: uuid.NewString, MaxTxnOps: state.MaxTxnOps}
}

// CreateOptions are creation options beyond the public request.
type CreateOptions struct {
	// ColocateWith names a source index: each shard of the new index is
	// placed on the node holding the source shard its documents come from
	// (local reindex). Requires the shard counts to allow it
	// (routing.Colocatable); shards whose preferred node is not live are
	// placed by the usual rules.
	ColocateWith string
	// Pin, if set, is written under PinKey in the creating transaction,
	// with every shard of the new index added to it: a local reindex pins
	// its source and destination primaries from the moment the
	// destination exists, before its task record is stored, so that no
	// rebalancing move parts what was just placed together.
	Pin    *statev1.ShardPins
	PinKey string
}

// CreateIndex validates and creates an index, its routing entries and the
// requested aliases. Shards are left UNASSIGNED for the allocator, unless
// opts.ColocateWith places them at once.
func (s *Service) CreateIndex(ctx context.Context, req *sluicev1.CreateIndexRequest, opts CreateOptions) (*sluicev1.IndexInfo, error) {
	name := req.GetName()
	if err := ValidateName("index", name); err != nil {
		return nil, err
	}
	settings, err := NormalizeSettings(req.GetSettings())
	if err != nil {
		return nil, err
	}
	if err := ValidateMapping(req.GetMapping(), querydsl.MappingLimits(settings)); err != nil {
		return nil, err
	}
	for _, a := range req.GetAliases() {
		if err := ValidateName("alias", a); err != nil {
			return nil, err
		}
		if a == name {
			return nil, invalid("alias [%s] must not equal the index name", a)
		}
	}
	mapping := req.GetMapping()
	if mapping == nil {
		mapping = &sluicev1.Mapping{}
	}
	info := &statev1.Index{
		Name:         name,
		Uuid:         s.NewID(),
		Settings:     settings,
		Mapping:      mapping,
		State:        sluicev1.IndexState_INDEX_STATE_OPEN,
		CreationTime: timestamppb.New(s.Now()),
	}
	n := int(settings.NumberOfShards)
	// The first transaction holds the index, its aliases and as many
	// routing entries as fit; the rest follow in further transactions.
	firstBatch := min(n, max(1, s.maxOps()-1-len(req.GetAliases())))
	if firstBatch < n {
		info.State = sluicev1.IndexState_INDEX_STATE_CREATING
	}
	var entries []*statev1.ShardRouting
	aliases := slices.Compact(slices.Sorted(slices.Values(req.GetAliases())))
	_, err = s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		k := s.Store.Keys
		var t state.Txn
		if _, ok := st.Indices[name]; ok {
			return nil, fmt.Errorf("index [%s]: %w", name, state.ErrAlreadyExists)
		}
		if _, ok := st.Aliases[name]; ok {
			return nil, invalid("invalid index name [%s]: an alias with the same name exists", name)
		}
		t.Unchanged(k.Index(name), 0)
		t.Unchanged(k.Alias(name), 0)
		entries, err = s.initialRouting(st, &t, n, int(settings.NumberOfReplicas), opts)
		if err != nil {
			return nil, err
		}
		t.Put(k.Index(name), info)
		if opts.Pin != nil {
			pin := proto.Clone(opts.Pin).(*statev1.ShardPins)
			pin.Indices = append(pin.Indices, &statev1.PinnedShards{IndexUuid: info.Uuid})
			t.Put(opts.PinKey, pin)
		}
		for _, e := range entries[:firstBatch] {
			t.Put(k.Shard(info.Uuid, int(e.Shard)), e)
		}
		for _, a := range aliases {
			if _, ok := st.Indices[a]; ok {
				return nil, invalid("invalid alias name [%s]: an index with the same name exists", a)
			}
			t.Unchanged(k.Index(a), 0)
			ai := &statev1.Alias{}
			var rev int64
			if cur, ok := st.Aliases[a]; ok {
				ai, rev = proto.Clone(cur.Info).(*statev1.Alias), cur.ModRevision
			}
			ai.Indices = append(ai.Indices, name)
			t.Unchanged(k.Alias(a), rev)
			t.Put(k.Alias(a), ai)
		}
		return &t, nil
	})
	if err != nil {
		return nil, err
	}
	if firstBatch < n {
		if err := s.finishCreate(ctx, info, entries[firstBatch:]); err != nil {
			return nil, err
		}
	}
	return s.GetIndex(ctx, name)
}

func (s *Service) maxOps() int {
	if s.MaxTxnOps <= 0 {
		return 128
	}
	return s.MaxTxnOps
}

// initialRouting builds the routing entries of a new index: unassigned, or
// placed next to the source index's shards.
func (s *Service) initialRouting(st *state.Snapshot, t *state.Txn, n, replicas int, opts CreateOptions) ([]*statev1.ShardRouting, error) {
	entries := make([]*statev1.ShardRouting, n)
	for i := range entries {
		entries[i] = state.NewShardRouting(i, replicas, "index created")
	}
	if opts.ColocateWith == "" {
		return entries, nil
	}
	src, err := st.ResolveOne(opts.ColocateWith)
	if err != nil {
		return nil, err
	}
	return entries, s.colocate(st, t, src, entries)
}

func (s *Service) colocate(st *state.Snapshot, t *state.Txn, src *state.Index, entries []*statev1.ShardRouting) error {
	srcParams := paramsOf(src.Meta.GetSettings())
	srcNodes := make([]string, len(src.Shards))
	for i, sh := range src.Shards {
		if sh != nil {
			srcNodes[i] = state.Primary(sh.Routing).GetNodeId()
			// Place against the routing we read: if the source moves
			// meanwhile, the transaction retries with the new layout.
			t.Unchanged(s.Store.Keys.Shard(src.UUID(), i), sh.ModRevision)
		}
	}
	// The new index has no uuid in the state yet; place under a stand-in.
	const newIndex = "\x00new"
	hints, err := placement.Colocate(newIndex, srcParams, routing.Params{Shards: len(entries), RoutingShards: srcParams.RoutingShards}, srcNodes)
	if err != nil {
		return invalid("colocate with [%s]: %v", src.Name(), err)
	}
	for _, n := range st.Nodes {
		t.Unchanged(s.Store.Keys.Node(n.ID), n.ModRevision)
	}
	// Only the primaries: replicas are placed by the allocator once their
	// primary has started (they recover from it).
	for _, d := range placement.Place(st.PlacementNodes(), st.PlacementCopies(), hints) {
		p := state.Primary(entries[d.Shard.Shard])
		if d.Node == "" {
			p.Reason = d.Reason
			continue
		}
		p.NodeId, p.State, p.AllocationId, p.Reason = d.Node, sluicev1.ShardState_SHARD_STATE_INITIALIZING, s.NewID(), ""
	}
	return nil
}

func paramsOf(st *sluicev1.IndexSettings) routing.Params {
	return routing.Params{Shards: int(st.GetNumberOfShards()), RoutingShards: int(st.GetNumberOfRoutingShards())}
}

// finishCreate writes the routing entries that did not fit the first
// transaction, then marks the index OPEN. Each step is guarded by the index
// key, so a concurrent delete stops it.
func (s *Service) finishCreate(ctx context.Context, info *statev1.Index, rest []*statev1.ShardRouting) error {
	k := s.Store.Keys
	for len(rest) > 0 {
		batch := rest[:min(len(rest), s.maxOps()-1)]
		rest = rest[len(batch):]
		_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
			x, ok := st.Indices[info.Name]
			if !ok || x.UUID() != info.Uuid {
				return nil, fmt.Errorf("index [%s] was deleted while being created: %w", info.Name, state.ErrNotFound)
			}
			var t state.Txn
			t.Unchanged(k.Index(info.Name), x.ModRevision)
			for _, e := range batch {
				t.Put(k.Shard(info.Uuid, int(e.Shard)), e)
			}
			return &t, nil
		})
		if err != nil {
			return err
		}
	}
	_, err := s.updateIndex(ctx, info.Name, func(m *statev1.Index) error {
		m.State = sluicev1.IndexState_INDEX_STATE_OPEN
		return nil
	})
	return err
}

// DeleteIndex deletes an index (by name, not alias), its routing entries and
// its entries in aliases (an alias left pointing nowhere is deleted), in one
// transaction. Nodes see the routing go and delete the shards' data.
func (s *Service) DeleteIndex(ctx context.Context, name string) (string, error) {
	var uuid string
	_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		k := s.Store.Keys
		x, ok := st.Indices[name]
		if !ok {
			if _, isAlias := st.Aliases[name]; isAlias {
				return nil, invalid("[%s] is an alias; delete indices by name", name)
			}
			return nil, state.NotFoundf("no such index [%s]", name)
		}
		uuid = x.UUID()
		var t state.Txn
		t.Unchanged(k.Index(name), x.ModRevision)
		t.Delete(k.Index(name))
		t.DeletePrefix(k.IndexRouting(uuid))
		// No alias may start pointing at the index after our read.
		t.NothingNewUnder(k.Aliases(), st.Revision)
		for _, a := range st.AliasesOf(name) {
			cur := st.Aliases[a]
			t.Unchanged(k.Alias(a), cur.ModRevision)
			ai := withoutIndex(cur.Info, name)
			if len(ai.Indices) == 0 {
				t.Delete(k.Alias(a))
			} else {
				t.Put(k.Alias(a), ai)
			}
		}
		return &t, nil
	})
	return uuid, err
}

func withoutIndex(a *statev1.Alias, index string) *statev1.Alias {
	out := proto.Clone(a).(*statev1.Alias)
	out.Indices = slices.DeleteFunc(out.Indices, func(n string) bool { return n == index })
	if out.WriteIndex == index {
		out.WriteIndex = ""
	}
	return out
}

// GetIndex returns one index by name or by an alias pointing at one index.
func (s *Service) GetIndex(ctx context.Context, name string) (*sluicev1.IndexInfo, error) {
	st, err := s.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	x, err := st.ResolveOne(name)
	if err != nil {
		return nil, err
	}
	return st.Info(x), nil
}

// ListIndices returns the indices whose names start with prefix, sorted.
func (s *Service) ListIndices(ctx context.Context, prefix string) ([]*sluicev1.IndexInfo, error) {
	st, err := s.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	var out []*sluicev1.IndexInfo
	for _, name := range st.IndexNames(prefix) {
		out = append(out, st.Info(st.Indices[name]))
	}
	return out, nil
}

// updateIndex applies fn to the stored metadata of one index (by name or
// single-index alias) with compare-and-swap, retrying on conflict.
func (s *Service) updateIndex(ctx context.Context, name string, fn func(*statev1.Index) error) (*sluicev1.IndexInfo, error) {
	var target string
	_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		x, err := st.ResolveOne(name)
		if err != nil {
			return nil, err
		}
		target = x.Name()
		m := proto.Clone(x.Meta).(*statev1.Index)
		if err := fn(m); err != nil {
			return nil, err
		}
		var t state.Txn
		if proto.Equal(m, x.Meta) {
			return &t, nil
		}
		t.Unchanged(s.Store.Keys.Index(target), x.ModRevision)
		t.Put(s.Store.Keys.Index(target), m)
		return &t, nil
	})
	if err != nil {
		return nil, err
	}
	return s.GetIndex(ctx, target)
}

// UpdateSettings changes dynamic settings: with an empty mask the fields
// set in update, else exactly the fields the mask names (MergeSettings).
// A change of number_of_replicas is carried out by the allocator, which
// adds or removes copies.
func (s *Service) UpdateSettings(ctx context.Context, name string, update *sluicev1.IndexSettings, mask []string) (*sluicev1.IndexInfo, error) {
	return s.updateIndex(ctx, name, func(m *statev1.Index) error {
		merged, err := MergeSettings(m.GetSettings(), update, mask)
		if err != nil {
			return err
		}
		m.Settings = merged
		return nil
	})
}

// PutMapping merges fields into an index's mapping; changing an existing
// field is rejected naming it. Nodes use it too, for dynamic mapping
// updates: a racing update of the same field with another type loses.
func (s *Service) PutMapping(ctx context.Context, name string, update *sluicev1.Mapping) (*sluicev1.IndexInfo, error) {
	return s.updateIndex(ctx, name, func(m *statev1.Index) error {
		merged, err := MergeMapping(m.GetMapping(), update, querydsl.MappingLimits(m.GetSettings()))
		if err != nil {
			return err
		}
		m.Mapping = merged
		return nil
	})
}

// DefaultMappingUpdateTimeout bounds a mapping update's wait for etcd,
// dynamic (a node's, for a write that adds fields) or through the API
// (`--mapping-update-timeout`). Elasticsearch's
// index.mapping.dynamic_timeout is 30 s; a node cut off from etcd for
// its 10 s lease loses its primaries anyway, so waiting longer helps
// nobody.
const DefaultMappingUpdateTimeout = 10 * time.Second

// PutMappingWithin is PutMapping waiting at most timeout for etcd. The
// etcd client retries an unreachable cluster for as long as its context
// lasts, so a caller without a deadline of its own (a bulk, an API
// client) would wait with it. When the bound runs out, or etcd answers
// that it cannot serve, the error wraps state.ErrUnavailable and says
// so; when the caller's context ends first, the error wraps its
// context.Canceled or context.DeadlineExceeded.
func (s *Service) PutMappingWithin(ctx context.Context, timeout time.Duration, name string, update *sluicev1.Mapping) (*sluicev1.IndexInfo, error) {
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := s.PutMapping(mctx, name, update)
	switch code := status.Code(err); {
	case err == nil:
		return info, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("index [%s]: mapping update: %w (%v)", name, ctx.Err(), err)
	case mctx.Err() != nil, code == codes.Unavailable, code == codes.DeadlineExceeded:
		return nil, fmt.Errorf("%w: index [%s]: the cluster did not take the mapping update within %v (etcd unreachable?); retry: %w",
			state.ErrUnavailable, name, timeout, err)
	}
	return nil, err
}

// UpdateAliases applies alias actions in order, atomically: one transaction,
// all or nothing.
func (s *Service) UpdateAliases(ctx context.Context, actions []*sluicev1.AliasAction) error {
	if len(actions) == 0 {
		return invalid("actions: at least one action is required")
	}
	for i, a := range actions {
		if err := ValidateName("alias", a.GetAlias()); err != nil {
			return fmt.Errorf("actions[%d]: %w", i, err)
		}
		if a.GetIndex() == "" {
			return invalid("actions[%d]: index is required", i)
		}
		if a.GetType() != sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD && a.GetType() != sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE {
			return invalid("actions[%d]: type must be ADD or REMOVE", i)
		}
	}
	_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		k := s.Store.Keys
		var t state.Txn
		work := map[string]*statev1.Alias{}
		get := func(alias string) *statev1.Alias {
			if ai, ok := work[alias]; ok {
				return ai
			}
			ai := &statev1.Alias{}
			if cur, ok := st.Aliases[alias]; ok {
				ai = proto.Clone(cur.Info).(*statev1.Alias)
				t.Unchanged(k.Alias(alias), cur.ModRevision)
			} else {
				t.Unchanged(k.Alias(alias), 0)
			}
			work[alias] = ai
			return ai
		}
		guarded := map[string]bool{}
		for i, a := range actions {
			alias, index := a.GetAlias(), a.GetIndex()
			if _, ok := st.Indices[alias]; ok {
				return nil, invalid("actions[%d]: invalid alias name [%s]: an index with the same name exists", i, alias)
			}
			x, ok := st.Indices[index]
			if !ok {
				return nil, state.NotFoundf("actions[%d]: no such index [%s]", i, index)
			}
			// The index must still exist, and no index named like the
			// alias may appear, when the aliases are written.
			if !guarded[index] {
				t.Unchanged(k.Index(index), x.ModRevision)
				guarded[index] = true
			}
			if !guarded[alias] {
				t.Unchanged(k.Index(alias), 0)
				guarded[alias] = true
			}
			ai := get(alias)
			switch a.GetType() {
			case sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD:
				if !slices.Contains(ai.Indices, index) {
					ai.Indices = append(ai.Indices, index)
				}
				if a.GetIsWriteIndex() {
					ai.WriteIndex = index
				} else if ai.WriteIndex == index {
					ai.WriteIndex = ""
				}
			case sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE:
				if !slices.Contains(ai.Indices, index) {
					return nil, state.NotFoundf("actions[%d]: alias [%s] does not point at index [%s]", i, alias, index)
				}
				*ai = *withoutIndex(ai, index)
			}
		}
		for alias, ai := range work {
			sort.Strings(ai.Indices)
			if len(ai.Indices) == 0 {
				t.Delete(k.Alias(alias))
			} else {
				t.Put(k.Alias(alias), ai)
			}
		}
		return &t, nil
	})
	return err
}

// ListAliases returns the aliases starting with prefix, sorted.
func (s *Service) ListAliases(ctx context.Context, prefix string) ([]*sluicev1.AliasInfo, error) {
	st, err := s.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	return Aliases(st, prefix), nil
}

// Aliases returns the state's aliases starting with prefix, sorted.
func Aliases(st *state.Snapshot, prefix string) []*sluicev1.AliasInfo {
	var out []*sluicev1.AliasInfo
	for name, a := range st.Aliases {
		if len(name) >= len(prefix) && name[:len(prefix)] == prefix {
			out = append(out, state.AliasInfo(a))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Alias < out[j].Alias })
	return out
}
