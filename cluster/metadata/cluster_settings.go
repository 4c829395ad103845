package metadata

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-search/sluice/cluster/rebalance"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ClusterSettings returns the cluster settings, defaults filled in.
func (s *Service) ClusterSettings(ctx context.Context) (*sluicev1.ClusterSettings, error) {
	st, err := s.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	return EffectiveSettings(st.Settings), nil
}

// EffectiveSettings returns the settings with every empty field that has a
// default set to it (a clone; s is not changed).
func EffectiveSettings(s *sluicev1.ClusterSettings) *sluicev1.ClusterSettings {
	out := watermark.Effective(s)
	out.RebalanceEnable = string(rebalance.FromSettings(s))
	return out
}

// UpdateClusterSettings changes the cluster settings: with an empty mask
// the fields set in update, else exactly the fields the mask names (an
// empty one goes back to its default). The result must be consistent
// (watermark.FromSettings, rebalance.Parse) or nothing is written. It returns the settings
// now in force, defaults filled in.
func (s *Service) UpdateClusterSettings(ctx context.Context, update *sluicev1.ClusterSettings, mask []string) (*sluicev1.ClusterSettings, error) {
	var out *sluicev1.ClusterSettings
	_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		merged := proto.Clone(st.Settings).(*sluicev1.ClusterSettings)
		dst, upd := merged.ProtoReflect(), update.ProtoReflect()
		fields := dst.Descriptor().Fields()
		if len(mask) == 0 {
			upd.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
				mask = append(mask, string(fd.Name()))
				return true
			})
		}
		for _, path := range mask {
			fd := fields.ByName(protoreflect.Name(path))
			if fd == nil {
				return nil, state.InvalidFieldf("update_mask", "update_mask: [%s] is not a cluster setting (settings have %s)", path, settingNames(fields))
			}
			if upd.Has(fd) {
				dst.Set(fd, upd.Get(fd))
			} else {
				dst.Clear(fd)
			}
		}
		if _, err := watermark.FromSettings(merged); err != nil {
			return nil, err
		}
		// As Elasticsearch's cluster_concurrent_rebalance: -1 is no bound;
		// 0 (unset) the default.
		if n := merged.GetMaxConcurrentRebalance(); n < -1 {
			return nil, state.InvalidFieldf("max_concurrent_rebalance", "max_concurrent_rebalance: must be -1 (no bound), 0 (the default, 2) or more, got %d", n)
		}
		if _, err := rebalance.Parse(merged.GetRebalanceEnable()); err != nil {
			return nil, err
		}
		out = EffectiveSettings(merged)
		return s.putSettings(st, merged), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DrainNode adds node to the drained nodes (or with undrain removes it)
// and says how many copies it still holds. Draining a node that is not
// registered and holds no copies is NOT_FOUND (a typo would drain
// nothing); ending a drain always succeeds.
func (s *Service) DrainNode(ctx context.Context, node string, undrain bool) (*sluicev1.DrainNodeResponse, error) {
	if node == "" {
		return nil, state.InvalidFieldf("node_id", "node_id is required")
	}
	var resp *sluicev1.DrainNodeResponse
	_, err := s.Store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		resp = &sluicev1.DrainNodeResponse{NodeId: node, Draining: !undrain, Copies: int32(st.CopiesOn(node)), Live: st.Live(node)}
		if !undrain && !resp.Live && resp.Copies == 0 {
			return nil, state.NotFoundf("no data node [%s] is registered or holds shard copies", node)
		}
		merged := proto.Clone(st.Settings).(*sluicev1.ClusterSettings)
		merged.DrainedNodes = slices.DeleteFunc(merged.DrainedNodes, func(id string) bool { return id == node })
		if !undrain {
			merged.DrainedNodes = append(merged.DrainedNodes, node)
			slices.Sort(merged.DrainedNodes)
		}
		if slices.Equal(merged.DrainedNodes, st.Settings.GetDrainedNodes()) {
			return &state.Txn{}, nil // already so
		}
		return s.putSettings(st, merged), nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// putSettings is the transaction that stores settings in place of st's.
func (s *Service) putSettings(st *state.Snapshot, settings *sluicev1.ClusterSettings) *state.Txn {
	var t state.Txn
	t.Unchanged(s.Store.Keys.Settings(), st.SettingsModRevision)
	t.Put(s.Store.Keys.Settings(), &statev1.ClusterSettings{Settings: settings})
	return &t
}
