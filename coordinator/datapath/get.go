package datapath

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-search/sluice/cluster/fanout"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Get reads a document by id.
func (d *DataPath) Get(ctx context.Context, req *sluicev1.GetRequest) (*sluicev1.GetResponse, error) {
	if req.GetId() == "" {
		return nil, invalidField("id", "is required")
	}
	if err := checkID("id", req.GetId()); err != nil {
		return nil, err
	}
	if err := checkID("routing", req.GetRouting()); err != nil {
		return nil, err
	}
	st, err := d.state(ctx)
	if err != nil {
		return nil, err
	}
	x, err := st.ResolveOne(req.GetIndex())
	if err != nil {
		return nil, err
	}
	key := req.GetRouting()
	if key == "" {
		key = req.GetId()
	}
	t, err := shardTarget(st, x, routing.Shard(key, params(x)))
	if err != nil {
		return nil, err
	}
	var resp *nodev1.ShardGetResponse
	err = d.onShard(ctx, &t, func(c nodev1.NodeClient) (err error) {
		resp, err = c.ShardGet(ctx, &nodev1.ShardGetRequest{Shard: t.id(), Id: req.GetId(), Refresh: req.GetRefresh()})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sluicev1.GetResponse{Found: resp.GetFound(), Index: x.Name(), Id: req.GetId(), Source: resp.GetSource(), Routing: resp.GetRouting(),
		SeqNo: resp.GetSeqNo(), PrimaryTerm: resp.GetPrimaryTerm()}, nil
}

// onShard calls fn with the client of t's node, following the shard for a
// while if it is not open there; t is updated to where it ran.
func (d *DataPath) onShard(ctx context.Context, t *target, fn func(nodev1.NodeClient) error) error {
	deadline := time.Now().Add(d.opts.RoutingWait)
	for {
		c, err := d.nodes.Client(t.node)
		if err == nil {
			err = fn(c)
		} else {
			err = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if err == nil {
			return nil
		}
		if !notHere(err) || time.Now().After(deadline) {
			return fmt.Errorf("[%s][%d] on node %s: %w", t.index, t.shard, t.node, err)
		}
		nt, werr := d.awaitShard(ctx, *t, deadline)
		if werr != nil {
			return errors.Join(fmt.Errorf("[%s][%d] on node %s: %w", t.index, t.shard, t.node, err), werr)
		}
		*t = nt
	}
}

// Refresh refreshes the shards of indices.
func (d *DataPath) Refresh(ctx context.Context, req *sluicev1.RefreshRequest) (*sluicev1.RefreshResponse, error) {
	st, err := d.state(ctx)
	if err != nil {
		return nil, err
	}
	xs, err := resolve(st, req.GetIndices())
	if err != nil {
		return nil, err
	}
	ts, unstarted := d.allShards(st, xs)
	fails := append(unstarted, d.refreshShards(ctx, ts)...)
	return &sluicev1.RefreshResponse{Shards: summary(len(ts)+len(unstarted), fails)}, nil
}

// refreshShards refreshes shards concurrently and returns the failures.
func (d *DataPath) refreshShards(ctx context.Context, ts []target) []*sluicev1.ShardFailure {
	var mu sync.Mutex
	var fails []*sluicev1.ShardFailure
	var wg sync.WaitGroup
	for _, t := range ts {
		fanout.Go(&wg, func() {
			err := d.onShard(ctx, &t, func(c nodev1.NodeClient) error {
				_, err := c.ShardRefresh(ctx, &nodev1.ShardRefreshRequest{Shard: t.id()})
				return err
			})
			if err != nil {
				mu.Lock()
				fails = append(fails, d.shardFailure(t, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return fails
}

// IndexStats fills document counts and sizes from the shards' stats.
func (d *DataPath) IndexStats(ctx context.Context, infos []*sluicev1.IndexInfo) error {
	st, err := d.state(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, info := range infos {
		x, ok := st.ByUUID[info.GetUuid()]
		if !ok {
			continue
		}
		info.DocsCount, info.StoreSizeBytes = 0, 0
		ts, _ := d.allShards(st, []*state.Index{x}) // shards not started add nothing
		for _, t := range ts {
			fanout.Go(&wg, func() {
				var s *nodev1.ShardStatsResponse
				err := d.onShard(ctx, &t, func(c nodev1.NodeClient) (err error) {
					s, err = c.ShardStats(ctx, &nodev1.ShardStatsRequest{Shard: t.id()})
					return err
				})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				info.DocsCount += s.GetNumDocs()
				info.StoreSizeBytes += s.GetStoreSizeBytes()
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
