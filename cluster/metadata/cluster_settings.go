package metadata

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

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
	return watermark.Effective(st.Settings), nil
}

// UpdateClusterSettings changes the cluster settings: with an empty mask
// the fields set in update, else exactly the fields the mask names (an
// empty one goes back to its default). The result must be consistent
// (watermark.FromSettings) or nothing is written. It returns the settings
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
		out = watermark.Effective(merged)
		var t state.Txn
		t.Unchanged(s.Store.Keys.Settings(), st.SettingsModRevision)
		t.Put(s.Store.Keys.Settings(), &statev1.ClusterSettings{Settings: merged})
		return &t, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
