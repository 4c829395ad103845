package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The moves suite runs a cluster of its own (three data nodes on
// loopback, an index of 4 shards with replicas=1) so the copy counts it
// checks are its own. With a writer and a searcher running it adds a 4th
// node and waits for the allocator to rebalance copies onto it, then
// drains a node (`sluice node drain --wait`) until it holds nothing. Each
// time every acknowledged write is there, no search reported a failure,
// at most the allowed number of moves ran at once, and the moves were
// visible in the cluster state and in health (in the CLI when it
// answered before they ended: reported, not required).
var _ = Describe("moving shard copies under load", Ordered, func() {
	const index = "moving"
	var (
		lc  *cluster
		lcl *client.Client
	)
	BeforeAll(func() {
		dir := filepath.Join(c.dir, "moves")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		// Recovery throttled, as on m4 below, so that a drain's moves
		// last long enough for the CLI to be seen showing one: since
		// replicas fetch 2 files at a time, unthrottled moves of this
		// small index ended before `sluice state` or `sluice health`
		// answered (2 runs of 2).
		lc = labCluster(dir, nil, []string{"m1", "m2", "m3"}, "--recovery-max-bytes-per-sec", "256KiB")
		lcl = lc.dial("coord-a")
		DeferCleanup(func() { lcl.Close() })
		labCreateIndex(lcl, index, 4, 1)
	})

	It("rebalances copies onto a 4th node, a bounded number at a time, losing nothing", func() {
		w, s, o := startWriter(lcl, index, "join", 2, nil), startSearcher(lcl, index), watchMoves(lc, lcl)
		Eventually(w.h.n.Load, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 400))

		// Recovery throttled on the new node so a move lasts long enough
		// for the CLI to be seen showing it.
		m4 := &proc{name: "m4", bin: lc.sluice, log: filepath.Join(lc.dir, "m4.log"), args: []string{"node",
			"--etcd", lc.etcdURL, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort()), "--data-dir", filepath.Join(lc.dir, "m4"),
			"--node-id", "m4", "--log-level", "info", "--replication-timeout", "5s", "--recovery-max-bytes-per-sec", "256KiB"}}
		m4.start()
		lc.nodes = append(lc.nodes, m4)
		// 8 copies over 4 nodes: 2 each once balanced (rebalancing moves
		// primaries and replicas alike).
		Eventually(func() []int {
			return copiesPerNode(lc, index, "m1", "m2", "m3", "m4")
		}, 90*time.Second, 250*time.Millisecond).Should(Equal([]int{2, 2, 2, 2}))
		labWaitGreen(lcl, index, 60*time.Second)
		checkMoved(w, s, o, lcl, index)
		checkCopies(lc, lcl, index, dialDirect)
	})

	// drain drains node under load with `sluice node drain --wait`, checks
	// it ends empty (in the routing and on its disk) and nothing was lost,
	// and stops it.
	drain := func(node string) {
		w, s, o := startWriter(lcl, index, "drain-"+node, 2, nil), startSearcher(lcl, index), watchMoves(lc, lcl)
		Eventually(w.h.n.Load, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 400))
		out, err := lc.cli("coord-a", "node", "drain", node, "--wait", "--wait-timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("node " + node + " holds no shard copies"))
		Expect(copiesPerNode(lc, index, node)).To(Equal([]int{0}))
		labWaitGreen(lcl, index, 60*time.Second)
		// Its disk holds no shard data: each moved copy was deleted once
		// its shard was fully active elsewhere.
		Eventually(func() ([]string, error) {
			return filepath.Glob(filepath.Join(lc.dir, node, "*", "[0-9]*"))
		}, 30*time.Second, 100*time.Millisecond).Should(BeEmpty())
		checkMoved(w, s, o, lcl, index)
		checkCopies(lc, lcl, index, dialDirect)
		// Empty, the node may go: the index stays green without it.
		lc.proc(node).kill(syscall.SIGTERM)
		labWaitGreen(lcl, index, 30*time.Second)
	}

	It("drains a node under load until it holds nothing, losing nothing", func() {
		// m4 holds the two copies rebalancing moved to it.
		drain("m4")
	})

	// The primary's role goes to each target at term + 1. (It lost 20-60
	// acknowledged writes a run until recovery streamed each operation as
	// logged: the targets, promoted right after their recovery, replayed
	// what it had sent under other ids.)
	It("drains a node holding primaries under load, losing nothing", func() {
		// Rebalancing may have moved primaries: the first node that holds
		// one now.
		node := ""
		for _, n := range []string{"m1", "m2", "m3"} {
			if primariesOn(lc, index, n) > 0 {
				node = n
				break
			}
		}
		Expect(node).NotTo(BeEmpty(), "no node of m1-m3 holds a primary")
		drain(node)
	})
})

// primariesOn counts the primaries of index on node.
func primariesOn(lc *cluster, index, node string) int {
	st, err := lc.state("coord-a")
	if err != nil {
		return 0
	}
	n := 0
	for _, x := range st.Indices {
		for _, sh := range x.Shards {
			if x.Name == index && sh.Primary && sh.NodeId == node {
				n++
			}
		}
	}
	return n
}

