package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// ErrInvalid: a malformed replication request.
var ErrInvalid = errors.New("invalid replication request")

// fileChunkBytes is how much of a file one GetFiles message carries: a
// recovery's bytes cross in messages of this size, so each costs its
// per-message work (a send, a hand-off between the transport's and the
// caller's goroutines on each side, a write) once a MiB.
const fileChunkBytes = 1 << 20

func checkShard(id *nodev1.ShardID) error {
	if id.GetIndexUuid() == "" || id.GetShard() < 0 {
		return fmt.Errorf("%w: shard: index_uuid and a shard number >= 0 are required", ErrInvalid)
	}
	return nil
}

// toReplica is a primary's request to one replica copy.
type toReplica interface {
	GetShard() *nodev1.ShardID
	GetAllocationId() string
}

// replicaFor is the replica copy a request is for.
func (s *Service) replicaFor(req toReplica) (*engine.Replica, error) {
	if err := checkShard(req.GetShard()); err != nil {
		return nil, err
	}
	return s.replica(stateID(req.GetShard()), req.GetAllocationId())
}

// GetCopyState reports how far a copy held here is.
func (s *Service) GetCopyState(_ context.Context, req *nodev1.GetCopyStateRequest) (*nodev1.GetCopyStateResponse, error) {
	if err := checkShard(req.GetShard()); err != nil {
		return nil, err
	}
	id := stateID(req.GetShard())
	info, held := s.lookup(id)
	if info == nil || held.AllocationID != req.GetAllocationId() {
		return nil, fmt.Errorf("shard %s: allocation %s: %w", id, req.GetAllocationId(), shard.ErrNotHere)
	}
	sh, err := s.cfg.Host.Get(shardKey(id))
	if err != nil {
		return nil, err
	}
	if rep := sh.Replica(); rep != nil {
		st := rep.State()
		return &nodev1.GetCopyStateResponse{PrimaryTerm: st.Term, LocalCheckpoint: st.LocalCheckpoint,
			MaxSeqNo: st.MaxSeqNo, CheckpointSeqNo: st.Visible}, nil
	}
	eng := sh.Engine()
	rd := eng.Acquire()
	defer rd.Release()
	return &nodev1.GetCopyStateResponse{PrimaryTerm: eng.PrimaryTerm(), LocalCheckpoint: eng.Writer().MaxSeqNo(),
		MaxSeqNo: eng.Writer().MaxSeqNo(), CheckpointSeqNo: rd.SeqNo()}, nil
}

// ReplicateOps appends a primary's operations to a replica copy.
func (s *Service) ReplicateOps(ctx context.Context, req *nodev1.ReplicateOpsRequest) (*nodev1.ReplicateOpsResponse, error) {
	ops, err := fromProtoOps(req.GetOps())
	if err != nil {
		return nil, err
	}
	rep, err := s.replicaFor(req)
	if err != nil {
		return nil, err
	}
	st, err := rep.ApplyOps(ctx, req.GetPrimaryTerm(), ops)
	if err != nil {
		return nil, err
	}
	rep.UpdateGlobalCheckpoint(req.GetGlobalCheckpoint())
	return &nodev1.ReplicateOpsResponse{LocalCheckpoint: st.LocalCheckpoint, MaxSeqNo: st.MaxSeqNo}, nil
}

// PublishCheckpoint installs a primary's checkpoint on a replica copy.
func (s *Service) PublishCheckpoint(ctx context.Context, req *nodev1.PublishCheckpointRequest) (*nodev1.PublishCheckpointResponse, error) {
	id := stateID(req.GetShard())
	rep, err := s.replicaFor(req)
	if err != nil {
		return nil, err
	}
	cp, err := engine.DecodeCheckpoint(req.GetCheckpoint())
	if err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %w", ErrInvalid, err)
	}
	if cp.Term < req.GetPrimaryTerm() {
		return nil, fmt.Errorf("%w: checkpoint of term %d sent by the primary of term %d", ErrInvalid, cp.Term, req.GetPrimaryTerm())
	}
	if err := rep.SetPrimaryTerm(req.GetPrimaryTerm()); err != nil {
		return nil, err
	}
	rep.UpdateGlobalCheckpoint(req.GetGlobalCheckpoint())
	res, err := rep.InstallCheckpoint(ctx, cp, s.fetcher(id, req.GetPrimaryNode()))
	if err != nil {
		return nil, err
	}
	if req.GetCommit() {
		if err := commitAdded(ctx, rep, cp); err != nil {
			return nil, fmt.Errorf("shard %s: %w", id, err)
		}
	}
	return &nodev1.PublishCheckpointResponse{VisibleSeqNo: rep.State().Visible, FilesFetched: int32(res.Fetched),
		BytesFetched: res.FetchedBytes, FilesReused: int32(res.Reused)}, nil
}

