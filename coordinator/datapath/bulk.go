package datapath

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/fanout"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// admission says how a bulk waits for a node's in-flight budget.
type admission uint8

const (
	admitOrReject admission = iota // wait at most AdmissionWait (unary Bulk)
	admitBlocking                  // wait as long as ctx allows (BulkStream)
)

// shardGroup is the part of a bulk going to one shard.
type shardGroup struct {
	t     target
	pos   []int // item positions in the request
	items []*sluicev1.BulkItem
	bytes int64
}

// bulkResult is the outcome of a bulk call in the core.
type bulkResult struct {
	items   []*sluicev1.BulkItemResult
	touched []target // shards that applied something
	// overloaded counts items rejected by admission control, or refused
	// by an index's write block (its disk is full).
	overloaded int
}

// newID generates a document id: 20 URL-safe characters of randomness.
func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// bulk routes and applies items.
func (d *DataPath) bulk(ctx context.Context, defaultIndex string, items []*sluicev1.BulkItem, refresh sluicev1.RefreshPolicy, adm admission) (*bulkResult, error) {
	st, err := d.state(ctx)
	if err != nil {
		return nil, err
	}
	res := &bulkResult{items: make([]*sluicev1.BulkItemResult, len(items))}
	groups := map[target]*shardGroup{}
	fail := func(i int, err error) {
		res.items[i].Status, res.items[i].Error = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, d.opts.Errors.Detail(err)
	}
	for i, it := range items {
		name := it.GetIndex()
		if name == "" {
			name = defaultIndex
		}
		r := &sluicev1.BulkItemResult{Action: it.GetAction(), Index: name, Id: it.GetId(), Shard: -1}
		res.items[i] = r
		t, sent, err := d.routeItem(st, name, it)
		if err != nil {
			if errors.Is(err, state.ErrWriteBlocked) {
				res.overloaded++ // refused for now, as by admission
			}
			fail(i, err)
			continue
		}
		r.Index, r.Shard, r.Id = t.index, int32(t.shard), sent.GetId()
		g := groups[t]
		if g == nil {
			g = &shardGroup{t: t}
			groups[t] = g
		}
		g.pos = append(g.pos, i)
		g.items = append(g.items, sent)
		g.bytes += int64(len(sent.GetSource()) + len(sent.GetId()) + len(sent.GetRouting()) + 16)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, g := range groups {
		fanout.Go(&wg, func() {
			out, err := d.shardBulk(ctx, g, refresh, adm)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if errors.Is(err, ErrOverloaded) {
					res.overloaded += len(g.pos)
				}
				for _, p := range g.pos {
					fail(p, err)
				}
				return
			}
			res.touched = append(res.touched, g.t)
			for j, p := range g.pos {
				r := out[j]
				r.Index = g.t.index // the node knows names; the coordinator's view wins
				if e := r.GetError(); codes.Code(e.GetCode()) == codes.ResourceExhausted && e.GetRetryDelay() == nil {
					e.RetryDelay = durationpb.New(d.opts.RetryAfter)
				}
				res.items[p] = r
			}
		})
	}
	wg.Wait()
	return res, nil
}

// routeItem validates an item and finds its shard; the returned item has
// its id filled.
func (d *DataPath) routeItem(st *state.Snapshot, name string, it *sluicev1.BulkItem) (target, *sluicev1.BulkItem, error) {
	if name == "" {
		return target{}, nil, invalidf("item names no index and the request has no default index")
	}
	x, err := st.ResolveWrite(name)
	if err != nil {
		if verr := metadata.ValidateName("index", name); verr != nil {
			return target{}, nil, verr
		}
		return target{}, nil, err
	}
	if err := x.WriteBlocked(); err != nil {
		return target{}, nil, err
	}
	if err := checkID("_id", it.GetId()); err != nil {
		return target{}, nil, err
	}
	if err := checkID("routing", it.GetRouting()); err != nil {
		return target{}, nil, err
	}
	switch it.GetAction() {
	case sluicev1.BulkAction_BULK_ACTION_INDEX, sluicev1.BulkAction_BULK_ACTION_CREATE:
		if len(it.GetSource()) == 0 {
			return target{}, nil, invalidf("%v item needs a source", it.GetAction())
		}
		if it.GetId() == "" {
			it = &sluicev1.BulkItem{Action: it.GetAction(), Index: it.GetIndex(), Id: newID(), Source: it.GetSource(), Routing: it.GetRouting()}
		}
	case sluicev1.BulkAction_BULK_ACTION_DELETE:
		if it.GetId() == "" {
			return target{}, nil, invalidf("DELETE item needs an id")
		}
	case sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES:
		if it.GetId() == "" || len(it.GetSource()) == 0 {
			return target{}, nil, invalidf("UPDATE_DOC_VALUES item needs an id and the fields to set as its source")
		}
	case sluicev1.BulkAction_BULK_ACTION_UPDATE:
		if it.GetId() == "" || len(it.GetSource()) == 0 {
			return target{}, nil, invalidf("UPDATE item needs an id and the partial document as its source")
		}
	default:
		return target{}, nil, invalidf("item action must be INDEX, CREATE, DELETE, UPDATE_DOC_VALUES or UPDATE, got %v", it.GetAction())
	}
	if it.GetAction() != sluicev1.BulkAction_BULK_ACTION_UPDATE && (len(it.GetUpsert()) > 0 || it.GetDocAsUpsert()) {
		return target{}, nil, invalidf("upsert and doc_as_upsert are for UPDATE items, not %v", it.GetAction())
	}
	if err := checkConcurrency(it); err != nil {
		return target{}, nil, err
	}
	key := it.GetRouting()
	if key == "" {
		key = it.GetId()
	}
	t, err := shardTarget(st, x, routing.Shard(key, params(x)))
	return t, it, err
}

