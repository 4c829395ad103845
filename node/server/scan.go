package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// selectionFor returns (building once per reader, slice and query) the
// docs of r that are live, in the slice and match q.
func selectionFor(ctx context.Context, r *shard.PinnedReader, sl *sluicev1.Slice, q search.Query, qkey []byte) (*engine.Selection, error) {
	key := fmt.Sprintf("scan/%d/%d/%x", sl.GetId(), sl.GetMax(), qkey)
	v, err := r.Memo(key, func() (any, error) {
		return r.Reader().Select(ctx, q, engine.Slice{ID: int(sl.GetId()), Max: int(sl.GetMax())})
	})
	if err != nil {
		return nil, err
	}
	return v.(*engine.Selection), nil
}

// scanCursor encodes the next shard-local doc to read.
func encodeCursor(next int) []byte { return binary.AppendUvarint([]byte{1}, uint64(next)) }

func decodeCursor(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	v, n := binary.Uvarint(b[1:])
	// Only the canonical encoding: one position, one cursor.
	if b[0] != 1 || n <= 0 || 1+n != len(b) || v > math.MaxInt32 || binary.PutUvarint(make([]byte, binary.MaxVarintLen64), v) != n {
		return 0, fmt.Errorf("%w: malformed scan cursor", shard.ErrInvalid)
	}
	return int(v), nil
}

const defaultScanBatch = 1000

// ShardScan streams the selected docs of a pinned reader in index order.
func (s *Server) ShardScan(req *nodev1.ShardScanRequest, stream nodev1.Node_ShardScanServer) error {
	ctx := stream.Context()
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return err
	}
	if sl := req.GetSlice(); sl != nil && (sl.GetMax() < 1 || sl.GetId() < 0 || sl.GetId() >= sl.GetMax()) {
		return fmt.Errorf("%w: slice id %d must be in [0, max %d)", shard.ErrInvalid, sl.GetId(), sl.GetMax())
	}
	next, err := decodeCursor(req.GetCursor())
	if err != nil {
		return err
	}
	ka := req.GetKeepAlive().AsDuration()
	var r *shard.PinnedReader
	if req.GetReaderId() != 0 {
		r, err = sh.Reader(req.GetReaderId(), ka)
	} else {
		// An unpinned scan reads the latest reader, for this stream only.
		if r, err = sh.PinReader(s.opts.SearchKeepAlive); err == nil {
			defer r.Unpin()
		}
	}
	if err != nil {
		return err
	}
	defer r.Done()

	var q search.Query
	var qkey []byte
	if pq := req.GetQuery(); pq != nil && pq.GetMatchAll() == nil && pq.Kind != nil {
		if q, err = (querydsl.Compiler{Mapping: sh.Mapping()}).Compile(pq); err != nil {
			return err
		}
		if qkey, err = (proto.MarshalOptions{Deterministic: true}).Marshal(pq); err != nil {
			return err
		}
	}
	sel, err := selectionFor(ctx, r, req.GetSlice(), q, qkey)
	if err != nil {
		return err
	}
	batch := int(req.GetBatchSize())
	if batch <= 0 {
		batch = defaultScanBatch
	}
	leaves := r.Reader().Leaves()
	resp := &nodev1.ShardScanResponse{Total: sel.Total}
	sent := false
	var sd index.StoredDoc
	for li := range leaves {
		base := leaves[li].DocBase
		bits := sel.Bits[li]
		if next >= base+bits.Len() {
			continue
		}
		var stored index.StoredFieldsReader
		for d := bits.NextSetBit(max(0, next-base)); d != index.NoMoreDocs; d = bits.NextSetBit(d + 1) {
			if stored == nil {
				stored = leaves[li].Reader.StoredFields()
			}
			if err := stored.Document(d, &sd); err != nil {
				return fmt.Errorf("shard %v: scan doc %d: %w", sh.ID(), base+d, err)
			}
			fd := &nodev1.FetchedDoc{Doc: int32(base + d), Id: string(sd.ID), Routing: string(sd.Routing)}
			if req.GetFetchSource() {
				fd.Source = append([]byte(nil), sd.Source...)
			}
			resp.Docs = append(resp.Docs, fd)
			next = base + d + 1
			if len(resp.Docs) == batch {
				resp.Cursor = encodeCursor(next)
				if err := stream.Send(resp); err != nil {
					return err
				}
				sent = true
				resp = &nodev1.ShardScanResponse{Total: sel.Total}
				// Keep the reader alive while a long scan streams.
				if ka > 0 {
					r.Touch(ka)
				}
			}
		}
	}
	if len(resp.Docs) > 0 || !sent {
		resp.Cursor = encodeCursor(max(next, r.Reader().MaxDoc()))
		return stream.Send(resp)
	}
	return nil
}
