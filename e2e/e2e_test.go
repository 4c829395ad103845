package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/client/bulkindexer"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestE2E(t *testing.T) {
	if os.Getenv("SLUICE_E2E") == "off" {
		t.Skip("SLUICE_E2E=off")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Sluice e2e")
}

const (
	corpusDocs = 5000
	wikiShards = 4
)

var (
	c          *cluster
	cl         *client.Client // to the coordinator in use
	coord      = "coord-a"
	corpusFile string
)

// specFailed is set once any spec failed: the suite's cluster (its logs
// and data) is then kept for a person to read.
var specFailed atomic.Bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		specFailed.Store(true)
	}
})

var _ = BeforeSuite(func() {
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if os.Getenv("SLUICE_E2E_KEEP") == "" && !specFailed.Load() {
			os.RemoveAll(dir)
		} else {
			GinkgoWriter.Printf("e2e work directory kept: %s\n", dir)
		}
	})
	corpusFile = writeCorpusSlice(dir, corpusDocs)
	c = startCluster(dir, 3)
	DeferCleanup(c.stop)
	cl = c.dial(coord)
	DeferCleanup(func() { cl.Close() })
})

// writeCorpusSlice writes the first n corpus docs (or n generated ones) as
// JSON lines.
func writeCorpusSlice(dir string, n int) string {
	wd, _ := os.Getwd()
	docs, desc, err := corpus.Load(corpus.DefaultPath(wd), n)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("corpus: %s\n", desc)
	path := filepath.Join(dir, "corpus.jsonl")
	var b strings.Builder
	for _, d := range docs[:n] {
		b.Write(d.Source)
		b.WriteByte('\n')
	}
	Expect(os.WriteFile(path, []byte(b.String()), 0o644)).To(Succeed())
	return path
}

func createIndex(name string, shards int32, settings *sluicev1.IndexSettings, m *sluicev1.Mapping) {
	if settings == nil {
		settings = &sluicev1.IndexSettings{}
	}
	settings.NumberOfShards = shards
	_, err := cl.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: name, Settings: settings, Mapping: m, WaitForActiveShards: true})
	Expect(err).NotTo(HaveOccurred())
	waitGreen(name)
}

// waitGreen waits until indices are green with no copy moving: a shard
// is green while a copy of it relocates, and the specs check copies once
// every one is in place.
func waitGreen(indices ...string) {
	var last *sluicev1.ClusterHealthResponse
	Eventually(func() sluicev1.HealthStatus {
		h, err := cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: indices})
		if err != nil {
			return 0
		}
		last = h
		return settled(h)
	}, 60*time.Second, 200*time.Millisecond).Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_GREEN), func() string {
		return fmt.Sprintf("indices %v green, nothing moving; last health:\n%s%s", indices, notStarted(last), died())
	})
}

// notStarted lists the copies of h that are not started, with why, so a
// failed wait says what it waited for.
func notStarted(h *sluicev1.ClusterHealthResponse) string {
	if h == nil {
		return "(none read)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status %v, %d data nodes, %d relocating %s\n", h.Status, h.NumberOfDataNodes, h.RelocatingShards, h.Reason)
	for _, ih := range h.Indices {
		for _, sh := range ih.Shards {
			if sh.State == sluicev1.ShardState_SHARD_STATE_STARTED && sh.Move == "" {
				continue
			}
			fmt.Fprintf(&b, "  %s[%d] primary=%v node=%s state=%v term=%d in_sync=%v from=%s reason=%q move=%q\n",
				ih.Index, sh.Shard, sh.Primary, sh.NodeId, sh.State, sh.PrimaryTerm, sh.InSync, sh.RelocatingFromNode, sh.Reason, sh.Move)
		}
	}
	return b.String()
}

// settled is h's status, or yellow while a copy moves.
func settled(h *sluicev1.ClusterHealthResponse) sluicev1.HealthStatus {
	if h.RelocatingShards > 0 {
		return max(h.Status, sluicev1.HealthStatus_HEALTH_STATUS_YELLOW)
	}
	return h.Status
}

