package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ReadinessService is the gRPC health service name (Health.Check's
// service field) of the node's readiness: NOT_SERVING until every shard
// copy the node holds that can recover has recovered, then SERVING for the
// rest of the process's life (NOT_SERVING again once it shuts down). The
// empty service name stays the process's liveness: SERVING from Start,
// which the allocator's follower checks and a startup or liveness probe
// ask. The chart's readinessProbe asks this one, so a StatefulSet's
// rolling update moves to the next pod only once this one's copies are
// back.
//
// Waited for: each copy the routing table assigns to the node
// (INITIALIZING, or STARTED/NODE_LEFT from before the restart) until it is
// STARTED — a primary reopened from its commit and translog, a replica
// recovered from its primary and back in the in-sync set. Not waited for,
// since waiting could not end: a replica whose primary is not active (it
// has nothing to recover from: the shard is red, whatever this node
// does), a FAILED copy (its open failed; it is retried, 5 attempts at
// most, and shows in health), a relocation target (a move, not a
// restart). So readiness never blocks a rolling restart on what another
// node must fix, and has no time limit besides: a time limit would let the
// rollout stop the next node while this one still recovers, which is the
// red it exists to prevent. Once ready it stays ready: copies placed on
// the node later (a rebalance, a replica added) are the cluster's health,
// not the node's.
const ReadinessService = "sluice.node.ready"

// readinessLogEvery: how often a node that is not ready yet logs what it
// waits for.
const readinessLogEvery = 10 * time.Second

// notRecovered lists the copies on node that readiness waits for, as
// "index[shard] state" (ReadinessService says which).
func notRecovered(st *state.Snapshot, node string) []string {
	var out []string
	for _, x := range st.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue
			}
			c := state.CopyOnNode(sh.Routing, node)
			switch {
			case c == nil || c.GetRelocatingFrom() != "":
				continue
			case c.GetState() != sluicev1.ShardState_SHARD_STATE_INITIALIZING && c.GetState() != sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
				continue // started, failed or unassigned
			case !c.GetPrimary() && !st.Active(state.Primary(sh.Routing)):
				continue // nothing to recover from
			}
			out = append(out, fmt.Sprintf("%s[%d] %s", x.Name(), n, c.GetState()))
		}
	}
	slices.Sort(out)
	return out
}

// setReady sets the readiness service's status.
func (n *Node) setReady(ready bool) { n.grpc.SetHealth(ReadinessService, ready) }

// runReadiness follows the cluster state until the node is ready (its
// registration is in the state and notRecovered is empty), then marks
// ReadinessService SERVING and returns.
func (n *Node) runReadiness(ctx context.Context) {
	tick := time.NewTicker(readinessLogEvery)
	defer tick.Stop()
	start := time.Now()
	for {
		changed := n.cache.Changed()
		var waiting []string
		if st := n.cache.State(); st != nil && st.Live(n.id) {
			if waiting = notRecovered(st, n.id); len(waiting) == 0 {
				n.readyMu.Lock()
				if !n.shuttingDown.Load() && !n.stopped {
					n.setReady(true)
				}
				n.readyMu.Unlock()
				n.cfg.Logger.Info("node ready: its shard copies have recovered", "took", time.Since(start).Round(time.Millisecond))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
			n.cfg.Logger.Info("node not ready yet: waiting for shard copies to recover", "copies", len(waiting), "first", firstN(waiting, 5))
		}
	}
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }
