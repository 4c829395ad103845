package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestPrintVerify(t *testing.T) {
	ok := &sluicev1.ShardVerification{Index: "books", Shard: 0, NodeId: "n1", Status: sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_OK,
		Files: []*sluicev1.FileVerification{{Name: "_0.doc", Bytes: 2048, Status: sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_OK}},
		Bytes: 2048, Took: durationpb.New(12 * time.Millisecond)}
	damaged := &sluicev1.ShardVerification{Index: "books", Shard: 1, NodeId: "n2", Status: sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_DAMAGED,
		Files: []*sluicev1.FileVerification{
			{Name: "_1.doc", Bytes: 4096, Status: sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_OK},
			{Name: "_1.fdt", Status: sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_CORRUPT, Error: "corrupt index: _1.fdt: checksum mismatch"}},
		Bytes: 4096, Took: durationpb.New(time.Millisecond), Failure: "corrupt index: _1.fdt: checksum mismatch"}
	failed := &sluicev1.ShardVerification{Index: "books", Shard: 2, NodeId: "n3", Status: sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_FAILED,
		Failure: "open failed: store marked corrupted: _2.tim"}
	unavailable := &sluicev1.ShardVerification{Index: "books", Shard: 3, NodeId: "n3", Status: sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_UNAVAILABLE,
		Failure: "SHARD_STATE_INITIALIZING on node \"n3\""}
	tests := []struct {
		name   string
		shards []*sluicev1.ShardVerification
		files  bool
		want   []string // in the output
		absent []string
		err    string
	}{
		{"clean", []*sluicev1.ShardVerification{ok}, false, []string{"books[0]", "n1", "ok", "2KiB", "12ms"}, []string{"_0.doc"}, ""},
		{"clean, files listed", []*sluicev1.ShardVerification{ok}, true, []string{"_0.doc"}, nil, ""},
		{"damage", []*sluicev1.ShardVerification{ok, damaged, failed}, false,
			[]string{"damaged", "_1.fdt", "corrupt", "failed", "_2.tim"}, []string{"_1.doc"}, "2 of 3 shard copies damaged or failed"},
		{"unverified", []*sluicev1.ShardVerification{ok, unavailable}, false, []string{"unavailable", "INITIALIZING"}, nil, "1 of 2 shard copies could not be verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &sluicev1.VerifyIndexResponse{Shards: tt.shards}
			var out bytes.Buffer
			if err := printVerify(&out, resp, tt.files); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(out.String(), a) {
					t.Errorf("output has %q:\n%s", a, out.String())
				}
			}
			err := verifyOutcome(resp)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("outcome %v, want %q", err, tt.err)
			}
		})
	}
}