// commitAdded commits the checkpoint rep installed, which holds cp (cp or
// a newer one): segments added outside the translog (AddIndexes) are
// durable on the copy only in a commit. The commit must record every add
// marker of cp — a copy that cannot commit what it installed (stale, or
// its translog trimmed above the checkpoint) fails the request rather
// than answer with the segments in memory only.
func commitAdded(ctx context.Context, rep *engine.Replica, cp *engine.ReplicationCheckpoint) error {
	si, err := rep.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit added segments: %w", err)
	}
	for k := range cp.Infos.UserData {
		if !strings.HasPrefix(k, engine.UserDataAddedPrefix) {
			continue
		}
		if si == nil {
			return fmt.Errorf("commit added segments: no commit records %s", k)
		}
		if _, ok := si.UserData[k]; !ok {
			return fmt.Errorf("commit added segments: commit %d does not record %s", si.Generation, k)
		}
	}
	return nil
}

// PreCopyFiles fetches a merged segment's files to a replica copy.
func (s *Service) PreCopyFiles(ctx context.Context, req *nodev1.PreCopyFilesRequest) (*nodev1.PreCopyFilesResponse, error) {
	id := stateID(req.GetShard())
	rep, err := s.replicaFor(req)
	if err != nil {
		return nil, err
	}
	if req.GetPrimaryTerm() < rep.PrimaryTerm() {
		return nil, fmt.Errorf("%w: pre-copy from the primary of term %d, this copy knows term %d", engine.ErrStaleTerm, req.GetPrimaryTerm(), rep.PrimaryTerm())
	}
	files := make([]engine.FileMeta, len(req.GetFiles()))
	for i, f := range req.GetFiles() {
		files[i] = engine.FileMeta{Name: f.GetName(), Length: f.GetLength(), Checksum: f.GetChecksum()}
	}
	n, bytes, err := rep.PreCopy(ctx, files, s.fetcher(id, req.GetPrimaryNode()))
	if err != nil {
		return nil, err
	}
	return &nodev1.PreCopyFilesResponse{FilesFetched: int32(n), BytesFetched: bytes}, nil
}

// Resync is a new primary's trim of a replica copy's history.
func (s *Service) Resync(ctx context.Context, req *nodev1.ResyncRequest) (*nodev1.ResyncResponse, error) {
	rep, err := s.replicaFor(req)
	if err != nil {
		return nil, err
	}
	if err := rep.Trim(ctx, req.GetPrimaryTerm(), req.GetTrimAboveSeqNo()); err != nil {
		return nil, err
	}
	rep.UpdateGlobalCheckpoint(req.GetGlobalCheckpoint())
	return &nodev1.ResyncResponse{LocalCheckpoint: rep.State().LocalCheckpoint}, nil
}

// GetFiles streams files of a primary copy held here.
func (s *Service) GetFiles(req *nodev1.GetFilesRequest, stream grpc.ServerStreamingServer[nodev1.GetFilesResponse]) error {
	if err := checkShard(req.GetShard()); err != nil {
		return err
	}
	sh, err := s.cfg.Host.Get(shardKey(stateID(req.GetShard())))
	if err != nil {
		return err
	}
	eng := sh.Engine()
	if eng == nil {
		return fmt.Errorf("shard %s: files are served by the primary: %w", stateID(req.GetShard()), shard.ErrNotPrimary)
	}
	for _, name := range req.GetNames() {
		if err := sendFile(stream, eng, name); err != nil {
			return err
		}
	}
	return nil
}

func sendFile(stream grpc.ServerStreamingServer[nodev1.GetFilesResponse], eng *engine.Engine, name string) error {
	in, err := eng.OpenIndexFile(name)
	if errors.Is(err, engine.ErrFailed) {
		return err // a file it references is missing: asking again cannot help
	}
	if err != nil {
		return fmt.Errorf("%w: %w", shard.ErrNotHere, err)
	}
	defer in.Close()
	b := in.Bytes()
	for off := 0; ; {
		end := min(off+fileChunkBytes, len(b))
		if err := stream.Send(&nodev1.GetFilesResponse{Name: name, Offset: int64(off), Data: b[off:end], Last: end == len(b)}); err != nil {
			return err
		}
		if end == len(b) {
			return nil
		}
		off = end
	}
}

// fetcher fetches files of shard id from the primary on node primary
// (engine.FetchFunc), one GetFiles stream per file.
func (s *Service) fetcher(id state.ShardID, primary string) engine.FetchFunc {
	return func(ctx context.Context, f engine.FileMeta, w io.Writer) error {
		c, err := s.client(primary)
		if err != nil {
			return err
		}
		stream, err := c.GetFiles(ctx, &nodev1.GetFilesRequest{Shard: protoID(id), Names: []string{f.Name}}, filesCallOptions...)
		if err != nil {
			return err
		}
		msg := &fileChunk{GetFilesResponse: new(nodev1.GetFilesResponse)}
		defer msg.release()
		var off int64
		for {
			err := stream.RecvMsg(msg)
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("file %s: stream ended at %d of %d bytes", f.Name, off, f.Length)
			}
			if err != nil {
				return fmt.Errorf("file %s: %w", f.Name, err)
			}
			if msg.GetName() != f.Name || msg.GetOffset() != off {
				return fmt.Errorf("file %s: got %s at %d, want offset %d", f.Name, msg.GetName(), msg.GetOffset(), off)
			}
			n := len(msg.GetData())
			_, err = w.Write(msg.GetData())
			msg.release()
			if err != nil {
				return err
			}
			off += int64(n)
			if msg.GetLast() {
				return nil
			}
		}
	}
}