// shardBulk sends one group to its shard's node within the node's budget,
// following the shard if it moved.
func (d *DataPath) shardBulk(ctx context.Context, g *shardGroup, refresh sluicev1.RefreshPolicy, adm admission) ([]*sluicev1.BulkItemResult, error) {
	t := g.t
	deadline := time.Now().Add(d.opts.RoutingWait)
	for {
		out, err := d.sendGroup(ctx, t, g, refresh, adm)
		if !notHere(err) || time.Now().After(deadline) {
			return out, err
		}
		// The routing moved (or the node restarted): wait for the state
		// to show the shard open somewhere, then retry there.
		if t, err = d.awaitShard(ctx, t, deadline); err != nil {
			return nil, err
		}
	}
}

func (d *DataPath) sendGroup(ctx context.Context, t target, g *shardGroup, refresh sluicev1.RefreshPolicy, adm admission) ([]*sluicev1.BulkItemResult, error) {
	b := d.budget(t.node)
	r, err := b.Reserve(ctx, g.bytes, d.admissionWait(adm))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("[%s][%d] on node %s: %w: %d bytes of bulk requests in flight to the node (budget %d); retry after backoff",
			t.index, t.shard, t.node, ErrOverloaded, b.Used(), b.Limit())
	}
	defer r.Release()
	c, err := d.nodes.Client(t.node)
	if err != nil {
		return nil, fmt.Errorf("[%s][%d]: %w: %v", t.index, t.shard, ErrUnavailable, err)
	}
	resp, err := c.ShardBulk(ctx, &nodev1.ShardBulkRequest{Shard: t.id(), Index: t.index, Items: g.items, Refresh: refresh})
	if err != nil {
		return nil, fmt.Errorf("[%s][%d] on node %s: %w", t.index, t.shard, t.node, err)
	}
	if len(resp.GetItems()) != len(g.items) {
		return nil, fmt.Errorf("[%s][%d] on node %s: %d results for %d items", t.index, t.shard, t.node, len(resp.GetItems()), len(g.items))
	}
	return resp.GetItems(), nil
}

// admissionWait is how long a bulk waits for room in a node's budget: at
// most AdmissionWait (unary), or as long as ctx allows (stream).
func (d *DataPath) admissionWait(adm admission) time.Duration {
	if adm == admitOrReject {
		return d.opts.AdmissionWait
	}
	return -1
}

// notHere reports a node's NOT_FOUND "shard not open here", or a node that
// cannot be reached: the shard may be opening elsewhere or restarting. A
// node that refuses our TLS certificate (or we its) is not waited for:
// that lasts until someone changes certificates.
func notHere(err error) bool {
	if err == nil || tlsconf.Refused(err) {
		return false
	}
	s, ok := status.FromError(err)
	return ok && (s.Code() == codes.NotFound || s.Code() == codes.Unavailable) || errors.Is(err, ErrUnavailable)
}

// awaitShard waits until the cluster state shows shard t started on a live
// node, and returns where.
func (d *DataPath) awaitShard(ctx context.Context, t target, deadline time.Time) (target, error) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var found target
	var lastErr error
	// A short pause first: the routing may not have changed yet.
	select {
	case <-wctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
	_, err := d.cache.WaitFor(wctx, func(st *state.Snapshot) bool {
		x, ok := st.ByUUID[t.uuid]
		if !ok {
			lastErr = fmt.Errorf("index [%s]: %w", t.index, state.ErrNotFound)
			return true
		}
		found, lastErr = shardTarget(st, x, t.shard)
		return lastErr == nil
	})
	if lastErr != nil {
		return t, lastErr
	}
	if err != nil {
		return t, fmt.Errorf("[%s][%d]: %w: %v", t.index, t.shard, ErrUnavailable, err)
	}
	found.pos = t.pos
	return found, nil
}

