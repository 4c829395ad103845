package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/sluice-search/sluice/client/bulkindexer"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// primaryOf is the node holding shard n's primary copy of index.
func primaryOf(index string, n int32) string {
	st, err := c.state(coord)
	Expect(err).NotTo(HaveOccurred())
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			if sh.Shard == n && sh.Primary && sh.State == sluicev1.ShardState_SHARD_STATE_STARTED {
				return sh.NodeId
			}
		}
	}
	return ""
}

func health(index string) sluicev1.HealthStatus {
	h, err := cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index}})
	if err != nil {
		return 0
	}
	return h.Status
}

var _ = Describe("replicas on a 3-node cluster", Ordered, func() {
	ctx := context.Background()

	It("keeps every acknowledged document when the primary's node is SIGKILLed mid-bulk: yellow, then green once it returns", func() {
		createIndex("replicated", 1, &sluicev1.IndexSettings{NumberOfReplicas: 1}, nil)
		victimID := primaryOf("replicated", 0)
		Expect(victimID).NotTo(BeEmpty())
		victim := c.proc(victimID)

		var acked sync.Map
		var nAcked atomic.Int64
		ix, err := bulkindexer.New(bulkindexer.Config{Client: cl, Index: "replicated", BatchDocs: 50, Workers: 2,
			MaxRetries: 3, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			OnSuccess: func(it *sluicev1.BulkItem, _ *sluicev1.BulkItemResult) { acked.Store(it.Id, true); nAcked.Add(1) }})
		Expect(err).NotTo(HaveOccurred())
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				if ix.Add(ctx, item("", fmt.Sprintf("r%06d", i), fmt.Sprintf(`{"n":%d}`, i))) != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
		}()
		Eventually(nAcked.Load, 20*time.Second, 10*time.Millisecond).Should(BeNumerically(">", 1000))
		victim.kill(syscall.SIGKILL)
		killedAt := nAcked.Load()

		// The replica is promoted: the index is yellow (its old primary's
		// copy waits for its node), never red for long, and writes are
		// acknowledged again.
		Eventually(func() sluicev1.HealthStatus { return health("replicated") }, 30*time.Second, 100*time.Millisecond).
			Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_YELLOW))
		Eventually(func() string { return primaryOf("replicated", 0) }, 30*time.Second, 100*time.Millisecond).
			ShouldNot(Or(BeEmpty(), Equal(victimID)))
		Eventually(nAcked.Load, 30*time.Second, 10*time.Millisecond).Should(BeNumerically(">", killedAt+1000),
			"writes acknowledged again after the failover")
		close(stop)
		<-done
		Expect(ix.Close(ctx)).To(Succeed())

		victim.start()
		waitGreen("replicated")
		var ids []string
		acked.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
		GinkgoWriter.Printf("acknowledged %d documents, %d before the SIGKILL\n", len(ids), killedAt)
		for from := 0; from < len(ids); from += 1000 {
			batch := ids[from:min(from+1000, len(ids))]
			Expect(countIDs("replicated", batch)).To(Equal(int64(len(batch))), "acknowledged documents readable")
		}
		// The returned node holds a replica again, which recovered from
		// the new primary.
		Expect(primaryOf("replicated", 0)).NotTo(Equal(victimID))
	})
})
