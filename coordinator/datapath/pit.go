package datapath

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/fanout"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// OpenPointInTime pins a reader on every shard of indices.
func (d *DataPath) OpenPointInTime(ctx context.Context, req *sluicev1.OpenPointInTimeRequest) (*sluicev1.OpenPointInTimeResponse, error) {
	ka := req.GetKeepAlive().AsDuration()
	if ka <= 0 {
		return nil, invalidField("keep_alive", "is required and must be positive")
	}
	if err := checkKeepAlive("keep_alive", req.GetKeepAlive()); err != nil {
		return nil, err
	}
	id, n, err := d.openPIT(ctx, req.GetIndices(), ka)
	if err != nil {
		return nil, err
	}
	return &sluicev1.OpenPointInTimeResponse{Id: id, Shards: summary(n, nil)}, nil
}

// openPIT pins a reader on every shard of the indices; all or nothing.
func (d *DataPath) openPIT(ctx context.Context, indices []string, keepAlive time.Duration) (string, int, error) {
	if len(indices) == 0 {
		return "", 0, invalidf("indices: at least one index is required")
	}
	st, err := d.state(ctx)
	if err != nil {
		return "", 0, err
	}
	xs, err := resolve(st, indices)
	if err != nil {
		return "", 0, err
	}
	ts, unstarted := d.readShards(st, xs)
	if len(unstarted) > 0 {
		return "", 0, fmt.Errorf("%w: cannot pin [%s][%d]: %s", ErrUnavailable, unstarted[0].GetIndex(), unstarted[0].GetShard(), unstarted[0].GetError().GetReason())
	}
	ps := make([]pitShard, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		fanout.Go(&wg, func() {
			var resp *nodev1.OpenShardReaderResponse
			errs[i] = d.onCopies(ctx, &t, func(c nodev1.NodeClient) (err error) {
				resp, err = c.OpenShardReader(ctx, &nodev1.OpenShardReaderRequest{Shard: t.id(), KeepAlive: durationpb.New(keepAlive)})
				return err
			})
			if errs[i] == nil {
				ps[i] = pitShard{index: t.index, uuid: t.uuid, node: t.node, shard: t.shard, reader: resp.GetReaderId()}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, p := range ps {
				d.release(p.node, p.reader)
			}
			return "", 0, err
		}
	}
	return encodePIT(ps), len(ps), nil
}

// ClosePointInTime releases the readers of a point-in-time.
func (d *DataPath) ClosePointInTime(ctx context.Context, req *sluicev1.ClosePointInTimeRequest) (*sluicev1.ClosePointInTimeResponse, error) {
	ok, err := d.closePIT(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &sluicev1.ClosePointInTimeResponse{Succeeded: ok}, nil
}

// closePIT releases every reader of a PIT; ok if any was still open.
func (d *DataPath) closePIT(ctx context.Context, id string) (bool, error) {
	ps, err := decodePIT(id)
	if err != nil {
		return false, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	any := false
	for _, p := range ps {
		fanout.Go(&wg, func() {
			c, err := d.nodes.Client(p.node)
			if err != nil {
				return // the node is gone, and its readers with it
			}
			resp, err := c.CloseShardReader(ctx, &nodev1.CloseShardReaderRequest{Shard: &nodev1.ShardID{IndexUuid: p.uuid, Shard: int32(p.shard)}, ReaderId: p.reader})
			if err == nil && resp.GetSucceeded() {
				mu.Lock()
				any = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return any, nil
}
