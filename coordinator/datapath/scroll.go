package datapath

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// sliceShard is one shard a scroll slice reads, with the sub-slice of its
// documents (nil: all).
type sliceShard struct {
	pit pitShard
	sub *sluicev1.Slice
}

// sliceShards picks the shards (and sub-slices) of slice sl over n shards,
// as Elasticsearch's SliceBuilder: disjoint and together complete.
func sliceShards(ps []pitShard, sl *sluicev1.Slice) ([]sliceShard, error) {
	n := len(ps)
	if sl == nil {
		out := make([]sliceShard, n)
		for i, p := range ps {
			out[i] = sliceShard{pit: p}
		}
		return out, nil
	}
	if err := checkSlice(sl); err != nil {
		return nil, err
	}
	id, max := int(sl.GetId()), int(sl.GetMax())
	if max <= n {
		var out []sliceShard
		for j := id; j < n; j += max {
			out = append(out, sliceShard{pit: ps[j]})
		}
		return out, nil
	}
	j := id % n
	inShard := max / n
	if j < max%n {
		inShard++
	}
	if inShard == 1 {
		return []sliceShard{{pit: ps[j]}}, nil
	}
	return []sliceShard{{pit: ps[j], sub: &sluicev1.Slice{Id: int32(id / n), Max: int32(inShard)}}}, nil
}

// scrollCursor is where a scroll stands: the PIT it opened for itself (if
// any), the slice's total, the position in its shard list and the shard's
// own scan cursor.
type scrollCursor struct {
	ownPIT string
	total  int64
	pos    int
	shard  []byte
}

const scrollCursorVersion = 1

func (c scrollCursor) encode() []byte {
	b := []byte{scrollCursorVersion}
	b = binary.AppendUvarint(b, uint64(len(c.ownPIT)))
	b = append(b, c.ownPIT...)
	b = binary.AppendVarint(b, c.total)
	b = binary.AppendUvarint(b, uint64(c.pos))
	b = binary.AppendUvarint(b, uint64(len(c.shard)))
	return append(b, c.shard...)
}

func decodeScrollCursor(b []byte) (scrollCursor, error) {
	bad := invalidf("scroll cursor is malformed")
	var c scrollCursor
	if len(b) < 1 || b[0] != scrollCursorVersion {
		return c, bad
	}
	b = b[1:]
	str := func() ([]byte, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, false
		}
		s := b[n : n+int(l)]
		b = b[n+int(l):]
		return s, true
	}
	pit, ok := str()
	if !ok {
		return c, bad
	}
	total, n := binary.Varint(b)
	if n <= 0 {
		return c, bad
	}
	b = b[n:]
	pos, n := binary.Uvarint(b)
	if n <= 0 || pos > 1<<20 {
		return c, bad
	}
	b = b[n:]
	shard, ok := str()
	if !ok || len(b) != 0 {
		return c, bad
	}
	return scrollCursor{ownPIT: string(pit), total: total, pos: int(pos), shard: shard}, nil
}

