package server

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// fileStatuses are the engine's file check outcomes as the API's.
var fileStatuses = map[engine.FileStatus]sluicev1.FileVerificationStatus{
	engine.FileOK:         sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_OK,
	engine.FileCorrupt:    sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_CORRUPT,
	engine.FileGone:       sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_GONE,
	engine.FileUnreadable: sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_UNREADABLE,
}

// VerifyShard checksums every file of an open shard (shard.Host.Verify),
// one verification at a time on the node: concurrent ones would only
// share the disk and each take longer. Damage fails the shard; the
// response reports every file and the shard's failure.
func (s *Server) VerifyShard(ctx context.Context, req *nodev1.VerifyShardRequest) (*nodev1.VerifyShardResponse, error) {
	if req.GetShard() == nil {
		return nil, fmt.Errorf("%w: shard is required", shard.ErrInvalid)
	}
	if req.GetMaxBytesPerSec() < 0 {
		return nil, fmt.Errorf("%w: max_bytes_per_sec must not be negative, got %d", shard.ErrInvalid, req.GetMaxBytesPerSec())
	}
	select {
	case s.verifying <- struct{}{}:
		defer func() { <-s.verifying }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	id := shard.ID{IndexUUID: req.GetShard().GetIndexUuid(), Shard: int(req.GetShard().GetShard())}
	res, err := s.host.Verify(ctx, id, engine.VerifyOptions{BytesPerSec: req.GetMaxBytesPerSec(), Deep: req.GetDeep()})
	if err != nil {
		return nil, err
	}
	out := &nodev1.VerifyShardResponse{Bytes: res.Bytes, Took: durationpb.New(res.Took)}
	for _, f := range res.Files {
		fv := &sluicev1.FileVerification{Name: f.Name, Bytes: f.Bytes, Status: fileStatuses[f.Status]}
		if f.Err != nil {
			fv.Error = f.Err.Error()
		}
		out.Files = append(out.Files, fv)
	}
	for _, sc := range res.Segments {
		sv := &sluicev1.SegmentVerification{Name: sc.Name}
		if sc.Err != nil {
			sv.Error = sc.Err.Error()
		}
		out.Segments = append(out.Segments, sv)
	}
	if err := s.host.Failure(id); err != nil {
		out.Failure = err.Error()
	}
	return out, nil
}
