package datapath

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// Adaptive replica selection (Elasticsearch's ARS, after the C3 paper):
// a read of a shard goes to the copy whose node ranks best by what this
// coordinator has seen of it — an exponentially weighted moving average of
// its response time, times the cube of its outstanding requests (1 + the
// requests this coordinator has in flight to it), so a node that slows down
// or piles up work is avoided long before it fails. A node never measured
// ranks first (it gets measured); after each choice the nodes not chosen
// move halfway towards the winner's average, as Elasticsearch adjusts
// them, so a node that was slow once is tried again rather than starved.

// arsAlpha weighs a new response time in the average (Elasticsearch's 0.3).
const arsAlpha = 0.3

// replicaSelector keeps the per-node statistics.
type replicaSelector struct {
	mu    sync.Mutex
	nodes map[string]*nodeStats
}

type nodeStats struct {
	ewma        float64 // nanoseconds; 0: never measured
	outstanding int
}

func newReplicaSelector() *replicaSelector {
	return &replicaSelector{nodes: map[string]*nodeStats{}}
}

func (s *replicaSelector) stats(node string) *nodeStats {
	st := s.nodes[node]
	if st == nil {
		st = &nodeStats{}
		s.nodes[node] = st
	}
	return st
}

// rank is a node's C3 score; lower is better.
func (st *nodeStats) rank() float64 {
	q := float64(1 + st.outstanding)
	return st.ewma * q * q * q
}

// order returns nodes best first (ties keep their order, the primary
// first) and lets the losers catch up with the winner.
func (s *replicaSelector) order(nodes []string) []string {
	out := slices.Clone(nodes)
	if len(out) < 2 {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(s.stats(a).rank(), s.stats(b).rank()) })
	win := s.stats(out[0]).ewma
	for _, n := range out[1:] {
		if st := s.stats(n); st.ewma > win {
			st.ewma = (st.ewma + win) / 2
		}
	}
	return out
}

// arsFailure is the response time a failed request counts as: a copy
// whose node fails drops to the end of the order, and comes back only as
// the winners' averages pull it up again.
const arsFailure = time.Second

// begin counts a request to node as outstanding; the returned func ends
// it: its response time goes into the average — arsFailure at least if it
// failed in a way another copy might not (a failure of the request itself
// says nothing about the node).
func (s *replicaSelector) begin(ctx context.Context, node string) func(err error) {
	start := time.Now()
	s.mu.Lock()
	s.stats(node).outstanding++
	s.mu.Unlock()
	return func(err error) {
		d := float64(time.Since(start))
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.stats(node)
		st.outstanding--
		switch {
		case err == nil:
		case retryable(ctx, err):
			d = max(d, float64(arsFailure))
		default:
			return
		}
		if st.ewma == 0 {
			st.ewma = math.Max(d, 1)
		} else {
			st.ewma = arsAlpha*d + (1-arsAlpha)*st.ewma
		}
	}
}

// onCopies runs fn against the copies of t's shard in ARS order until one
// succeeds, and leaves t.node where it ran: a copy that fails (its node
// gone, the shard not open there, overloaded) is retried on the next. A
// failure no copy would answer differently — an invalid request, the
// caller's context ending — is not retried. When every copy failed because
// the shard is not open where the routing said (it moved, or its node
// restarted), it waits for the routing to show it open again and follows
// it (onShard).
func (d *DataPath) onCopies(ctx context.Context, t *searchTarget, fn func(nodev1.NodeClient) error) error {
	var last error
	for _, node := range d.ars.order(t.copies) {
		t.node = node
		done := d.ars.begin(ctx, node)
		c, err := d.nodes.Client(node)
		if err == nil {
			err = fn(c)
		} else {
			err = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		done(err)
		if err == nil {
			return nil
		}
		last = fmt.Errorf("[%s][%d] on node %s: %w", t.index, t.shard, node, err)
		if !retryable(ctx, err) {
			return last
		}
	}
	if last == nil {
		return fmt.Errorf("[%s][%d]: %w: no started copy", t.index, t.shard, ErrUnavailable)
	}
	if !notHere(last) {
		return last
	}
	nt, err := d.awaitShard(ctx, t.target, time.Now().Add(d.opts.RoutingWait))
	if err != nil {
		return errors.Join(last, err)
	}
	t.target = nt
	return d.onShard(ctx, &t.target, fn)
}

// retryable says whether a shard request that failed with err may succeed
// on another copy (not a TLS refusal: every copy's node refuses alike).
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrInvalid) || tlsconf.Refused(err) {
		return false
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Canceled, codes.OutOfRange, codes.Unimplemented:
		return false
	}
	return true
}