// copiesPerNode counts the copies of index on each of nodes, in order.
func copiesPerNode(lc *cluster, index string, nodes ...string) []int {
	st, err := lc.state("coord-a")
	if err != nil {
		return nil
	}
	out := make([]int, len(nodes))
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			for i, n := range nodes {
				if sh.NodeId == n {
					out[i]++
				}
			}
		}
	}
	return out
}

// searcher searches an index over and over, recording every failure a
// client would see: an error, or a shard the response says failed.
type searcher struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	n        atomic.Int64
	mu       sync.Mutex
	failures []string
}

func startSearcher(cl *client.Client, index string) *searcher {
	s := &searcher{stop: make(chan struct{})}
	s.wg.Go(func() {
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			r, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, TrackTotalHits: -1, Size: proto.Int32(1)})
			cancel()
			s.n.Add(1)
			switch {
			case err != nil:
				s.fail(err.Error())
			case r.Shards.Failed > 0:
				s.fail(fmt.Sprintf("%d shards failed: %v", r.Shards.Failed, r.Shards.Failures))
			}
		}
	})
	return s
}

func (s *searcher) fail(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, why)
}

// close stops the searcher and returns the searches made and the failures.
func (s *searcher) close() (int64, []string) {
	close(s.stop)
	s.wg.Wait()
	return s.n.Load(), s.failures
}

// moveWatch polls the cluster state and health while moves run: the most
// relocation targets seen at once (in the cluster and into one node), and
// whether the state, health and the CLI showed a move in progress.
type moveWatch struct {
	stop                     chan struct{}
	wg                       sync.WaitGroup
	maxMoves, maxInto        int
	seenState, seenHealth    bool
	seenCLIState, seenCLIHlt bool
}

func watchMoves(lc *cluster, cl *client.Client) *moveWatch {
	o := &moveWatch{stop: make(chan struct{})}
	moving := make(chan struct{}, 1)
	o.wg.Go(func() {
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// Health is asked every poll, not only after the state showed
			// a move: a small copy's move can end between the two calls.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
			cancel()
			o.seenHealth = o.seenHealth || (err == nil && h.RelocatingShards > 0)
			st, err := lc.state("coord-a")
			if err != nil {
				continue
			}
			moves, into := 0, map[string]int{}
			for _, x := range st.Indices {
				for _, sh := range x.Shards {
					if sh.RelocatingFromNode != "" {
						moves++
						into[sh.NodeId]++
						o.maxInto = max(o.maxInto, into[sh.NodeId])
					}
				}
			}
			o.maxMoves = max(o.maxMoves, moves)
			if moves == 0 {
				continue
			}
			o.seenState = true
			// And health right away, in the same poll that saw the move.
			ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
			h, err = cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
			cancel()
			o.seenHealth = o.seenHealth || (err == nil && h.RelocatingShards > 0)
			select {
			case moving <- struct{}{}:
			default:
			}
		}
	})
	// The CLI, as an operator sees it, on its own goroutine: a process per
	// call takes a second or more, which must not stall the polls above (a
	// move may end before it answers; the next one is tried).
	o.wg.Go(func() {
		for {
			select {
			case <-o.stop:
				return
			case <-moving:
			}
			if !o.seenCLIState {
				out, err := lc.cli("coord-a", "state")
				o.seenCLIState = err == nil && strings.Contains(out, "moving here from node [")
			}
			if !o.seenCLIHlt {
				out, err := lc.cli("coord-a", "health")
				o.seenCLIHlt = err == nil && strings.Contains(out, "copies moving")
			}
		}
	})
	return o
}

func (o *moveWatch) close() *moveWatch {
	close(o.stop)
	o.wg.Wait()
	return o
}

// checkMoved stops the writer, searcher and watcher of a move and checks
// what they saw: moves visible and bounded, no search failure, and every
// acknowledged write in the index exactly once.
func checkMoved(w *writer, s *searcher, o *moveWatch, cl *client.Client, index string) {
	h := w.close()
	searches, failures := s.close()
	o.close()
	GinkgoWriter.Printf("moves: at most %d at once, %d into one node; state %v, health %v, CLI state %v, CLI health %v; %d searches, %d failed\n",
		o.maxMoves, o.maxInto, o.seenState, o.seenHealth, o.seenCLIState, o.seenCLIHlt, searches, len(failures))
	Expect(failures).To(BeEmpty(), "searches that failed during the moves (of %d)", searches)
	Expect(searches).To(BeNumerically(">", 10))
	Expect(o.seenState).To(BeTrue(), "a move in progress seen in the cluster state")
	Expect(o.seenHealth).To(BeTrue(), "a move in progress seen in health")
	// The CLI is a process started per call: a small copy's move can end
	// before it answers (it did in CI), so seeing it there is reported,
	// not required. What the CLI prints for a move is a function of the
	// state and health seen above (cmd/sluice TestPrintStateShowsMoves,
	// TestPrintHealthListsMoves).
	if !o.seenCLIState && !o.seenCLIHlt {
		GinkgoWriter.Println("the CLI answered only after the moves ended")
	}
	// allocator.NodeConcurrentMoves and DefaultConcurrentRebalance (drains
	// are bounded per node only: 2 out of the drained node).
	Expect(o.maxInto).To(BeNumerically("<=", 2), "moves into one node at once")
	Expect(o.maxMoves).To(BeNumerically("<=", 2), "moves at once")
	checkHistory(cl, index, h)
}
