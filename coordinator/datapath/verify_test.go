package datapath_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestVerifyIndex: every copy of a clean index verifies OK; a flipped byte
// in a copy's .fdt is DAMAGED naming the file, and once the copy is
// reported FAILED it answers with its routing reason while the other copy
// is still verified; bad requests are refused naming the field.
func TestVerifyIndex(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	tc.CreateIndex(t, "v", 2, textMapping())
	if _, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "v", Items: docItems(0, 400), Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE}); err != nil {
		t.Fatal(err)
	}
	// Commit every shard, so its files are on disk.
	info, err := tc.client.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "v"})
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[int32]string{}
	for _, n := range tc.Nodes {
		for i := range 2 {
			id := shard.ID{IndexUUID: info.Index.Uuid, Shard: i}
			if s, err := n.Shards().Get(id); err == nil {
				if _, err := s.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				dirs[int32(i)] = n.Shards().Path(id)
			}
		}
	}

	resp, err := tc.client.VerifyIndex(ctx, &sluicev1.VerifyIndexRequest{Index: "v", Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Shards) != 2 {
		t.Fatalf("%d results, want 2", len(resp.Shards))
	}
	for _, sv := range resp.Shards {
		if sv.Status != sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_OK || len(sv.Files) == 0 || len(sv.Segments) == 0 || sv.NodeId == "" {
			t.Errorf("clean copy: %v", sv)
		}
	}

	fdts, _ := filepath.Glob(filepath.Join(dirs[1], "*.fdt"))
	if len(fdts) == 0 {
		t.Fatal("no .fdt file")
	}
	b, err := os.ReadFile(fdts[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(fdts[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(fdts[0])
	resp, err = tc.client.VerifyIndex(ctx, &sluicev1.VerifyIndexRequest{Index: "v", Shard: proto.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Shards) != 1 || resp.Shards[0].Shard != 1 || resp.Shards[0].Status != sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_DAMAGED ||
		!strings.Contains(resp.Shards[0].Failure, name) {
		t.Fatalf("damaged copy: %v", resp.Shards)
	}

	// Once the node reports it FAILED, its reason answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err = tc.client.VerifyIndex(ctx, &sluicev1.VerifyIndexRequest{Index: "v"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Shards[1].Status == sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_FAILED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the damaged copy never answered FAILED: %v", resp.Shards[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sv := resp.Shards[1]; !strings.Contains(sv.Failure, name) || len(sv.Files) != 0 {
		t.Errorf("failed copy: %v", sv)
	}
	if resp.Shards[0].Status != sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_OK {
		t.Errorf("the other copy: %v", resp.Shards[0])
	}

	bad := []struct {
		req   *sluicev1.VerifyIndexRequest
		code  codes.Code
		field string
	}{
		{&sluicev1.VerifyIndexRequest{}, codes.InvalidArgument, "index"},
		{&sluicev1.VerifyIndexRequest{Index: "v", Shard: proto.Int32(2)}, codes.InvalidArgument, "shard"},
		{&sluicev1.VerifyIndexRequest{Index: "v", Shard: proto.Int32(-1)}, codes.InvalidArgument, "shard"},
		{&sluicev1.VerifyIndexRequest{Index: "v", MaxBytesPerSec: -5}, codes.InvalidArgument, "max_bytes_per_sec"},
		{&sluicev1.VerifyIndexRequest{Index: "nope"}, codes.NotFound, "nope"},
	}
	for _, tt := range bad {
		_, err := tc.client.VerifyIndex(ctx, tt.req)
		if s := status.Convert(err); s.Code() != tt.code || !strings.Contains(s.Message(), tt.field) {
			t.Errorf("%v: %v, want %v naming %s", tt.req, err, tt.code, tt.field)
		}
	}
}
