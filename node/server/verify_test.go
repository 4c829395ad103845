package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestVerifyShard: every file of a clean shard checks OK (and every
// segment with deep); after a flipped byte in its .fdt the file is CORRUPT,
// named with what is wrong, and the shard has failed; bad requests are
// INVALID_ARGUMENT, a shard not here NOT_FOUND.
func TestVerifyShard(t *testing.T) {
	f := newFixture(t, shard.HostOptions{})
	ctx := context.Background()
	f.bulk(t, indexItems(200), sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	s, err := f.host.Get(shard.ID{IndexUUID: sid.IndexUuid})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx); err != nil { // the segment's files on disk
		t.Fatal(err)
	}
	resp, err := f.client.VerifyShard(ctx, &nodev1.VerifyShardRequest{Shard: sid, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	var fdt string
	for _, fv := range resp.Files {
		if fv.Status != sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_OK || fv.Error != "" {
			t.Errorf("clean shard: %v", fv)
		}
		if strings.HasSuffix(fv.Name, ".fdt") {
			fdt = fv.Name
		}
	}
	if fdt == "" || len(resp.Segments) == 0 || resp.Bytes == 0 || resp.Failure != "" {
		t.Fatalf("clean shard: %v", resp)
	}
	for _, sv := range resp.Segments {
		if sv.Error != "" {
			t.Errorf("clean segment: %v", sv)
		}
	}

	path := filepath.Join(f.host.Path(shard.ID{IndexUUID: sid.IndexUuid}), fdt)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err = f.client.VerifyShard(ctx, &nodev1.VerifyShardRequest{Shard: sid, MaxBytesPerSec: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	corrupt := 0
	for _, fv := range resp.Files {
		if fv.Status == sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_CORRUPT {
			corrupt++
			if fv.Name != fdt || !strings.Contains(fv.Error, fdt) {
				t.Errorf("damaged file reported as %v", fv)
			}
		}
	}
	if corrupt != 1 || !strings.Contains(resp.Failure, fdt) {
		t.Fatalf("after damage: %d corrupt files, failure %q", corrupt, resp.Failure)
	}
	if _, err := f.host.Get(shard.ID{IndexUUID: sid.IndexUuid}); err == nil {
		t.Error("the damaged shard still serves")
	}

	_, err = f.client.VerifyShard(ctx, &nodev1.VerifyShardRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = f.client.VerifyShard(ctx, &nodev1.VerifyShardRequest{Shard: sid, MaxBytesPerSec: -1})
	wantCode(t, err, codes.InvalidArgument)
	_, err = f.client.VerifyShard(ctx, &nodev1.VerifyShardRequest{Shard: &nodev1.ShardID{IndexUuid: "nope"}})
	wantCode(t, err, codes.NotFound)
}
