// Package indexspec turns the index parameters of the Kubernetes API
// (v1alpha1.IndexParameters: shards, mapping, settings) into the Sluice
// API's IndexSettings and Mapping, and compares them with what the cluster
// reports, so a reconciler can send only the changes.
//
// Settings the resource leaves unset are "don't care" when comparing: the
// API's update only changes fields that are set, so there is no way to
// send "back to the default" for the merge throttle or the translog sync
// interval; removing them from the spec leaves the last value in force.
package indexspec

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/esjson"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Defaults the cluster applies to unset settings; a current value that is
// unset compares equal to them.
const (
	DefaultRefreshInterval = time.Second
	DefaultSyncInterval    = 5 * time.Second
)

// Settings converts p to creation settings.
func Settings(p *v1alpha1.IndexParameters) (*sluicev1.IndexSettings, error) {
	s := &sluicev1.IndexSettings{NumberOfShards: p.Shards, NumberOfReplicas: p.Replicas}
	if s.NumberOfShards == 0 {
		s.NumberOfShards = 1
	}
	if p.RoutingShards != nil {
		s.NumberOfRoutingShards = *p.RoutingShards
	}
	if err := dynamic(&p.Settings, s); err != nil {
		return nil, err
	}
	return s, nil
}

// dynamic fills the dynamic settings of s from in.
func dynamic(in *v1alpha1.IndexSettings, s *sluicev1.IndexSettings) error {
	if ri := in.RefreshInterval; ri != "" {
		d := -time.Second // "-1": refresh on demand only (any negative value)
		if ri != "-1" {
			var err error
			if d, err = time.ParseDuration(ri); err != nil {
				return fmt.Errorf("settings.refreshInterval: %w", err)
			}
		}
		s.RefreshInterval = durationpb.New(d)
	}
	if m := in.MergeThrottleMBPerSec; m != nil {
		s.MergeMaxMbPerSec = float64(*m)
	}
	if d := in.Translog.Durability; d != "" {
		var err error
		if s.TranslogDurability, err = client.ParseEnum[sluicev1.TranslogDurability]("settings.translog.durability", string(d)); err != nil {
			return err
		}
	}
	if si := in.Translog.SyncInterval; si != "" {
		d, err := time.ParseDuration(si)
		if err != nil {
			return fmt.Errorf("settings.translog.syncInterval: %w", err)
		}
		s.TranslogSyncInterval = durationpb.New(d)
	}
	return nil
}

// Mapping parses p's mapping; nil when the spec has none.
func Mapping(p *v1alpha1.IndexParameters) (*sluicev1.Mapping, error) {
	if p.Mapping == nil {
		return nil, nil
	}
	m, err := esjson.ParseMapping(p.Mapping.Raw)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	return m, nil
}

// SettingsUpdate returns the dynamic settings of desired that differ from
// current, with the names of those fields (an update mask: a replica count
// of 0 is a value, not "leave it"), or nil when none do.
func SettingsUpdate(desired, current *sluicev1.IndexSettings) (*sluicev1.IndexSettings, []string) {
	up := &sluicev1.IndexSettings{}
	var mask []string
	if d := desired.GetNumberOfReplicas(); d != current.GetNumberOfReplicas() {
		up.NumberOfReplicas, mask = d, append(mask, "number_of_replicas")
	}
	if d := desired.GetRefreshInterval(); d != nil && !sameRefresh(d.AsDuration(), durationOr(current.GetRefreshInterval(), DefaultRefreshInterval)) {
		up.RefreshInterval, mask = d, append(mask, "refresh_interval")
	}
	if d := desired.GetTranslogDurability(); d != sluicev1.TranslogDurability_TRANSLOG_DURABILITY_UNSPECIFIED && d != durability(current) {
		up.TranslogDurability, mask = d, append(mask, "translog_durability")
	}
	if d := desired.GetTranslogSyncInterval(); d != nil && d.AsDuration() != durationOr(current.GetTranslogSyncInterval(), DefaultSyncInterval) {
		up.TranslogSyncInterval, mask = d, append(mask, "translog_sync_interval")
	}
	if d := desired.GetMergeMaxMbPerSec(); d != 0 && d != current.GetMergeMaxMbPerSec() {
		up.MergeMaxMbPerSec, mask = d, append(mask, "merge_max_mb_per_sec")
	}
	if len(mask) == 0 {
		return nil, nil
	}
	return up, mask
}

// sameRefresh treats every negative interval as "off".
func sameRefresh(a, b time.Duration) bool {
	return a == b || (a < 0 && b < 0)
}

func durationOr(d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.AsDuration()
}

func durability(s *sluicev1.IndexSettings) sluicev1.TranslogDurability {
	if d := s.GetTranslogDurability(); d != sluicev1.TranslogDurability_TRANSLOG_DURABILITY_UNSPECIFIED {
		return d
	}
	return sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST
}

// MappingUpdate returns the fields of desired that current lacks (nil when
// none), and the names of fields whose type differs: a mapping can only
// grow, so those need a reindex into a new index.
func MappingUpdate(desired, current *sluicev1.Mapping) (update *sluicev1.Mapping, conflicts []string) {
	for _, name := range slices.Sorted(maps.Keys(desired.GetProperties())) {
		want := desired.GetProperties()[name]
		have, ok := current.GetProperties()[name]
		switch {
		case !ok:
			if update == nil {
				update = &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{}}
			}
			update.Properties[name] = want
		case have.GetType() != want.GetType():
			conflicts = append(conflicts, fmt.Sprintf("%s (%s in the cluster, %s in the spec)", name,
				client.EnumName(have.GetType()), client.EnumName(want.GetType())))
		}
	}
	return update, conflicts
}