// Scroll streams the documents of a scroll to send, batch by batch.
func (d *DataPath) Scroll(ctx context.Context, req *sluicev1.ScrollRequest, send func(*sluicev1.ScrollResponse) error) error {
	var cur scrollCursor
	resumed := len(req.GetCursor()) > 0
	if resumed {
		var err error
		if cur, err = decodeScrollCursor(req.GetCursor()); err != nil {
			return err
		}
	}
	if err := checkScroll(req); err != nil {
		return err
	}
	pitID, keepAlive := req.GetPit().GetId(), req.GetPit().GetKeepAlive().AsDuration()
	switch {
	case pitID != "":
		cur.ownPIT = ""
	case cur.ownPIT != "":
		pitID, keepAlive = cur.ownPIT, d.opts.ScrollKeepAlive
	default:
		id, _, err := d.openPIT(ctx, req.GetIndices(), d.opts.ScrollKeepAlive)
		if err != nil {
			return err
		}
		pitID, cur.ownPIT, keepAlive = id, id, d.opts.ScrollKeepAlive
	}
	done := false
	if cur.ownPIT != "" {
		defer func() {
			// A broken stream keeps our PIT (until its keep-alive) for a
			// resume. A finished one closes it after a grace period: the
			// server may have sent the end before the client, reading
			// behind, broke off and resumes from an earlier cursor.
			if done {
				own := cur.ownPIT
				time.AfterFunc(d.opts.ScrollResumeGrace, func() {
					cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_, _ = d.closePIT(cctx, own)
				})
			}
		}()
	}
	ps, err := decodePIT(pitID)
	if err != nil {
		return err
	}
	shards, err := sliceShards(ps, req.GetSlice())
	if err != nil {
		done = true
		return err
	}
	st, err := d.state(ctx)
	if err != nil {
		return err
	}
	ts := make([]searchTarget, len(ps))
	for i, p := range ps {
		ts[i] = searchTarget{target: target{uuid: p.uuid}}
	}
	if err := validate(st, ts, req.GetQuery(), nil, nil); err != nil {
		done = true
		return err
	}
	sc := &scanner{d: d, req: req, keepAlive: keepAlive}
	// Open every remaining shard's scan first: their first batches carry
	// the totals the first message reports.
	streams := make([]*shardScan, len(shards))
	for i := cur.pos; i < len(shards); i++ {
		var shardCur []byte
		if i == cur.pos {
			shardCur = cur.shard
		}
		if streams[i], err = sc.open(ctx, shards[i], shardCur); err != nil {
			return err
		}
		if !resumed {
			cur.total += streams[i].first.GetTotal()
		}
	}
	sent := false
	for i := cur.pos; i < len(shards); i++ {
		s := streams[i]
		for r := s.first; r != nil; r, err = s.next() {
			if len(r.GetDocs()) == 0 {
				continue
			}
			out := &sluicev1.ScrollResponse{Total: cur.total, Docs: make([]*sluicev1.ScrollDoc, len(r.GetDocs()))}
			var n int64
			for k, doc := range r.GetDocs() {
				out.Docs[k] = &sluicev1.ScrollDoc{Index: s.shard.pit.index, Id: doc.GetId(), Source: doc.GetSource(), Routing: doc.GetRouting()}
				n += docBytes(doc.GetId(), doc.GetRouting(), doc.GetSource())
			}
			cur.pos, cur.shard = i, r.GetCursor()
			out.Cursor = cur.encode()
			// Each batch is held against the search budget until gRPC
			// has it; a stream broken here resumes from the last cursor.
			held := d.holdSearch("batch_size")
			if err := held.add(ctx, n); err != nil {
				return err
			}
			err := send(out)
			held.release()
			if err != nil {
				return err
			}
			sent = true
		}
		if err != nil {
			return err
		}
	}
	done = true
	if !sent {
		cur.pos, cur.shard = len(shards), nil
		return send(&sluicev1.ScrollResponse{Total: cur.total, Cursor: cur.encode()})
	}
	return nil
}

// scanner opens shard scans for one scroll.
type scanner struct {
	d         *DataPath
	req       *sluicev1.ScrollRequest
	keepAlive time.Duration
}

// shardScan is an open ShardScan stream with its first batch read.
type shardScan struct {
	shard  sliceShard
	stream grpc.ServerStreamingClient[nodev1.ShardScanResponse]
	first  *nodev1.ShardScanResponse
}

func (s *scanner) open(ctx context.Context, sh sliceShard, cursor []byte) (*shardScan, error) {
	c, err := s.d.nodes.Client(sh.pit.node)
	if err != nil {
		return nil, fmt.Errorf("[%s][%d]: %w: %v", sh.pit.index, sh.pit.shard, ErrUnavailable, err)
	}
	batch := s.req.GetBatchSize()
	if batch <= 0 {
		batch = 1000
	}
	stream, err := c.ShardScan(ctx, &nodev1.ShardScanRequest{
		Shard: &nodev1.ShardID{IndexUuid: sh.pit.uuid, Shard: int32(sh.pit.shard)}, ReaderId: sh.pit.reader,
		Query: s.req.GetQuery(), Slice: sh.sub, BatchSize: batch, Cursor: cursor,
		FetchSource: s.req.FetchSource == nil || s.req.GetFetchSource(), KeepAlive: durationpb.New(s.keepAlive)})
	if err != nil {
		return nil, fmt.Errorf("[%s][%d] on node %s: %w", sh.pit.index, sh.pit.shard, sh.pit.node, err)
	}
	ss := &shardScan{shard: sh, stream: stream}
	if ss.first, err = ss.next(); err != nil {
		return nil, err
	}
	if ss.first == nil {
		ss.first = &nodev1.ShardScanResponse{}
	}
	return ss, nil
}

// next returns the next batch, or nil at the end.
func (s *shardScan) next() (*nodev1.ShardScanResponse, error) {
	r, err := s.stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("[%s][%d] on node %s: %w", s.shard.pit.index, s.shard.pit.shard, s.shard.pit.node, err)
	}
	return r, nil
}
