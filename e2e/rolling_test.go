package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/client/bulkindexer"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ready asks data node p's health service for its readiness (the
// service the chart's readinessProbe asks); false when it does not
// answer.
func ready(p *proc) bool {
	i := slices.Index(p.args, "--listen")
	Expect(i).To(BeNumerically(">=", 0), "%s has no --listen", p.name)
	conn, err := grpc.NewClient("passthrough:///"+p.args[i+1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "sluice.node.ready"})
	return err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING
}

var _ = Describe("a rolling restart", Ordered, func() {
	ctx := context.Background()

	It("restarts every data node in turn under a bulk with replicas=1: never red, no search failure, nothing acknowledged lost", func() {
		const index = "rolling"
		createIndex(index, 3, &sluicev1.IndexSettings{NumberOfReplicas: 1}, nil)
		DeferCleanup(func() { _, _ = cl.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: index}) })

		var acked sync.Map
		var nAcked atomic.Int64
		ix, err := bulkindexer.New(bulkindexer.Config{Client: cl, Index: index, BatchDocs: 20, Workers: 2,
			MaxRetries: 5, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			OnSuccess: func(it *sluicev1.BulkItem, _ *sluicev1.BulkItemResult) { acked.Store(it.Id, true); nAcked.Add(1) }})
		Expect(err).NotTo(HaveOccurred())
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				if ix.Add(ctx, item("", fmt.Sprintf("k%06d", i), fmt.Sprintf(`{"n":%d}`, i))) != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		})
		// The watcher: health and a search every 100 ms.
		var mu sync.Mutex
		statuses := map[sluicev1.HealthStatus]int{}
		var failures []string
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				h, herr := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{index}})
				r, serr := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(1)})
				mu.Lock()
				if herr == nil {
					statuses[h.Status]++
				}
				switch {
				case serr != nil:
					failures = append(failures, serr.Error())
				case r.Shards.Failed > 0:
					failures = append(failures, fmt.Sprint(r.Shards.Failures))
				}
				mu.Unlock()
			}
		})
		Eventually(nAcked.Load, 20*time.Second, 10*time.Millisecond).Should(BeNumerically(">", 200))

		for _, p := range c.nodes {
			before := nAcked.Load()
			start := time.Now()
			p.kill(syscall.SIGTERM)
			stopped := time.Since(start)
			p.start()
			Eventually(func() bool { return ready(p) }, 60*time.Second, 100*time.Millisecond).Should(BeTrue(), "%s ready again", p.name)
			GinkgoWriter.Printf("%s: stopped in %v, ready %v after SIGTERM; %d writes acknowledged meanwhile\n",
				p.name, stopped.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), nAcked.Load()-before)
		}
		Eventually(nAcked.Load, 20*time.Second, 10*time.Millisecond).Should(BeNumerically(">", nAcked.Load()+100),
			"writes acknowledged after the last restart")
		close(stop)
		wg.Wait()
		Expect(ix.Close(ctx)).To(Succeed())
		waitGreen(index)

		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("health seen: %v\n", statuses)
		Expect(statuses[sluicev1.HealthStatus_HEALTH_STATUS_RED]).To(BeZero(), "health was red: %v", statuses)
		Expect(statuses[sluicev1.HealthStatus_HEALTH_STATUS_YELLOW]).To(BeNumerically(">", 0), "never yellow: did the nodes restart?")
		Expect(failures).To(BeEmpty(), "searches that failed")

		var ids []string
		acked.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
		GinkgoWriter.Printf("acknowledged %d documents\n", len(ids))
		for from := 0; from < len(ids); from += 1000 {
			batch := ids[from:min(from+1000, len(ids))]
			if n := countIDs(index, batch); n != int64(len(batch)) {
				for _, id := range batch {
					if countIDs(index, []string{id}) == 0 {
						g, err := cl.Get(ctx, &sluicev1.GetRequest{Index: index, Id: id})
						GinkgoWriter.Printf("missing %s: get found=%v err=%v\n", id, g.GetFound(), err)
					}
				}
				st, _ := c.state(coord)
				for _, x := range st.GetIndices() {
					if x.Name == index {
						GinkgoWriter.Printf("routing: %v\n", x.Shards)
					}
				}
				Fail("acknowledged documents not readable")
			}
		}
		Expect(count(index, nil)).To(BeNumerically(">=", int64(len(ids))))
	})
})