// count refreshes and counts exactly.
func count(index string, q *sluicev1.Query) int64 {
	ctx := context.Background()
	_, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}})
	Expect(err).NotTo(HaveOccurred())
	return search(index, q)
}

// search counts without refreshing.
func search(index string, q *sluicev1.Query) int64 {
	r, err := cl.Search(context.Background(), &sluicev1.SearchRequest{Indices: []string{index}, Query: q, TrackTotalHits: -1, Size: proto.Int32(0)})
	Expect(err).NotTo(HaveOccurred())
	Expect(r.Shards.Failed).To(BeZero(), "shard failures: %v", r.Shards.Failures)
	return r.Total.Value
}

func item(index, id, source string) *sluicev1.BulkItem {
	return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Index: index, Id: id, Source: []byte(source)}
}

// scrollIDs reads slice sl of index through a PIT-less scroll.
func scrollIDs(index string, sl *sluicev1.Slice) []string {
	stream, err := cl.Scroll(context.Background(), &sluicev1.ScrollRequest{Indices: []string{index}, Slice: sl, BatchSize: 500, FetchSource: new(bool)})
	Expect(err).NotTo(HaveOccurred())
	var ids []string
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return ids
		}
		Expect(err).NotTo(HaveOccurred())
		for _, d := range r.Docs {
			ids = append(ids, d.Id)
		}
	}
}

