package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The reindex suite copies one source index, loaded once from the corpus
// slice, in every way the task supports, and checks each copy by scrolling
// both sides: every _id exactly once, with byte-identical _source.
const (
	rxSource       = "rx-src"
	rxShards       = 3
	rxRoutingShard = 2 * rxShards // so a ×2 destination stays local
)

var _ = Describe("reindex on a 3-node cluster", Ordered, func() {
	ctx := context.Background()
	var source map[string][]byte // _id → _source of rxSource

	BeforeAll(func() {
		createIndex(rxSource, rxShards, &sluicev1.IndexSettings{NumberOfRoutingShards: rxRoutingShard}, nil)
		out, err := c.cli(coord, "bulk", corpusFile, "--index", rxSource, "--refresh", "wait_for")
		Expect(err).NotTo(HaveOccurred(), out)
		source = scrollSources(rxSource, nil)
		Expect(source).To(HaveLen(corpusDocs))
	})

	It("copies every document exactly once with identical _source, locally", func() {
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-local"}})
		t = expectSucceeded(t.Id, 60*time.Second)
		Expect(t.Reindex.Mode).To(Equal(sluicev1.ReindexMode_REINDEX_MODE_LOCAL))
		// Nothing about indexing changes: AUTO adds the source's segments.
		Expect(t.Reindex.CopyMethod).To(Equal(sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS), t.Reindex.CopyMethodReason)
		Expect(t.Reindex.Created).To(Equal(int64(corpusDocs)))
		Expect(t.Reindex.Failures).To(BeZero())
		expectExact("rx-local", source)
	})

	It("copies documents when asked to, and says so in the CLI", func() {
		out, err := c.cli(coord, "reindex", "--source", rxSource, "--dest", "rx-local-docs", "--copy", "documents", "--wait")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("local mode, documents"))
		expectExact("rx-local-docs", source)
		out, err = c.cli(coord, "reindex", "--source", rxSource, "--dest", "rx-local-segs", "--copy", "segments", "--wait")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("local mode, segments"))
		expectExact("rx-local-segs", source)
		out, err = c.cli(coord, "reindex", "--source", rxSource, "--dest", "rx-segs-refused", "--copy", "segments", "--rps", "100")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("requests_per_second"))
	})

	It("resumes a segment copy after SIGKILL of a data node around the copy and finishes exact", func() {
		// A segment copy is one step per slice: the kill lands before,
		// during or after the add; the commit with the slice's marker makes
		// the add happen exactly once per destination shard either way.
		ix, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: rxSource})
		Expect(err).NotTo(HaveOccurred())
		victimID := ix.Index.Shards[0].NodeId
		var victim *proc
		for _, p := range c.nodes {
			if p.name == victimID {
				victim = p
			}
		}
		Expect(victim).NotTo(BeNil(), "source shard 0 on unknown node %q", victimID)
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest:       &sluicev1.ReindexDestination{Index: "rx-segkill", Settings: &sluicev1.IndexSettings{NumberOfShards: 2 * rxShards}},
			CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS})
		// The kill must land once the destination's primaries have started
		// (in sync) beside their source shards: a new primary whose node
		// goes before it ever started is placed again on another node
		// (allocator Plan, step 2), which is right — it holds no data — but
		// leaves nothing co-located for a segment copy, so slice 0 then
		// copies documents. The task creates the destination without
		// waiting for it, so a kill at once raced the node's first open.
		srcNode := map[int32]string{}
		for _, sh := range ix.Index.Shards {
			if sh.Primary {
				srcNode[sh.Shard] = sh.NodeId
			}
		}
		Eventually(func() []string {
			dst, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "rx-segkill"})
			if err != nil {
				return []string{err.Error()}
			}
			var waiting []string
			for _, sh := range dst.Index.Shards {
				if sh.Primary && (sh.State != sluicev1.ShardState_SHARD_STATE_STARTED || !sh.InSync || sh.NodeId != srcNode[sh.Shard/2]) {
					waiting = append(waiting, fmt.Sprintf("shard %d on %s (its source's on %s): %s, in sync %v",
						sh.Shard, sh.NodeId, srcNode[sh.Shard/2], sh.State, sh.InSync))
				}
			}
			return waiting
		}, 10*time.Second, 5*time.Millisecond).Should(BeEmpty(), "rx-segkill's primaries started beside their source shards")
		victim.kill(syscall.SIGKILL)
		victim.start()
		t = expectSucceeded(t.Id, 90*time.Second)
		Expect(t.Reindex.CopyMethod).To(Equal(sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS))
		for _, s := range t.Reindex.Slices {
			Expect(s.CopyMethod).To(Equal(sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS), "slice %d: %s", s.Slice, t.Reindex.CopyMethodReason)
		}
		GinkgoWriter.Printf("segment copy with %s killed: %v\n", victimID, t.Reindex)
		waitGreen(rxSource, "rx-segkill")
		expectExact("rx-segkill", source)
	})

	It("stays local when the destination has twice the shards", func() {
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-x2", Settings: &sluicev1.IndexSettings{NumberOfShards: 2 * rxShards}}})
		t = expectSucceeded(t.Id, 60*time.Second)
		Expect(t.Reindex.Mode).To(Equal(sluicev1.ReindexMode_REINDEX_MODE_LOCAL))
		Expect(t.Reindex.CopyMethod).To(Equal(sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS), t.Reindex.CopyMethodReason)
		ix, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "rx-x2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ix.Index.Settings.NumberOfShards).To(Equal(int32(2 * rxShards)))
		expectExact("rx-x2", source)
	})

	It("streams node to node when the shard count is not a multiple, and is still exact", func() {
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-remote", Settings: &sluicev1.IndexSettings{NumberOfShards: rxShards + 1}}})
		t = expectSucceeded(t.Id, 60*time.Second)
		Expect(t.Reindex.Mode).To(Equal(sluicev1.ReindexMode_REINDEX_MODE_REMOTE))
		expectExact("rx-remote", source)
	})

	It("copies exactly the documents a query selects", func() {
		// An alphabetic word of the first title (by _id) that has one: it
		// matches at least that document and, the corpus being varied, not
		// all of them.
		ids := slices.Sorted(maps.Keys(source))
		var word string
		for _, id := range ids {
			var d struct{ Title string }
			Expect(json.Unmarshal(source[id], &d)).To(Succeed())
			for _, f := range strings.Fields(d.Title) {
				if len(f) >= 4 && strings.IndexFunc(f, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
					word = strings.ToLower(f)
					break
				}
			}
			if word != "" {
				break
			}
		}
		q := &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: word}}}
		want := scrollSources(rxSource, q)
		Expect(len(want)).To(BeNumerically(">", 0), "query title:%s", word)
		Expect(len(want)).To(BeNumerically("<", corpusDocs), "query title:%s", word)

		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource, Query: q},
			Dest: &sluicev1.ReindexDestination{Index: "rx-filtered"}})
		t = expectSucceeded(t.Id, 60*time.Second)
		Expect(t.Reindex.Total).To(Equal(int64(len(want))))
		expectExact("rx-filtered", want)
	})

	It("keeps each document's routing, so a get with it finds the copy, locally and node to node", func() {
		const src = "rx-routed"
		createIndex(src, rxShards, &sluicev1.IndexSettings{NumberOfRoutingShards: rxRoutingShard}, nil)
		routed := map[string]string{} // _id → routing, for the routed half
		var items []*sluicev1.BulkItem
		for i := range 300 {
			it := &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("r%04d", i),
				Source: fmt.Appendf(nil, `{"title":"routed document %d"}`, i)}
			if i%2 == 0 {
				it.Routing = fmt.Sprintf("tenant-%d", i%7)
				routed[it.Id] = it.Routing
			}
			items = append(items, it)
		}
		r, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: src, Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Errors).To(BeFalse())
		for _, tc := range []struct {
			dest   string
			shards int32
			mode   sluicev1.ReindexMode
		}{{"rx-routed-x2", 2 * rxShards, sluicev1.ReindexMode_REINDEX_MODE_LOCAL}, {"rx-routed-remote", rxShards + 1, sluicev1.ReindexMode_REINDEX_MODE_REMOTE}} {
			t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: src},
				Dest: &sluicev1.ReindexDestination{Index: tc.dest, Settings: &sluicev1.IndexSettings{NumberOfShards: tc.shards}}})
			t = expectSucceeded(t.Id, 60*time.Second)
			Expect(t.Reindex.Mode).To(Equal(tc.mode))
			wantCopy := sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS
			if tc.mode == sluicev1.ReindexMode_REINDEX_MODE_LOCAL {
				wantCopy = sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS // a split by segments
			}
			Expect(t.Reindex.CopyMethod).To(Equal(wantCopy), t.Reindex.CopyMethodReason)
			for id, rt := range routed {
				g, err := cl.Get(ctx, &sluicev1.GetRequest{Index: tc.dest, Id: id, Routing: rt})
				Expect(err).NotTo(HaveOccurred())
				Expect(g.Found).To(BeTrue(), "%s: get %s with routing %s", tc.dest, id, rt)
				Expect(g.Routing).To(Equal(rt))
			}
		}
		out, err := c.cli(coord, "get", "rx-routed-remote", "r0002", "--routing", "tenant-2")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("routed document 2"))
		out, err = c.cli(coord, "search", "rx-routed-remote", "title:routed", "--size", "300")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"_id":"r0002","_score":`))
		Expect(out).To(ContainSubstring(`"_routing":"tenant-2"`))
	})

	It("points the swap alias at the destination only, after success", func() {
		createIndex("rx-old", 1, nil, nil)
		_, err := cl.UpdateAliases(ctx, &sluicev1.UpdateAliasesRequest{Actions: []*sluicev1.AliasAction{
			{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "rx-live", Index: rxSource},
			{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "rx-live", Index: "rx-old", IsWriteIndex: true},
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(aliasIndices("rx-live")).To(ConsistOf(rxSource, "rx-old"))

		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		r, err := cl.Reindex(wctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-swapped"}, SwapAlias: "rx-live", WaitForCompletion: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Task.State).To(Equal(sluicev1.TaskState_TASK_STATE_SUCCEEDED), "task %s: %v", r.Task.Id, r.Task.Error)
		Expect(aliasIndices("rx-live")).To(Equal([]string{"rx-swapped"}))
		expectExact("rx-live", source)
	})

	It("cancels promptly and leaves the destination consistent", func() {
		// 50 docs/s: the copy would take minutes.
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-cancelled"}, RequestsPerSecond: 50})
		waitState(t.Id, sluicev1.TaskState_TASK_STATE_RUNNING)
		asked := time.Now()
		_, err := cl.CancelTask(ctx, &sluicev1.CancelTaskRequest{Id: t.Id})
		Expect(err).NotTo(HaveOccurred())
		t = waitEnded(t.Id, 5*time.Second)
		Expect(t.State).To(Equal(sluicev1.TaskState_TASK_STATE_CANCELLED), "task error: %v", t.Error)
		GinkgoWriter.Printf("cancelled in %s\n", time.Since(asked))

		// Nothing is written after the task ended, and what was written is
		// a subset of the source, each document once and unchanged. (A task
		// cancelled this early may end before the destination it created
		// has started its shards.)
		waitGreen("rx-cancelled")
		n := count("rx-cancelled", nil)
		Expect(n).To(BeNumerically("<", corpusDocs))
		Consistently(func() int64 { return count("rx-cancelled", nil) }, time.Second, 200*time.Millisecond).Should(Equal(n))
		got := scrollSources("rx-cancelled", nil)
		Expect(got).To(HaveLen(int(n)))
		for id, src := range got {
			want, ok := source[id]
			Expect(ok).To(BeTrue(), "%s is not in the source", id)
			Expect(bytes.Equal(src, want)).To(BeTrue(), "_source of %s differs", id)
		}
	})

	It("applies a rethrottle at once, to every slice", func() {
		const slow = 20 // docs/s for the task: its share, slow/rxShards, per slice
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-rethrottled"}, RequestsPerSecond: slow})
		// Rethrottled as soon as it runs: some slices may still be starting
		// on their nodes, where the rethrottle must reach them too.
		t = waitState(t.Id, sluicev1.TaskState_TASK_STATE_RUNNING)
		Expect(t.Reindex.RequestsPerSecond).To(BeNumerically("==", slow))
		r, err := cl.RethrottleTask(ctx, &sluicev1.RethrottleTaskRequest{Id: t.Id, RequestsPerSecond: 0})
		Expect(err).NotTo(HaveOccurred())
		at := time.Now()
		Expect(r.Task.Reindex.RequestsPerSecond).To(BeZero())
		copiedAt := map[int32]int64{}
		for _, sl := range r.Task.Reindex.Slices {
			copiedAt[sl.Slice] = sl.Copied
		}
		// The promise is a rate, not a wall-clock time (this machine's load
		// decides that): every slice copies the rest of its documents at
		// least speedup times faster than its old share would let it. A
		// slice that kept its old rate fails this whatever the load; at
		// that rate the rest of a slice takes minutes.
		const speedup = 5
		share := float64(slow) / rxShards
		budget := func(sl *sluicev1.SliceStatus) time.Duration {
			rest := sl.Total - copiedAt[sl.Slice]
			if sl.Total == 0 { // not reported yet: at most every document
				rest = corpusDocs
			}
			return time.Duration(float64(rest) / (speedup * share) * float64(time.Second))
		}
		doneAt := map[int32]time.Duration{}
		Eventually(func(g Gomega) {
			var err error
			t, err = getTask(cl, t.Id)
			g.Expect(err).NotTo(HaveOccurred())
			since := time.Since(at)
			for _, sl := range t.Reindex.Slices {
				if _, seen := doneAt[sl.Slice]; !seen && sl.State == sluicev1.TaskState_TASK_STATE_SUCCEEDED {
					doneAt[sl.Slice] = since
				}
				if _, done := doneAt[sl.Slice]; !done && since > budget(sl) {
					StopTrying(fmt.Sprintf("slice %d still copies %v after the rethrottle to unlimited: %d/%d copied, %.1f docs/s since (its old share %.1f docs/s)",
						sl.Slice, since.Round(time.Second), sl.Copied, sl.Total, float64(sl.Copied-copiedAt[sl.Slice])/since.Seconds(), share)).Now()
				}
			}
			g.Expect(ended(t.State)).To(BeTrue(), "task %s %s, %d/%d copied", t.Id, t.State, copiedDocs(t), t.Reindex.GetTotal())
		}, 5*time.Minute, 100*time.Millisecond).Should(Succeed())
		Expect(t.State).To(Equal(sluicev1.TaskState_TASK_STATE_SUCCEEDED), "task %s: %v", t.Id, t.Error)
		Expect(t.Reindex.RequestsPerSecond).To(BeZero())
		var rates []string
		for _, sl := range t.Reindex.Slices {
			d := doneAt[sl.Slice]
			rates = append(rates, fmt.Sprintf("slice %d: %d docs in %v (%.0f docs/s)", sl.Slice, sl.Total-copiedAt[sl.Slice],
				d.Round(time.Millisecond), float64(sl.Total-copiedAt[sl.Slice])/d.Seconds()))
		}
		AddReportEntry("copy after the rethrottle to unlimited", strings.Join(rates, "; "))
		expectExact("rx-rethrottled", source)
	})

	It("resumes after SIGKILL of a data node running a slice and finishes exact", func() {
		// 500 docs/s: the first checkpoints (every 5 s on the nodes) come
		// well before the end.
		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-nodekill"}, RequestsPerSecond: 500})
		t = waitCheckpointed(t.Id)
		victimID := t.Reindex.Slices[0].NodeId
		var victim *proc
		for _, p := range c.nodes {
			if p.name == victimID {
				victim = p
			}
		}
		Expect(victim).NotTo(BeNil(), "slice 0 runs on unknown node %q", victimID)
		GinkgoWriter.Printf("killing %s at %d/%d copied\n", victimID, copiedDocs(t), t.Reindex.Total)
		victim.kill(syscall.SIGKILL)
		victim.start()

		t = expectSucceeded(t.Id, 60*time.Second)
		Expect(t.Reindex.Mode).To(Equal(sluicev1.ReindexMode_REINDEX_MODE_LOCAL))
		// A slice pins a committed source layout, so the killed node
		// reopens the shard with the same segments and the slice resumes
		// from its checkpoint instead of starting over.
		Expect(sliceRestarts(t.Id)).To(BeZero(), "slices started over after the node was killed")
		waitGreen(rxSource, "rx-nodekill")
		expectExact("rx-nodekill", source)
	})

	It("resumes on another coordinator after SIGKILL of the one running the task, and finishes exact", func() {
		const extra = "coord-rx"
		c.startCoordinator(extra)
		DeferCleanup(func() {
			// Leave the coordinators as found, even after a failure: coord
			// up and allocating, extra stopped.
			select {
			case <-c.coords[coord].exit:
				c.startCoordinator(coord)
				cl.Close()
				cl = c.dial(coord)
			default:
			}
			c.coords[extra].kill(syscall.SIGTERM)
			Eventually(func() string {
				st, err := c.state(coord)
				if err != nil {
					return ""
				}
				return st.Allocator
			}, 60*time.Second, 200*time.Millisecond).Should(Equal(coord))
		})

		t := reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: rxSource},
			Dest: &sluicev1.ReindexDestination{Index: "rx-coordkill"}, RequestsPerSecond: 500})
		t = waitCheckpointed(t.Id)
		owner := taskOwner(t.Id)
		victim := coordinatorWithManager(owner, coord, extra)
		survivor := extra
		if victim == extra {
			survivor = coord
		}
		GinkgoWriter.Printf("killing %s (task runner %s) at %d/%d copied\n", victim, owner, copiedDocs(t), t.Reindex.Total)
		c.coords[victim].kill(syscall.SIGKILL)

		other := c.dial(survivor)
		defer other.Close()
		// The victim stays down until the end: the survivor ran the rest.
		expectSucceededVia(other, t.Id, 60*time.Second)
		// The nodes kept each slice's reader: the survivor resumed every
		// slice from its checkpoint, none from the beginning.
		Expect(sliceRestarts(t.Id)).To(BeZero())

		c.startCoordinator(victim)
		if victim == coord {
			cl.Close()
			cl = c.dial(coord)
		}
		expectExact("rx-coordkill", source)
	})
})

// reindex starts a task and returns it as accepted.
func reindex(req *sluicev1.ReindexRequest) *sluicev1.Task {
	r, err := cl.Reindex(context.Background(), req)
	Expect(err).NotTo(HaveOccurred())
	return r.Task
}

func getTask(via *client.Client, id string) (*sluicev1.Task, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := via.GetTask(ctx, &sluicev1.GetTaskRequest{Id: id})
	if err != nil {
		return nil, err
	}
	return r.Task, nil
}

func ended(s sluicev1.TaskState) bool {
	return s == sluicev1.TaskState_TASK_STATE_SUCCEEDED || s == sluicev1.TaskState_TASK_STATE_FAILED ||
		s == sluicev1.TaskState_TASK_STATE_CANCELLED
}

// waitEndedVia polls the task until it ends.
func waitEndedVia(via *client.Client, id string, timeout time.Duration) *sluicev1.Task {
	var t *sluicev1.Task
	Eventually(func(g Gomega) {
		var err error
		t, err = getTask(via, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ended(t.State)).To(BeTrue(), "task %s %s, %d/%d copied", id, t.State, copiedDocs(t), t.GetReindex().GetTotal())
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return t
}

func waitEnded(id string, timeout time.Duration) *sluicev1.Task { return waitEndedVia(cl, id, timeout) }

func expectSucceededVia(via *client.Client, id string, timeout time.Duration) *sluicev1.Task {
	t := waitEndedVia(via, id, timeout)
	Expect(t.State).To(Equal(sluicev1.TaskState_TASK_STATE_SUCCEEDED), "task %s: %v", id, t.Error)
	GinkgoWriter.Printf("task %s: %s mode, %d docs in %s\n", id, t.Reindex.Mode, t.Reindex.Total,
		t.EndTime.AsTime().Sub(t.StartTime.AsTime()).Round(time.Millisecond))
	return t
}

func expectSucceeded(id string, timeout time.Duration) *sluicev1.Task {
	return expectSucceededVia(cl, id, timeout)
}

// waitState polls until the task is in state s (failing if it ends first).
func waitState(id string, s sluicev1.TaskState) *sluicev1.Task {
	var t *sluicev1.Task
	Eventually(func(g Gomega) sluicev1.TaskState {
		var err error
		t, err = getTask(cl, id)
		g.Expect(err).NotTo(HaveOccurred())
		if s != t.State {
			g.Expect(ended(t.State)).To(BeFalse(), "task %s ended %s: %v", id, t.State, t.Error)
		}
		return t.State
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(s))
	return t
}

// waitCheckpointed polls until some slice has a durable checkpoint while the
// task still runs: the moment to interrupt it.
func waitCheckpointed(id string) *sluicev1.Task {
	var t *sluicev1.Task
	Eventually(func(g Gomega) int64 {
		var err error
		t, err = getTask(cl, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(t.State).To(Equal(sluicev1.TaskState_TASK_STATE_RUNNING), "task %s: %v", id, t.Error)
		return copiedDocs(t)
	}, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))
	Expect(copiedDocs(t)).To(BeNumerically("<", t.Reindex.Total), "the task got too far to be interrupted")
	return t
}

func copiedDocs(t *sluicev1.Task) int64 {
	var n int64
	for _, s := range t.GetReindex().GetSlices() {
		n += s.Copied
	}
	return n
}

// taskRecord reads the task's record from etcd, where the runner's identity
// (not part of the public Task) lives.
func taskRecord(id string) *statev1.ReindexTask {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcdURL}, DialTimeout: 5 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	defer ec.Close()
	resp, err := ec.Get(ctx, state.NewKeys("").Task(id))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Kvs).To(HaveLen(1), "task %s in etcd", id)
	rec := &statev1.ReindexTask{}
	Expect(state.Unmarshal(resp.Kvs[0].Value, rec)).To(Succeed())
	return rec
}

func taskOwner(id string) string {
	owner := taskRecord(id).Owner
	Expect(owner).NotTo(BeEmpty(), "task %s has no runner", id)
	return owner
}

// sliceRestarts sums the times the task's slices started over.
func sliceRestarts(id string) int32 {
	var n int32
	for _, cp := range taskRecord(id).Checkpoints {
		n += cp.Restarts
	}
	return n
}

// coordinatorWithManager finds which of the coordinators' processes runs
// the task manager (the reindex runner) with this id: its log names it when
// it is elected.
func coordinatorWithManager(managerID string, ids ...string) string {
	var found string
	Eventually(func() string {
		for _, id := range ids {
			b, err := os.ReadFile(filepath.Join(c.dir, id+".log"))
			if err == nil && bytes.Contains(b, []byte(managerID)) {
				found = id
				return id
			}
		}
		return ""
	}, 5*time.Second, 100*time.Millisecond).ShouldNot(BeEmpty(), "no coordinator log names runner %s", managerID)
	return found
}

func aliasIndices(alias string) []string {
	r, err := cl.ListAliases(context.Background(), &sluicev1.ListAliasesRequest{Prefix: alias})
	Expect(err).NotTo(HaveOccurred())
	for _, a := range r.Aliases {
		if a.Alias == alias {
			return a.Indices
		}
	}
	return nil
}

// scrollSources reads every document of index (matching q) with its
// _source, failing on an _id returned twice.
func scrollSources(index string, q *sluicev1.Query) map[string][]byte {
	stream, err := cl.Scroll(context.Background(), &sluicev1.ScrollRequest{Indices: []string{index}, Query: q, BatchSize: 500})
	Expect(err).NotTo(HaveOccurred())
	docs := map[string][]byte{}
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return docs
		}
		Expect(err).NotTo(HaveOccurred())
		for _, d := range r.Docs {
			// A plain lookup: HaveKey scans the map by reflection.
			_, dup := docs[d.Id]
			Expect(dup).To(BeFalse(), "%s: _id %s returned twice", index, d.Id)
			docs[d.Id] = d.Source
		}
	}
}

// expectExact checks that index holds exactly want: every _id once, each
// _source byte-identical.
func expectExact(index string, want map[string][]byte) {
	_, err := cl.Refresh(context.Background(), &sluicev1.RefreshRequest{Indices: []string{index}})
	Expect(err).NotTo(HaveOccurred())
	got := scrollSources(index, nil)
	var missing, differ []string
	for id, src := range want {
		g, ok := got[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case !bytes.Equal(g, src):
			differ = append(differ, id)
		}
	}
	Expect(missing).To(BeEmpty(), "%s: %d documents missing", index, len(missing))
	Expect(differ).To(BeEmpty(), "%s: %d documents with a different _source", index, len(differ))
	Expect(got).To(HaveLen(len(want)), "%s: documents not in the source", index)
	Expect(count(index, nil)).To(Equal(int64(len(want))), fmt.Sprintf("%s: search count", index))
}
