package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/client"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The network partition and randomized fault tests run on a cluster of
// their own: etcd and a coordinator in the root namespace, three data
// nodes each in a network namespace of its own (netLab). Without root or
// iproute2 the partition specs are skipped and the randomized test runs
// its SIGKILLs on loopback.
var _ = Describe("faults on data nodes of their own hosts", Ordered, func() {
	ids := []string{"h1", "h2", "h3"}
	var (
		lab *netLab
		lc  *cluster
		lcl *client.Client
	)
	BeforeAll(func() {
		dir := filepath.Join(c.dir, "netlab")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		if why := netLabUnavailable(); why != "" {
			GinkgoWriter.Printf("network partitions skipped: %s\n", why)
		} else {
			lab = newNetLab(ids)
		}
		lc = labCluster(dir, lab, ids)
		lcl = lc.dial("coord-a")
		DeferCleanup(func() { lcl.Close() })
	})

	// Every spec ends with the network whole and every node running, even
	// when it failed.
	AfterEach(func() {
		if lab != nil {
			lab.healAll()
		}
		for _, p := range lc.nodes {
			if !p.running() {
				p.start()
			}
		}
	})

	needLab := func() {
		if lab == nil {
			Skip("network partitions need root and iproute2: " + netLabUnavailable())
		}
	}

	// dial reaches a node from inside its own namespace, so a cut node can
	// be asked directly.
	dial := func(id, addr string) *grpc.ClientConn {
		if lab == nil {
			return dialDirect(id, addr)
		}
		return lab.dialNode(id, addr)
	}

	// partition writes through the coordinator, cuts the primary's node
	// with cut, and checks what the cluster did. With termEnds the cut
	// node must lose its primary (a replica promoted, term + 1) and then
	// acknowledge nothing sent to it directly.
	partition := func(index string, cut func(string), termEnds bool) {
		labCreateIndex(lcl, index, 1, 1)
		uuid, old, oldTerm := labShard(lc, index, 0)
		Expect(old).NotTo(BeEmpty())
		w := startWriter(lcl, index, index, 2, nil)
		Eventually(w.h.n.Load, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 400))
		cut(old)
		atCut := w.h.n.Load()
		if termEnds {
			Eventually(func() string { _, p, _ := labShard(lc, index, 0); return p }, 40*time.Second, 100*time.Millisecond).
				ShouldNot(Or(BeEmpty(), Equal(old)), "a replica promoted")
			_, _, term := labShard(lc, index, 0)
			Expect(term).To(BeNumerically(">", oldTerm))
		}
		Eventually(w.h.n.Load, 60*time.Second, 20*time.Millisecond).Should(BeNumerically(">", atCut+400),
			"writes acknowledged again while %s is cut", old)
		if termEnds {
			// Writes sent straight to the old primary, past the
			// coordinator, are acknowledged by no one.
			conn := dial(old, lab.ip[old]+":9300")
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := &nodev1.ShardBulkRequest{Shard: &nodev1.ShardID{IndexUuid: uuid}, Index: index}
			// The writer's fields: a new field's mapping update would
			// wait on etcd, not on the replicas.
			for i := range 10 {
				req.Items = append(req.Items, item(index, fmt.Sprintf("%s-direct-%d", index, i), fmt.Sprintf(`{"w":9,"n":%d}`, i)))
			}
			start := time.Now()
			resp, err := nodev1.NewNodeClient(conn).ShardBulk(ctx, req)
			GinkgoWriter.Printf("direct write to the old primary %s: %v after %s\n", old, err, time.Since(start))
			if err == nil {
				for _, it := range resp.Items {
					Expect(it.Status).To(Equal(sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR),
						"the old primary acknowledged %s after its term ended", it.Id)
				}
			}
		}
		h := w.close()
		lab.heal(old)
		if p := lc.proc(old); !p.running() {
			p.start()
		}
		labWaitGreen(lcl, index, 90*time.Second)
		checkHistory(lcl, index, h)
		checkCopies(lc, lcl, index, dialDirect)
	}

	It("loses no acknowledged write when the primary's node is cut from everyone, and the old primary acknowledges nothing", func() {
		needLab()
		partition("cut-all", lab.isolate, true)
	})

	It("loses no acknowledged write when the primary's node is cut from etcd only, and the old primary acknowledges nothing", func() {
		needLab()
		partition("cut-etcd", lab.cutFromEtcd, true)
	})

	It("loses no acknowledged write when the primary's node is cut from its replicas only: the replica leaves the in-sync set, then recovers", func() {
		needLab()
		partition("cut-nodes", lab.cutFromNodes, false)
	})

	// A primary moved by a drain hands its role to its target at term + 1
	// with a writer running; the moment the cluster shows the new
	// primary, the new primary's node is killed, the old one isolated, or
	// the new one cut from the other nodes. Every acknowledged write is
	// there after, once, on every copy.
	It("loses no acknowledged write when a moving primary's nodes are killed or cut during the hand-off", func() {
		needLab()
		const index = "handoff-faults"
		labCreateIndex(lcl, index, 1, 1)
		w := startWriter(lcl, index, "hf", 2, nil)
		ctx := context.Background()
		for round, fault := range []string{"kill-new", "isolate-old", "cut-new"} {
			_, old, term := labShard(lc, index, 0)
			Expect(old).NotTo(BeEmpty())
			Eventually(w.h.n.Load, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 200*(round+1)))
			_, err := lcl.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: old})
			Expect(err).NotTo(HaveOccurred())
			var moved string
			Eventually(func() bool {
				_, p, t := labShard(lc, index, 0)
				moved = p
				return p != "" && p != old && t > term
			}, 60*time.Second, 10*time.Millisecond).Should(BeTrue(), "the primary left %s", old)
			GinkgoWriter.Printf("round %d: primary handed from %s to %s; %s\n", round, old, moved, fault)
			switch fault {
			case "kill-new":
				lc.proc(moved).kill(syscall.SIGKILL)
				time.Sleep(2 * time.Second)
				lc.proc(moved).start()
			case "isolate-old":
				lab.isolate(old)
				time.Sleep(2 * time.Second)
				lab.heal(old)
			case "cut-new":
				lab.cutFromNodes(moved)
				time.Sleep(2 * time.Second)
				lab.heal(moved)
			}
			_, err = lcl.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: old, Undrain: true})
			Expect(err).NotTo(HaveOccurred())
			labWaitGreen(lcl, index, 90*time.Second)
		}
		h := w.close()
		Expect(len(h.acked)).To(BeNumerically(">", 600), "the writer got writes through")
		labWaitGreen(lcl, index, 90*time.Second)
		checkHistory(lcl, index, h)
		checkCopies(lc, lcl, index, dialDirect)
	})

	// SLUICE_E2E_FAULT_SEED replays a run's choices (the timing is the
	// machine's); SLUICE_E2E_FAULT_SECONDS sets how long faults are made.
	It("keeps every acknowledged write, no document twice and equal copies under random SIGKILLs, restarts and partitions", func() {
		seed := uint64(time.Now().UnixNano())
		if s := os.Getenv("SLUICE_E2E_FAULT_SEED"); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			Expect(err).NotTo(HaveOccurred(), "SLUICE_E2E_FAULT_SEED")
			seed = v
		}
		run := 45 * time.Second
		if s := os.Getenv("SLUICE_E2E_FAULT_SECONDS"); s != "" {
			v, err := strconv.Atoi(s)
			Expect(err).NotTo(HaveOccurred(), "SLUICE_E2E_FAULT_SECONDS")
			run = time.Duration(v) * time.Second
		}
		AddReportEntry("seed", fmt.Sprintf("SLUICE_E2E_FAULT_SEED=%d", seed))
		GinkgoWriter.Printf("randomized faults: SLUICE_E2E_FAULT_SEED=%d, %s\n", seed, run)
		rnd := rand.New(rand.NewPCG(seed, 0))

		const index = "random-faults"
		labCreateIndex(lcl, index, 2, 1)
		// The writer's and refresher's choices come from their own
		// generators, seeded from the run's, so the nemesis's sequence
		// depends on the seed alone.
		wrnd := rand.New(rand.NewPCG(seed, 1))
		var wmu sync.Mutex // the writer's goroutines share wrnd
		w := startWriter(lcl, index, "rf", 2, func() bool {
			wmu.Lock()
			defer wmu.Unlock()
			return wrnd.IntN(10) == 0
		})
		refreshStop := make(chan struct{})
		refreshDone := make(chan struct{})
		go func() {
			defer close(refreshDone)
			for {
				select {
				case <-refreshStop:
					return
				case <-time.After(300 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, _ = lcl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}})
				cancel()
			}
		}()

		faults := []string{"sigkill"}
		if lab != nil {
			faults = append(faults, "isolate", "cut-etcd", "cut-nodes")
		}
		stamp := func() string { return time.Now().Format("15:04:05.000") }
		for end := time.Now().Add(run); time.Now().Before(end); {
			id := ids[rnd.IntN(len(ids))]
			fault := faults[rnd.IntN(len(faults))]
			hold := time.Duration(1000+rnd.IntN(5000)) * time.Millisecond
			GinkgoWriter.Printf("%s nemesis: %s %s for %s (acknowledged so far %d)\n", stamp(), fault, id, hold, w.h.n.Load())
			switch fault {
			case "sigkill":
				lc.proc(id).kill(syscall.SIGKILL)
			case "isolate":
				lab.isolate(id)
			case "cut-etcd":
				lab.cutFromEtcd(id)
			case "cut-nodes":
				lab.cutFromNodes(id)
			}
			time.Sleep(hold)
			if fault == "sigkill" {
				lc.proc(id).start()
			} else {
				lab.heal(id)
			}
			time.Sleep(time.Duration(500+rnd.IntN(3000)) * time.Millisecond)
		}
		close(refreshStop)
		<-refreshDone
		h := w.close()
		GinkgoWriter.Printf("%s nemesis done: %d acknowledged, %d failed\n", stamp(), len(h.acked), len(h.failed))
		Expect(len(h.acked)).To(BeNumerically(">", 500), "the writer got writes through")

		labWaitGreen(lcl, index, 120*time.Second)
		checkHistory(lcl, index, h)
		checkCopies(lc, lcl, index, dialDirect)
	})
})