var _ = Describe("a 3-node cluster", Ordered, func() {
	ctx := context.Background()

	It("loads a corpus slice with `sluice bulk` and counts it exactly", func() {
		createIndex("wiki", wikiShards, nil, nil)
		out, err := c.cli(coord, "bulk", corpusFile, "--index", "wiki", "--refresh", "wait_for")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(fmt.Sprintf("%d created", corpusDocs)))
		// wait_for: visible without an explicit refresh.
		Expect(search("wiki", nil)).To(Equal(int64(corpusDocs)))
		Expect(count("wiki", nil)).To(Equal(int64(corpusDocs)))
		out, err = c.cli(coord, "search", "wiki", "title:anarchism", "--size", "1")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"_index":"wiki"`))
	})

	It("makes writes visible with refresh=wait_for and not before a refresh otherwise", func() {
		createIndex("nrt", 2, &sluicev1.IndexSettings{RefreshInterval: durationpb.New(time.Hour)}, nil)
		_, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "nrt", Items: []*sluicev1.BulkItem{item("", "a", `{"n":1}`)}})
		Expect(err).NotTo(HaveOccurred())
		Expect(search("nrt", nil)).To(BeZero(), "visible without any refresh")
		resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "nrt", Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR,
			Items: []*sluicev1.BulkItem{item("", "b", `{"n":2}`), item("", "c", `{"n":3}`)}})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Errors).To(BeFalse())
		// Everything acknowledged up to the wait_for is visible; the
		// documents are on two shards, so a wait on one shard covers it.
		Eventually(func() int64 {
			return search("nrt", &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"b", "c"}}}})
		}).
			WithTimeout(time.Second).Should(Equal(int64(2)))
		g, err := cl.Get(ctx, &sluicev1.GetRequest{Index: "nrt", Id: "a", Refresh: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(g.Found).To(BeTrue(), "realtime get of an unrefreshed write")
	})

	It("returns every document exactly once over 1, 2, shards and 2×shards scroll slices", func() {
		for _, max := range []int32{1, 2, wikiShards, 2 * wikiShards} {
			seen := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for id := range max {
				wg.Go(func() {
					defer GinkgoRecover()
					ids := scrollIDs("wiki", &sluicev1.Slice{Id: id, Max: max})
					mu.Lock()
					defer mu.Unlock()
					for _, d := range ids {
						seen[d]++
					}
				})
			}
			wg.Wait()
			Expect(seen).To(HaveLen(corpusDocs), "%d slices", max)
			for d, n := range seen {
				Expect(n).To(Equal(1), "%d slices: %s read %d times", max, d, n)
			}
		}
		out, err := c.cli(coord, "scroll", "wiki", "--slices", "3", "-o", filepath.Join(c.dir, "export.jsonl"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(fmt.Sprintf("%d documents exported", corpusDocs)))
	})

	It("rejects bad input per item or with INVALID_ARGUMENT and loses nothing else", func() {
		createIndex("typed", 3, nil, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"n": {Type: sluicev1.FieldType_FIELD_TYPE_LONG}, "title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}}})
		resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "typed", Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR, Items: []*sluicev1.BulkItem{
			item("", "ok-1", `{"n": 1, "title": "fine"}`),
			item("", "bad-json", `{"n": 2, "title": "unterminated`),
			item("no-such-index", "x", `{"n": 3}`),
			item("Invalid*Name", "y", `{"n": 4}`),
			item("", "conflict", `{"n": "not a number"}`),
			item("", "ok-2", `{"n": 5, "extra": "dynamic"}`),
		}})
		Expect(err).NotTo(HaveOccurred())
		codesOf := make([]codes.Code, len(resp.Items))
		for i, r := range resp.Items {
			codesOf[i] = codes.Code(r.GetError().GetCode())
		}
		Expect(codesOf).To(Equal([]codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.InvalidArgument, codes.InvalidArgument, codes.OK}))
		Expect(resp.Items[4].Error.Field).To(Equal("n"))
		Expect(count("typed", nil)).To(Equal(int64(2)))

		_, err = cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "Bad*Name"})
		Expect(status.Code(err)).To(Equal(codes.InvalidArgument))
		_, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"no-such-index"}})
		Expect(status.Code(err)).To(Equal(codes.NotFound))
		_, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"typed"},
			Query: &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "n", Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: "x"}}}}}})
		Expect(status.Code(err)).To(Equal(codes.InvalidArgument))
		Expect(status.Convert(err).Message()).To(ContainSubstring("[n]"))
		// The CLI reports the bad line and loads the rest.
		bad := filepath.Join(c.dir, "bad.jsonl")
		Expect(os.WriteFile(bad, []byte("{\"id\":\"l1\",\"n\":1}\n{\"id\":\"l2\",\"n\":\n{\"id\":\"l3\",\"n\":\"x\"}\n{\"id\":\"l4\",\"n\":4}\n"), 0o644)).To(Succeed())
		out, err := c.cli(coord, "bulk", bad, "--index", "typed", "--refresh", "wait_for")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("line 2:"))
		Expect(out).To(ContainSubstring("line 3:"))
		Expect(count("typed", nil)).To(Equal(int64(4)))
		// Nothing else was touched.
		Expect(count("wiki", nil)).To(Equal(int64(corpusDocs)))
	})

	It("brings back every acknowledged document after SIGKILL of a data node", func() {
		createIndex("durable", 3, nil, nil)
		var items []*sluicev1.BulkItem
		for i := range 600 {
			items = append(items, item("", fmt.Sprintf("k%d", i), fmt.Sprintf(`{"n":%d}`, i)))
		}
		resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "durable", Items: items})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Errors).To(BeFalse())
		victim := c.nodes[1]
		victim.kill(syscall.SIGKILL)
		// Until the allocator's follower check sees the process gone (about
		// a second) the state still says green: wait for that first, so the
		// green below is the one after the restart.
		Eventually(func() sluicev1.HealthStatus {
			h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
			if err != nil {
				return 0
			}
			return h.Status
		}, 5*time.Second, 20*time.Millisecond).ShouldNot(Equal(sluicev1.HealthStatus_HEALTH_STATUS_GREEN))
		victim.start()
		// Every index: the victim's shards of "wiki" reopen too.
		waitGreen()
		Eventually(func() int64 { return count("durable", nil) }, 30*time.Second, 500*time.Millisecond).Should(Equal(int64(600)))
		Expect(count("wiki", nil)).To(Equal(int64(corpusDocs)))
	})

	It("turns health red within 2 s of a data node's SIGKILL and of a full-cluster outage, naming shard and node, and green only once shards serve again", func() {
		createIndex("health", 3, nil, nil)
		var items []*sluicev1.BulkItem
		for i := range 300 {
			items = append(items, item("", fmt.Sprintf("h%d", i), fmt.Sprintf(`{"n":%d}`, i)))
		}
		resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "health", Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Errors).To(BeFalse())
		indexHealth := func() *sluicev1.IndexHealth {
			h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"health"}})
			if err != nil || len(h.Indices) != 1 {
				return &sluicev1.IndexHealth{}
			}
			return h.Indices[0]
		}
		status := func() sluicev1.HealthStatus { return indexHealth().Status }
		// Green only once every shard serves: the first green seen is
		// followed at once by a refresh and search that miss no shard.
		waitServing := func() {
			Eventually(status, 60*time.Second, 20*time.Millisecond).Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_GREEN))
			Expect(count("health", nil)).To(Equal(int64(300)))
		}

		// One node: its lease (10 s) has not run out when health turns red
		// — the allocator's follower checks saw the process gone.
		node, _ := c.locate("health", 0)
		victim := c.proc(node)
		victim.kill(syscall.SIGKILL)
		killed := time.Now()
		Eventually(status, 2*time.Second, 20*time.Millisecond).Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_RED))
		GinkgoWriter.Printf("health red %v after SIGKILL of %s\n", time.Since(killed).Round(time.Millisecond), node)
		var reason string
		for _, sh := range indexHealth().Shards {
			if sh.Shard == 0 {
				reason = sh.Reason
			}
		}
		Expect(reason).To(ContainSubstring("node [%s]", node), "shard 0's reason names its node")
		victim.start()
		waitServing()

		// Every data node at once.
		killed = time.Now()
		var wg sync.WaitGroup
		for _, p := range c.nodes {
			wg.Go(func() { p.kill(syscall.SIGKILL) })
		}
		wg.Wait()
		Eventually(status, 2*time.Second, 20*time.Millisecond).Should(Equal(sluicev1.HealthStatus_HEALTH_STATUS_RED))
		GinkgoWriter.Printf("health red %v after SIGKILL of every data node\n", time.Since(killed).Round(time.Millisecond))
		for _, p := range c.nodes {
			p.start()
		}
		waitServing()
		waitGreen()
	})

	It("survives the allocating coordinator being killed mid-bulk: another takes over", func() {
		c.startCoordinator("coord-b")
		st, err := c.state("coord-b")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Allocator).To(Equal("coord-a"))
		createIndex("midbulk", 3, nil, nil)

		clA := c.dial("coord-a")
		defer clA.Close()
		var acked sync.Map
		var nAcked atomic.Int64
		ix, err := bulkindexer.New(bulkindexer.Config{Client: clA, Index: "midbulk", BatchDocs: 50, Workers: 2, MaxRetries: 1,
			OnSuccess: func(it *sluicev1.BulkItem, _ *sluicev1.BulkItemResult) { acked.Store(it.Id, true); nAcked.Add(1) }})
		Expect(err).NotTo(HaveOccurred())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				if ix.Add(ctx, item("", fmt.Sprintf("m%06d", i), fmt.Sprintf(`{"n":%d}`, i))) != nil || i > 200_000 {
					break
				}
				select {
				case <-time.After(50 * time.Microsecond):
				case <-c.coords["coord-a"].exit:
					return
				}
			}
		}()
		Eventually(nAcked.Load, 20*time.Second, 10*time.Millisecond).Should(BeNumerically(">", 500))
		c.coords["coord-a"].kill(syscall.SIGKILL)
		<-done
		_ = ix.Close(ctx) // batches in flight to the dead coordinator fail: not acknowledged

		cl.Close()
		coord, cl = "coord-b", c.dial("coord-b")
		Eventually(func() string {
			st, err := c.state("coord-b")
			if err != nil {
				return ""
			}
			return st.Allocator
		}, 30*time.Second, 200*time.Millisecond).Should(Equal("coord-b"))
		// The new allocator places a new index's shards.
		createIndex("after-failover", 2, nil, nil)
		// Every acknowledged document is there.
		var ids []string
		acked.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
		Expect(count("midbulk", &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: ids[:min(len(ids), 4000)]}}})).
			To(Equal(int64(min(len(ids), 4000))))
		Expect(count("midbulk", nil)).To(BeNumerically(">=", len(ids)))
	})
})