// Bulk applies a bulk request.
func (d *DataPath) Bulk(ctx context.Context, req *sluicev1.BulkRequest) (*sluicev1.BulkResponse, error) {
	start := time.Now()
	if err := checkTimeout("timeout", req.GetTimeout()); err != nil {
		return nil, err
	}
	if len(req.GetItems()) == 0 {
		return nil, invalidField("items", "at least one item is required")
	}
	timeout := d.opts.BulkTimeout
	if t := req.GetTimeout(); t != nil && t.AsDuration() > 0 {
		timeout = t.AsDuration()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The request is decoded already: hold its bytes against the
	// coordinator's budget, or refuse it at once, so that under overload
	// clients back off instead of piling requests up here.
	held, err := d.holdBulk(ctx, int64(proto.Size(req)), 0)
	if err != nil {
		return nil, err
	}
	defer held.Release()
	res, err := d.bulk(ctx, req.GetIndex(), req.GetItems(), req.GetRefresh(), admitOrReject)
	if err != nil {
		return nil, err
	}
	if res.overloaded > 0 && res.overloaded == len(req.GetItems()) {
		// Nothing was applied: reject the call as a whole.
		return nil, fmt.Errorf("%w: no item of the bulk was admitted: %s", ErrOverloaded, res.items[0].GetError().GetReason())
	}
	resp := &sluicev1.BulkResponse{Items: res.items, Took: durationpb.New(time.Since(start))}
	for _, r := range res.items {
		if r.Status == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR {
			resp.Errors = true
			break
		}
	}
	return resp, nil
}

// bulkOverloaded is the error of a bulk the coordinator's budget had no
// room for.
func (d *DataPath) bulkOverloaded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %d bytes of bulk requests in flight on this coordinator (budget %d); retry after backoff",
		ErrOverloaded, d.bulkBytes.Used(), d.bulkBytes.Limit())
}

// maxStreamFailures bounds the failures a BulkStream lists.
const maxStreamFailures = 1000

// BulkStream applies a client-streamed bulk load: recv returns the
// stream's requests in turn, io.EOF after the last.
func (d *DataPath) BulkStream(ctx context.Context, recv func() (*sluicev1.BulkStreamRequest, error)) (*sluicev1.BulkStreamResponse, error) {
	start := time.Now()
	out := &sluicev1.BulkStreamResponse{}
	var index string
	var refresh sluicev1.RefreshPolicy
	touched := map[target]bool{}
	// The stream's batches are held against the coordinator's budget: room
	// for one more before reading it (the largest request first, then as
	// much as the last batch), so a full budget leaves batches in the
	// client and gRPC flow control pushes back; then exactly its size
	// while it is applied.
	next := d.opts.MaxRequestBytes()
	held, err := d.holdBulk(ctx, next, -1)
	if err != nil {
		return nil, err
	}
	defer held.Release()
	for first := true; ; first = false {
		if err := held.Resize(ctx, next, -1); err != nil {
			return nil, d.bulkOverloaded(ctx, err)
		}
		req, err := recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		next = int64(proto.Size(req))
		if err := held.Resize(ctx, next, -1); err != nil {
			return nil, d.bulkOverloaded(ctx, err)
		}
		if first {
			index, refresh = req.GetIndex(), req.GetRefresh()
		}
		res, err := d.bulk(ctx, index, req.GetItems(), sluicev1.RefreshPolicy_REFRESH_POLICY_NONE, admitBlocking)
		if err != nil {
			return nil, err
		}
		for _, t := range res.touched {
			touched[t] = true
		}
		for _, r := range res.items {
			switch r.Status {
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED:
				out.Created++
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED:
				out.Updated++
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED:
				out.Deleted++
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND:
				out.NotFound++
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP:
				out.Noop++
			default:
				out.Failed++
				if len(out.Failures) < maxStreamFailures {
					out.Failures = append(out.Failures, &sluicev1.BulkStreamFailure{Position: out.Total, Result: r})
				}
			}
			out.Total++
		}
	}
	held.Release()
	if refresh == sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE || refresh == sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR {
		ts := make([]target, 0, len(touched))
		for t := range touched {
			ts = append(ts, t)
		}
		if fails := d.refreshShards(ctx, ts); len(fails) > 0 {
			return nil, fmt.Errorf("%w: refresh at the end of the stream failed on %d shards: %s", ErrUnavailable, len(fails), fails[0].GetError().GetReason())
		}
	}
	out.Took = durationpb.New(time.Since(start))
	return out, nil
}
