package datapath_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/cluster/watermark"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// A real cluster whose disks pass the flood stage by moving the
// watermarks (free space above what any disk has): the allocator blocks
// every index, writes fail with RESOURCE_EXHAUSTED naming node and disk,
// with a RetryInfo, per item in a mixed bulk; moving the watermarks back
// lifts the block without anyone touching the index. (e2e fills a real
// file system instead.)
func TestClusterFloodStage(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	tc.CreateIndex(t, "full", 1, textMapping())
	setMarks := func(low, high, flood string) {
		t.Helper()
		_, err := tc.client.UpdateClusterSettings(ctx, &sluicev1.UpdateClusterSettingsRequest{
			Settings:   &sluicev1.ClusterSettings{DiskWatermarkLow: low, DiskWatermarkHigh: high, DiskWatermarkFloodStage: flood},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disk_watermark_low", "disk_watermark_high", "disk_watermark_flood_stage"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Health reads through the coordinator's cache, which bulks route by.
	blocked := func() string {
		h, err := tc.client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"full"}})
		if err != nil {
			t.Fatal(err)
		}
		return h.Indices[0].WriteBlock
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	setMarks("3pb", "2pb", "1pb")
	waitFor("the write block", func() bool { return blocked() != "" })
	_, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "full", Items: docItems(0, 3)})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "index [full] refuses writes: disk of node [") ||
		!strings.Contains(st.Message(), "past the flood-stage disk watermark [1pb]") {
		t.Fatalf("bulk into a blocked index: %v", err)
	}
	var retry bool
	for _, d := range st.Details() {
		_, ok := d.(*errdetails.RetryInfo)
		retry = retry || ok
	}
	if !retry {
		t.Errorf("no RetryInfo in %v", st.Details())
	}
	h, err := tc.client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
	if err != nil || len(h.DiskWatermarkNodes) != 3 || h.Indices[0].WriteBlock == "" ||
		h.DiskWatermarkNodes[0].DiskWatermark != sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE {
		t.Errorf("health does not show the flood stage: %v, %v", h, err)
	}

	// A bulk whose items are not all blocked: the blocked ones fail
	// alone, each with a retry delay.
	resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "full", Items: append(docItems(0, 2),
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Index: "nope", Id: "x"})})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Items {
		want := codes.ResourceExhausted
		if i == 2 {
			want = codes.NotFound
		}
		if codes.Code(r.Error.GetCode()) != want || (want == codes.ResourceExhausted) != (r.Error.GetRetryDelay() != nil) {
			t.Errorf("item %d = %v, want %v (with a retry delay if RESOURCE_EXHAUSTED)", i, r, want)
		}
	}

	// Back to watermarks no disk passes (startCluster's), not the
	// defaults: the host's disk may be past 90% used.
	ig := watermark.Ignored()
	setMarks(ig.DiskWatermarkLow, ig.DiskWatermarkHigh, ig.DiskWatermarkFloodStage)
	waitFor("the block lifted", func() bool { return blocked() == "" })
	resp, err = tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "full", Items: docItems(0, 3)})
	if err != nil || resp.Errors {
		t.Fatalf("bulk after the block was lifted: %v, %v", resp, err)
	}
}
