package metadata

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestClusterSettings(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	defaults := &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "95%", RebalanceEnable: "all"}
	steps := []struct {
		name   string
		update *sluicev1.ClusterSettings
		mask   []string
		want   *sluicev1.ClusterSettings
		bad    string // the field an invalid update names
	}{
		{name: "defaults before any write", want: defaults},
		{name: "set fields, no mask", update: &sluicev1.ClusterSettings{DiskWatermarkLow: "80%", DiskWatermarkFloodStage: "97%"},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "80%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", RebalanceEnable: "all"}},
		{name: "inconsistent: nothing written", update: &sluicev1.ClusterSettings{DiskWatermarkHigh: "98%"}, bad: "disk_watermark_high"},
		{name: "not a watermark", update: &sluicev1.ClusterSettings{DiskWatermarkLow: "much"}, bad: "disk_watermark_low"},
		{name: "unknown field in the mask", mask: []string{"shards"}, bad: "update_mask"},
		{name: "a masked empty field goes back to its default", mask: []string{"disk_watermark_low"},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", RebalanceEnable: "all"}},
		{name: "rebalancing bound", update: &sluicev1.ClusterSettings{MaxConcurrentRebalance: 5},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", MaxConcurrentRebalance: 5, RebalanceEnable: "all"}},
		{name: "rebalancing unbounded", update: &sluicev1.ClusterSettings{MaxConcurrentRebalance: -1},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", MaxConcurrentRebalance: -1, RebalanceEnable: "all"}},
		{name: "rebalancing bound below -1", update: &sluicev1.ClusterSettings{MaxConcurrentRebalance: -2}, bad: "max_concurrent_rebalance"},
		{name: "rebalance replicas only", update: &sluicev1.ClusterSettings{RebalanceEnable: "replicas"},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", RebalanceEnable: "replicas", MaxConcurrentRebalance: -1}},
		{name: "not a rebalance_enable value: nothing written", update: &sluicev1.ClusterSettings{RebalanceEnable: "primary"}, bad: "rebalance_enable"},
		{name: "rebalance_enable back to its default", mask: []string{"rebalance_enable"},
			want: &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%", DiskWatermarkFloodStage: "97%", RebalanceEnable: "all", MaxConcurrentRebalance: -1}},
	}
	for _, s := range steps {
		var got *sluicev1.ClusterSettings
		var err error
		if s.update == nil && s.mask == nil {
			got, err = svc.ClusterSettings(ctx)
		} else {
			got, err = svc.UpdateClusterSettings(ctx, s.update, s.mask)
		}
		if s.bad != "" {
			var fe interface{ ErrorField() string }
			if !errors.Is(err, state.ErrInvalid) || !errors.As(err, &fe) || fe.ErrorField() != s.bad {
				t.Errorf("%s: err = %v, want invalid naming %s", s.name, err, s.bad)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d := cmp.Diff(s.want, got, protocmp.Transform()); d != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, d)
		}
		stored, err := svc.ClusterSettings(ctx)
		if err != nil || !cmp.Equal(s.want, stored, protocmp.Transform()) {
			t.Errorf("%s: read back %v, %v", s.name, stored, err)
		}
	}
}
