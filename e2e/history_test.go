package e2e

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/client"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// history records what a writer was told: the ids acknowledged and the
// ids whose write failed or whose outcome is unknown. Ids are unique and
// a failed write is never retried, so each id may be in the index at most
// once, and every acknowledged id must be.
type history struct {
	mu     sync.Mutex
	acked  map[string]bool
	failed map[string]bool
	n      atomic.Int64 // acknowledged
}

func newHistory() *history {
	return &history{acked: map[string]bool{}, failed: map[string]bool{}}
}

// writer bulk-indexes unique ids through a coordinator with workers
// goroutines until stopped.
type writer struct {
	h    *history
	stop chan struct{}
	wg   sync.WaitGroup
}

// startWriter writes batches of 20 documents with ids prefix-w<worker>-<n>;
// waitFor, if set, says per batch whether to ask refresh=wait_for.
func startWriter(cl *client.Client, index, prefix string, workers int, waitFor func() bool) *writer {
	w := &writer{h: newHistory(), stop: make(chan struct{})}
	for wk := range workers {
		w.wg.Go(func() {
			for seq := 0; ; {
				select {
				case <-w.stop:
					return
				default:
				}
				req := &sluicev1.BulkRequest{Index: index}
				if waitFor != nil && waitFor() {
					req.Refresh = sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR
				}
				for range 20 {
					id := fmt.Sprintf("%s-w%d-%07d", prefix, wk, seq)
					seq++
					req.Items = append(req.Items, item("", id, fmt.Sprintf(`{"w":%d,"n":%d}`, wk, seq)))
				}
				// Longer than a replica's --replication-timeout plus a
				// promotion: a bulk the cluster is still resolving is
				// not given up on.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				resp, err := cl.Bulk(ctx, req)
				cancel()
				w.h.record(req.Items, resp, err)
				time.Sleep(10 * time.Millisecond) // the machine is shared
			}
		})
	}
	return w
}

func (h *history) record(items []*sluicev1.BulkItem, resp *sluicev1.BulkResponse, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, it := range items {
		if err == nil && i < len(resp.Items) && (resp.Items[i].Status == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED ||
			resp.Items[i].Status == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED) {
			h.acked[it.Id] = true
			h.n.Add(1)
		} else {
			h.failed[it.Id] = true
		}
	}
}

func (w *writer) close() *history {
	close(w.stop)
	w.wg.Wait()
	return w.h
}

// checkHistory reads every document of index and checks the history
// against it: every acknowledged id present, no id present twice, and
// the exact total hits agreeing with what a scroll returns.
func checkHistory(cl *client.Client, index string, h *history) {
	ctx := context.Background()
	_, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}})
	Expect(err).NotTo(HaveOccurred())
	seen := map[string]int{}
	stream, err := cl.Scroll(ctx, &sluicev1.ScrollRequest{Indices: []string{index}, BatchSize: 1000, FetchSource: new(bool)})
	Expect(err).NotTo(HaveOccurred())
	total := 0
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		for _, d := range r.Docs {
			seen[d.Id]++
			total++
		}
	}
	var missing, twice []string
	failedPresent := 0
	for id := range h.acked {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, id)
		}
		if h.failed[id] {
			failedPresent++
		}
	}
	sort.Strings(missing)
	sort.Strings(twice)
	GinkgoWriter.Printf("history of %s: %d acknowledged, %d failed (%d of those present), %d documents\n",
		index, len(h.acked), len(h.failed), failedPresent, total)
	Expect(missing).To(BeEmpty(), "acknowledged writes lost (%d of %d)", len(missing), len(h.acked))
	Expect(twice).To(BeEmpty(), "documents present more than once")
	r, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, TrackTotalHits: -1, Size: proto.Int32(0)})
	Expect(err).NotTo(HaveOccurred())
	Expect(r.Total.Value).To(Equal(int64(total)), "total hits against the documents a scroll returns")
}

// checkCopies compares, shard by shard, the live document count and the
// highest sequence number of every started copy (asked on its own node,
// ShardStats) with the primary's, after a refresh. dial reaches a node.
func checkCopies(lc *cluster, cl *client.Client, index string, dial func(nodeID, addr string) *grpc.ClientConn) {
	ctx := context.Background()
	Eventually(func(g Gomega) {
		_, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}})
		g.Expect(err).NotTo(HaveOccurred())
		st, err := lc.state("coord-a")
		g.Expect(err).NotTo(HaveOccurred())
		addr := map[string]string{}
		for _, n := range st.Nodes {
			addr[n.Id] = n.Address
		}
		for _, x := range st.Indices {
			if x.Name != index {
				continue
			}
			type copyStats struct {
				node           string
				primary        bool
				docs, maxSeqNo int64
			}
			per := map[int32][]copyStats{}
			for _, sh := range x.Shards {
				g.Expect(sh.State).To(Equal(sluicev1.ShardState_SHARD_STATE_STARTED), "shard %d on %s", sh.Shard, sh.NodeId)
				conn := dial(sh.NodeId, addr[sh.NodeId])
				s, err := nodev1.NewNodeClient(conn).ShardStats(ctx, &nodev1.ShardStatsRequest{Shard: &nodev1.ShardID{IndexUuid: x.Uuid, Shard: sh.Shard}})
				conn.Close()
				g.Expect(err).NotTo(HaveOccurred(), "stats of shard %d on %s", sh.Shard, sh.NodeId)
				per[sh.Shard] = append(per[sh.Shard], copyStats{sh.NodeId, sh.Primary, s.NumDocs, s.MaxSeqNo})
			}
			for n, copies := range per {
				g.Expect(copies).To(HaveLen(2), "copies of shard %d", n)
				g.Expect(copies[0].docs).To(Equal(copies[1].docs), "shard %d: documents per copy %+v", n, copies)
				g.Expect(copies[0].maxSeqNo).To(Equal(copies[1].maxSeqNo), "shard %d: max seqNo per copy %+v", n, copies)
			}
			GinkgoWriter.Printf("copies of %s: %+v\n", index, per)
		}
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
}

// dialDirect reaches a node from the root namespace.
func dialDirect(_, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	return conn
}

// labShard is shard n of index as the coordinator's state has it: the
// index uuid, the started primary's node ("" when none) and its term.
func labShard(lc *cluster, index string, n int32) (uuid, primary string, term int64) {
	st, err := lc.state("coord-a")
	if err != nil {
		return "", "", 0
	}
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			if sh.Shard == n && sh.Primary && sh.State == sluicev1.ShardState_SHARD_STATE_STARTED {
				return x.Uuid, sh.NodeId, sh.PrimaryTerm
			}
		}
		return x.Uuid, "", 0
	}
	return "", "", 0
}

func labCreateIndex(cl *client.Client, name string, shards, replicas int32) {
	_, err := cl.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: name,
		Settings: &sluicev1.IndexSettings{NumberOfShards: shards, NumberOfReplicas: replicas}, WaitForActiveShards: true})
	Expect(err).NotTo(HaveOccurred())
	labWaitGreen(cl, name, 60*time.Second)
}

// labWaitGreen waits until index is green with no copy moving (settled).
func labWaitGreen(cl *client.Client, index string, within time.Duration) {
	Eventually(func() sluicev1.HealthStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{index}})
		if err != nil {
			return 0
		}
		return settled(h)
	}, within, 250*time.Millisecond).Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_GREEN), "index %s green, nothing moving", index)
}
