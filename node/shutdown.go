package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DefaultShutdownTimeout bounds how long Shutdown waits for the node's
// primaries to be handed off (`sluice node --shutdown-timeout`).
const DefaultShutdownTimeout = 30 * time.Second

// shutdownReadGrace: how long Shutdown keeps serving after the cluster
// state shows the node shutting down, at least. Coordinators, which watch
// the same state, send its copies no new reads from then on, and a search
// already under way gets to its fetch phase, which goes to the copy its
// query phase searched.
var shutdownReadGrace = time.Second // a variable for tests

// Shutdown stops the node gracefully, as on SIGTERM: it reports not ready,
// opens no more shards, and registers shutting_down, upon which the
// allocator hands each of its primaries to an in-sync replica on another
// node (term + 1; coordinator/allocator's shutdown.go) and coordinators
// stop sending it reads. It waits until it holds no primary that another
// copy could take — none with an in-sync replica active elsewhere, nor
// one recovering that may join the in-sync set — or timeout, then Stop
// (commit and close every shard, deregister). A primary with no other
// copy (number_of_replicas 0) is just committed and closed, as before;
// the node's replicas stay where they are, for it to reopen when it is
// back. timeout <= 0 stops at once.
func (n *Node) Shutdown(timeout time.Duration) {
	if timeout > 0 && n.cancel != nil {
		n.readyMu.Lock()
		n.shuttingDown.Store(true)
		n.setReady(false)
		n.readyMu.Unlock()
		n.routing.holdOpens()
		n.reg.Refresh()
		n.awaitHandOff(timeout)
	}
	n.Stop()
}

// awaitHandOff waits until the cluster state shows the node shutting down
// and none of its primaries waiting for a hand-off (handOffPending), and
// shutdownReadGrace has passed since it showed the mark, or until timeout.
func (n *Node) awaitHandOff(timeout time.Duration) {
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(shutdownReadGrace)
	defer tick.Stop()
	var marked time.Time
	var pending []string
	logged := false
	for {
		changed := n.cache.Changed()
		if st := n.cache.State(); st != nil && st.ShuttingDown(n.id) {
			if marked.IsZero() {
				marked = time.Now()
			}
			if pending = handOffPending(st, n.id); len(pending) == 0 && time.Since(marked) >= shutdownReadGrace {
				n.cfg.Logger.Info("shutting down: no primary left to hand off", "took", time.Since(start).Round(time.Millisecond))
				return
			} else if len(pending) > 0 && !logged {
				n.cfg.Logger.Info("shutting down: handing primaries to in-sync replicas", "primaries", len(pending), "first", firstN(pending, 5), "timeout", timeout)
				logged = true
			}
		}
		select {
		case <-deadline.C:
			n.cfg.Logger.Warn("shutting down: primaries not handed off within the shutdown timeout; closing them", "timeout", timeout, "primaries", pending)
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// handOffPending lists the node's active primaries that the allocator
// hands, or may soon hand, to another copy: one with an in-sync replica
// started on another node that is not shutting down, or with a replica
// recovering on such a node (it may join the in-sync set; the primary is
// what it recovers from).
func handOffPending(st *state.Snapshot, node string) []string {
	var out []string
	for _, x := range st.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue
			}
			r := sh.Routing
			p := state.Primary(r)
			if p.GetNodeId() != node || !state.Started(p) {
				continue
			}
			if slices.ContainsFunc(r.GetCopies(), func(c *statev1.ShardCopy) bool {
				if c.GetPrimary() || !st.Live(c.GetNodeId()) || st.ShuttingDown(c.GetNodeId()) {
					return false
				}
				return st.Active(c) && state.InSync(r, c.GetAllocationId()) || c.GetState() == sluicev1.ShardState_SHARD_STATE_INITIALIZING
			}) {
				out = append(out, fmt.Sprintf("%s[%d]", x.Name(), n))
			}
		}
	}
	slices.Sort(out)
	return out
}
