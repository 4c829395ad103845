package reindex_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/devcluster"
	"github.com/sluice-search/sluice/node"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// testCluster is an in-process cluster (embedded etcd, a coordinator with
// the data path and the task runner, 3 data nodes with engines) on
// loopback; coordinators and nodes can be restarted on the same etcd and
// data directories.
type testCluster struct {
	t     *testing.T
	dc    *devcluster.Cluster
	dir   string
	log   *slog.Logger
	cl    *client.Client
	coord *coordinator.Coordinator // the current coordinator
	gen   int
}

// taskOptions makes tasks checkpoint and report often, and retry soon.
func taskOptions(log *slog.Logger) reindex.Options {
	return reindex.Options{ProgressInterval: 50 * time.Millisecond, CheckpointInterval: 20 * time.Millisecond,
		MaxRetryBackoff: 300 * time.Millisecond, SessionTTL: 2 * time.Second, BaselineBatch: 200, Logger: log}
}

// startWithSource starts a cluster (skipped in -short mode) with index
// "src" of the given shards and routing shards holding n documents, and
// returns it with the documents (id -> source).
func startWithSource(t *testing.T, shards, routingShards int32, n int) (*testCluster, map[string]string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	tc := startCluster(t)
	tc.createIndex("src", shards, routingShards)
	return tc, tc.load("src", n)
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc := &testCluster{t: t, dir: t.TempDir(), log: slog.New(slog.DiscardHandler)}
	var err error
	tc.dc, err = devcluster.Start(ctx, devcluster.Config{ClusterSettings: watermark.Ignored(), DataDir: tc.dir, Listen: "127.0.0.1:0", Nodes: 3,
		LeaseTTL: 2 * time.Second, Logger: tc.log, Tasks: taskOptions(tc.log)})
	if err != nil {
		t.Fatal(err)
	}
	tc.coord = tc.dc.Coordinator
	t.Cleanup(func() {
		tc.coord.Stop()
		tc.dc.Stop()
	})
	tc.dial()
	return tc
}

func (tc *testCluster) dial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, tc.coord.Addr())
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.cl = cl
	tc.t.Cleanup(func() { cl.Close() })
}

// restartCoordinator stops the coordinator (its task runner stops mid-task)
// and starts a new one on the same etcd.
func (tc *testCluster) restartCoordinator() {
	tc.coord.Stop()
	tc.startCoordinator()
}

// startCoordinator starts a new coordinator on the cluster's etcd.
func (tc *testCluster) startCoordinator() { tc.startCoordinatorWith(nil) }

// startCoordinatorWith starts a new coordinator on the cluster's etcd that
// reaches the data nodes at the given addresses through the given
// connections, the others over loopback.
func (tc *testCluster) startCoordinatorWith(local map[string]grpc.ClientConnInterface) {
	tc.gen++
	c, err := coordinator.New(coordinator.Config{ID: fmt.Sprintf("coordinator-r%d", tc.gen), Listen: "127.0.0.1:0",
		EtcdEndpoints: tc.dc.EtcdEndpoints(), Tasks: taskOptions(tc.log), LocalNodes: local,
		AllocatorSessionTTL: 2 * time.Second, Logger: tc.log})
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		tc.t.Fatal(err)
	}
	tc.coord = c
	tc.dial()
}

// addNode starts a data node that joins the cluster empty.
func (tc *testCluster) addNode(id string) {
	n, err := node.New(node.Config{ID: id, DataDir: filepath.Join(tc.dir, id), Listen: "127.0.0.1:0", EtcdEndpoints: tc.dc.EtcdEndpoints(),
		LeaseTTL: 2 * time.Second, Logger: tc.log})
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		tc.t.Fatal(err)
	}
	tc.dc.Nodes = append(tc.dc.Nodes, n)
}

// restartNode stops data node i (committing its shards, dropping its
// slices' streams and readers) and starts it again on its data dir.
func (tc *testCluster) restartNode(i int) {
	old := tc.dc.Nodes[i]
	id := old.ID()
	old.Stop()
	dir := filepath.Join(tc.dir, id)
	n, err := node.New(node.Config{ID: id, DataDir: dir, Listen: "127.0.0.1:0", EtcdEndpoints: tc.dc.EtcdEndpoints(),
		LeaseTTL: 2 * time.Second, Logger: tc.log})
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		tc.t.Fatal(err)
	}
	tc.dc.Nodes[i] = n
}

func (tc *testCluster) createIndex(name string, shards, routingShards int32) {
	tc.t.Helper()
	ctx := context.Background()
	if _, err := tc.cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: name, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: shards, NumberOfRoutingShards: routingShards}}); err != nil {
		tc.t.Fatal(err)
	}
	tc.waitGreen(name)
}

func (tc *testCluster) waitGreen(name string) {
	tc.t.Helper()
	h, err := tc.cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{name},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(30 * time.Second)})
	if err != nil || h.TimedOut {
		tc.t.Fatalf("index %s not green: %v %v", name, h, err)
	}
}

func docSource(i int) string {
	return fmt.Sprintf(`{"title":"document number %d about rivers","n":%d,"tag":"t%d"}`, i, i, i%4)
}

// docRouting is the custom routing doc-i is indexed with; "" for two in
// three docs (routed by _id).
func docRouting(i int) string {
	if i%3 != 1 {
		return ""
	}
	return fmt.Sprintf("tenant-%d", i%5)
}

// checkRouting checks that every doc of index reports the routing
// dest.routing gives it (of maps the source routing to it) and that a get
// with that routing finds it: it sits in the shard its routing maps to.
func (tc *testCluster) checkRouting(index string, of func(string) string) {
	tc.t.Helper()
	ctx := context.Background()
	got := map[string]string{}
	for _, d := range tc.scroll(index, false) {
		got[d.Id] = d.Routing
	}
	for id, r := range got {
		var i int
		if _, err := fmt.Sscanf(id, "doc-%d", &i); err != nil {
			tc.t.Fatalf("%s: unexpected doc %s", index, id)
		}
		want := of(docRouting(i))
		if r != want {
			tc.t.Fatalf("%s: %s has routing %q, want %q", index, id, r, want)
		}
		if want == "" {
			continue
		}
		g, err := tc.cl.Get(ctx, &sluicev1.GetRequest{Index: index, Id: id, Routing: want})
		if err != nil || !g.Found || g.Routing != want {
			tc.t.Fatalf("%s: get %s with routing %q: %v %v", index, id, want, g, err)
		}
	}
}

func keep(r string) string { return r }

// load bulk-indexes n docs and returns id -> source.
func (tc *testCluster) load(index string, n int) map[string]string {
	tc.t.Helper()
	want := map[string]string{}
	var items []*sluicev1.BulkItem
	for i := range n {
		id := fmt.Sprintf("doc-%05d", i)
		want[id] = docSource(i)
		items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: id, Source: []byte(docSource(i)), Routing: docRouting(i)})
	}
	for len(items) > 0 {
		batch := items[:min(500, len(items))]
		items = items[len(batch):]
		resp, err := tc.cl.Bulk(context.Background(), &sluicev1.BulkRequest{Index: index, Items: batch, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE})
		if err != nil || resp.Errors {
			tc.t.Fatalf("bulk: %v %v", err, resp)
		}
	}
	return want
}

// contents scrolls an index: id -> source, failing on a duplicate.
func (tc *testCluster) contents(index string) map[string]string {
	tc.t.Helper()
	ctx := context.Background()
	if _, err := tc.cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		tc.t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range tc.scroll(index, true) {
		if _, dup := got[d.Id]; dup {
			tc.t.Errorf("%s: doc %s twice", index, d.Id)
		}
		got[d.Id] = string(d.Source)
	}
	return got
}

// scroll reads every document of index.
func (tc *testCluster) scroll(index string, source bool) []*sluicev1.ScrollDoc {
	tc.t.Helper()
	st, err := tc.cl.Scroll(context.Background(), &sluicev1.ScrollRequest{Indices: []string{index}, FetchSource: proto.Bool(source)})
	if err != nil {
		tc.t.Fatal(err)
	}
	var docs []*sluicev1.ScrollDoc
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			tc.t.Fatal(err)
		}
		docs = append(docs, resp.Docs...)
	}
}

// exact checks that dest holds exactly want, with identical _source.
func (tc *testCluster) exact(dest string, want map[string]string) {
	tc.t.Helper()
	got := tc.contents(dest)
	if len(got) != len(want) {
		tc.t.Errorf("%s holds %d docs, want %d", dest, len(got), len(want))
	}
	bad := 0
	for id, src := range want {
		if got[id] != src && bad < 5 {
			bad++
			tc.t.Errorf("%s: %s = %q, want %q", dest, id, got[id], src)
		}
	}
}

func (tc *testCluster) reindex(req *sluicev1.ReindexRequest) *sluicev1.Task {
	tc.t.Helper()
	resp, err := tc.cl.Reindex(context.Background(), req)
	if err != nil {
		tc.t.Fatal(err)
	}
	return resp.Task
}

// wait waits for a task's end through GetTask (whatever coordinator is up).
func (tc *testCluster) wait(id string) *sluicev1.Task {
	tc.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := tc.cl.GetTask(context.Background(), &sluicev1.GetTaskRequest{Id: id, WaitForCompletion: true, Timeout: durationpb.New(5 * time.Second)})
		if err == nil && (resp.Task.State == sluicev1.TaskState_TASK_STATE_SUCCEEDED || resp.Task.State == sluicev1.TaskState_TASK_STATE_FAILED || resp.Task.State == sluicev1.TaskState_TASK_STATE_CANCELLED) {
			return resp.Task
		}
	}
	tc.t.Fatalf("task %s did not end", id)
	return nil
}

// waitProgress waits until a task has copied at least n docs.
func (tc *testCluster) waitProgress(id string, n int64) {
	tc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := tc.cl.GetTask(context.Background(), &sluicev1.GetTaskRequest{Id: id})
		if err != nil {
			tc.t.Fatal(err)
		}
		var copied int64
		for _, s := range resp.Task.Reindex.Slices {
			copied += s.Copied
		}
		if copied >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.t.Fatalf("task %s: no progress to %d docs", id, n)
}

func succeeded(t *testing.T, task *sluicev1.Task) {
	t.Helper()
	if task.State != sluicev1.TaskState_TASK_STATE_SUCCEEDED {
		t.Fatalf("task %s ended %v: %v", task.Id, task.State, task.Error)
	}
}

func TestReindexCluster(t *testing.T) {
	tc, want := startWithSource(t, 2, 4, 1500)

	t.Run("local exact", func(t *testing.T) {
		task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "local1"}}).Id)
		succeeded(t, task)
		if task.Reindex.Mode != sluicev1.ReindexMode_REINDEX_MODE_LOCAL || task.Reindex.Created != int64(len(want)) || task.Reindex.Total != int64(len(want)) {
			t.Errorf("status %v", task.Reindex)
		}
		tc.exact("local1", want)
		tc.checkRouting("local1", keep)
	})

	// Every document exists in local1: a create under conflicts=abort
	// ends the task ABORTED (the API's version-conflict code, fatal: no
	// retry), its counts the conflict included.
	t.Run("conflicts=abort", func(t *testing.T) {
		for _, mode := range []sluicev1.ReindexMode{sluicev1.ReindexMode_REINDEX_MODE_LOCAL, sluicev1.ReindexMode_REINDEX_MODE_BASELINE} {
			task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
				Dest:      &sluicev1.ReindexDestination{Index: "local1", OpType: sluicev1.BulkAction_BULK_ACTION_CREATE},
				Conflicts: sluicev1.ConflictPolicy_CONFLICT_POLICY_ABORT, Mode: mode}).Id)
			if task.State != sluicev1.TaskState_TASK_STATE_FAILED || codes.Code(task.GetError().GetCode()) != codes.Aborted ||
				!strings.Contains(task.GetError().GetReason(), "conflicts=abort") || task.GetReindex().GetVersionConflicts() < 1 {
				t.Errorf("%v: task %v, error %v, status %v", mode, task.State, task.GetError(), task.GetReindex())
			}
		}
	})

	t.Run("x2 shards stays local", func(t *testing.T) {
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest:   &sluicev1.ReindexDestination{Index: "local2", Settings: &sluicev1.IndexSettings{NumberOfShards: 4}},
			Slices: 4, Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL})
		// Every destination shard is placed on its source shard's node,
		// and pinned there with it until the task ends. Read at once, by
		// shard number: once the task has ended rebalancing may move them
		// (a relocation target is listed as one more copy).
		dest, src := tc.primaries("local2"), tc.primaries("src")
		for d, n := range dest {
			s, _ := routing.SourceShard(routing.Params{Shards: 2, RoutingShards: 4}, routing.Params{Shards: 4, RoutingShards: 4}, int(d))
			if n != src[int32(s)] {
				t.Errorf("destination shard %d on %s, its source shard %d on %s", d, n, s, src[int32(s)])
			}
		}
		succeeded(t, tc.wait(task.Id))
		tc.exact("local2", want)
		tc.checkRouting("local2", keep)
	})

	t.Run("copy method", func(t *testing.T) {
		ctx := context.Background()
		info, err := tc.cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "src"})
		if err != nil {
			t.Fatal(err)
		}
		// The source's mapping declared again (other JSON, same canonical
		// form), and one with another analyzer.
		same := proto.Clone(info.Index.Mapping).(*sluicev1.Mapping)
		other := proto.Clone(info.Index.Mapping).(*sluicev1.Mapping)
		other.Properties["title"] = &sluicev1.FieldMapping{Type: sluicev1.FieldType_FIELD_TYPE_TEXT, Analyzer: "whitespace"}
		segs := sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS
		docs := sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS
		q := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag", Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: "t2"}}}}}
		for _, tt := range []struct {
			name    string
			req     *sluicev1.ReindexRequest
			want    sluicev1.ReindexCopyMethod
			reason  string // in the fallback reason (AUTO) or the refusal (SEGMENTS)
			refused bool
		}{
			{name: "auto x1", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "seg1"}}, want: segs},
			{name: "segments x2", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "seg2",
				Settings: &sluicev1.IndexSettings{NumberOfShards: 4}, Mapping: same}, CopyMethod: segs}, want: segs},
			{name: "auto throttled", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "segrps"},
				RequestsPerSecond: 100000}, want: docs, reason: "requests_per_second"},
			{name: "auto other mapping", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "segmap", Mapping: other}},
				want: docs, reason: "mapping"},
			{name: "documents asked", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "segdocs"}, CopyMethod: docs}, want: docs},
			{name: "segments with a query", req: &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Query: q},
				Dest: &sluicev1.ReindexDestination{Index: "segq"}, CopyMethod: segs}, refused: true, reason: "query"},
			{name: "segments remote", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "segremote",
				Settings: &sluicev1.IndexSettings{NumberOfShards: 3}}, CopyMethod: segs}, refused: true, reason: "LOCAL"},
			{name: "segments discarding routing", req: &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "segdiscard",
				Routing: "discard"}, CopyMethod: segs}, refused: true, reason: "routing"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				req := tt.req
				if req.Source == nil {
					req.Source = &sluicev1.ReindexSource{}
				}
				req.Source.Index = "src"
				resp, err := tc.cl.Reindex(ctx, req)
				if tt.refused {
					if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.reason) {
						t.Fatalf("want INVALID_ARGUMENT naming %q, got %v", tt.reason, err)
					}
					if _, err := tc.cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: req.Dest.Index}); err == nil {
						t.Errorf("refused task left index %s behind", req.Dest.Index)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				task := tc.wait(resp.Task.Id)
				succeeded(t, task)
				st := task.Reindex
				if st.CopyMethod != tt.want || !strings.Contains(st.CopyMethodReason, tt.reason) || (tt.reason == "") != (st.CopyMethodReason == "") {
					t.Errorf("copy method %v (%q), want %v naming %q", st.CopyMethod, st.CopyMethodReason, tt.want, tt.reason)
				}
				for _, sl := range st.Slices {
					if sl.CopyMethod != tt.want {
						t.Errorf("slice %d copied %v, want %v", sl.Slice, sl.CopyMethod, tt.want)
					}
				}
				if st.Created != int64(len(want)) || st.Total != int64(len(want)) {
					t.Errorf("status %v", st)
				}
				t.Logf("%s: %v %q", tt.name, st.CopyMethod, st.CopyMethodReason)
				tc.exact(req.Dest.Index, want)
				tc.checkRouting(req.Dest.Index, keep)
			})
		}
	})

	t.Run("non-multiple goes remote", func(t *testing.T) {
		task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "remote3", Settings: &sluicev1.IndexSettings{NumberOfShards: 3}}}).Id)
		succeeded(t, task)
		if task.Reindex.Mode != sluicev1.ReindexMode_REINDEX_MODE_REMOTE {
			t.Errorf("mode %v", task.Reindex.Mode)
		}
		tc.exact("remote3", want)
		tc.checkRouting("remote3", keep)
	})

	t.Run("baseline", func(t *testing.T) {
		task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "base"}, Mode: sluicev1.ReindexMode_REINDEX_MODE_BASELINE}).Id)
		succeeded(t, task)
		tc.exact("base", want)
		tc.checkRouting("base", keep)
	})

	t.Run("dest routing discard and =value", func(t *testing.T) {
		// Routing replaced or dropped: documents leave their source
		// shard's destination shards, so verification counts in total.
		for _, tt := range []struct {
			dest, routing string
			mode          sluicev1.ReindexMode
			of            func(string) string
		}{
			{"discarded", "discard", sluicev1.ReindexMode_REINDEX_MODE_LOCAL, func(string) string { return "" }},
			{"fixed", "=fixed", sluicev1.ReindexMode_REINDEX_MODE_BASELINE, func(string) string { return "fixed" }},
		} {
			task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
				Dest: &sluicev1.ReindexDestination{Index: tt.dest, Routing: tt.routing}, Mode: tt.mode}).Id)
			succeeded(t, task)
			tc.exact(tt.dest, want)
			tc.checkRouting(tt.dest, tt.of)
		}
		if _, err := tc.cl.Reindex(context.Background(), &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "bad", Routing: "tenant"}}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("dest.routing without =: %v", err)
		}
	})

	t.Run("query and alias swap", func(t *testing.T) {
		if _, err := tc.cl.UpdateAliases(context.Background(), &sluicev1.UpdateAliasesRequest{Actions: []*sluicev1.AliasAction{
			{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "current", Index: "local1"}}}); err != nil {
			t.Fatal(err)
		}
		q := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag", Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: "t2"}}}}}
		task := tc.wait(tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src", Query: q},
			Dest: &sluicev1.ReindexDestination{Index: "filtered"}, SwapAlias: "current"}).Id)
		succeeded(t, task)
		sub := map[string]string{}
		for i := range len(want) {
			if i%4 == 2 {
				sub[fmt.Sprintf("doc-%05d", i)] = docSource(i)
			}
		}
		tc.exact("filtered", sub)
		a, err := tc.cl.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: "current"})
		if err != nil || a.Index.Name != "filtered" {
			t.Errorf("alias current -> %v (%v), want filtered alone", a, err)
		}
	})

	t.Run("verification fails loudly", func(t *testing.T) {
		// A document written into the (empty at the start) destination
		// during the copy makes its count disagree: the task fails with the
		// numbers and the alias stays where it was.
		tc.createIndex("verified", 2, 4)
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "verified"}, RequestsPerSecond: 300, SwapAlias: "current"})
		tc.waitProgress(task.Id, 1)
		if resp, err := tc.cl.Bulk(context.Background(), &sluicev1.BulkRequest{Index: "verified", Items: []*sluicev1.BulkItem{
			{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "intruder", Source: []byte(`{"title":"not from the source"}`)}}}); err != nil || resp.Errors {
			t.Fatal(err, resp)
		}
		if _, err := tc.cl.RethrottleTask(context.Background(), &sluicev1.RethrottleTaskRequest{Id: task.Id}); err != nil {
			t.Fatal(err)
		}
		end := tc.wait(task.Id)
		if end.State != sluicev1.TaskState_TASK_STATE_FAILED || !strings.Contains(end.GetError().GetReason(), "holds 1501") {
			t.Errorf("ended %v: %v", end.State, end.GetError())
		}
		t.Logf("verification failure: %s", end.GetError().GetReason())
		if a, err := tc.cl.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: "current"}); err != nil || a.Index.Name != "filtered" {
			t.Errorf("alias moved after a failed verification: %v %v", a.GetIndex().GetName(), err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "cancelled"}, RequestsPerSecond: 200})
		tc.waitProgress(task.Id, 1)
		start := time.Now()
		if _, err := tc.cl.CancelTask(context.Background(), &sluicev1.CancelTaskRequest{Id: task.Id}); err != nil {
			t.Fatal(err)
		}
		end := tc.wait(task.Id)
		if end.State != sluicev1.TaskState_TASK_STATE_CANCELLED || time.Since(start) > 10*time.Second {
			t.Errorf("cancel: %v after %v", end.State, time.Since(start))
		}
		if got := len(tc.contents("cancelled")); got == 0 || got >= len(want) {
			t.Errorf("cancelled copy holds %d of %d docs", got, len(want))
		}
		if _, err := tc.cl.RethrottleTask(context.Background(), &sluicev1.RethrottleTaskRequest{Id: task.Id}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("rethrottle of an ended task: %v", err)
		}
	})

	t.Run("rethrottle", func(t *testing.T) {
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "rethrottled"}, RequestsPerSecond: 20}) // 75 s at this rate
		tc.waitProgress(task.Id, 1)
		start := time.Now()
		if _, err := tc.cl.RethrottleTask(context.Background(), &sluicev1.RethrottleTaskRequest{Id: task.Id, RequestsPerSecond: 0}); err != nil {
			t.Fatal(err)
		}
		end := tc.wait(task.Id)
		succeeded(t, end)
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("finished %v after rethrottle to unlimited", el)
		}
		tc.exact("rethrottled", want)
	})

	t.Run("coordinator restart", func(t *testing.T) {
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest: &sluicev1.ReindexDestination{Index: "coordrestart"}, RequestsPerSecond: 500})
		tc.waitProgress(task.Id, 200)
		tc.restartCoordinator()
		if _, err := tc.cl.RethrottleTask(context.Background(), &sluicev1.RethrottleTaskRequest{Id: task.Id, RequestsPerSecond: 0}); err != nil {
			t.Fatal(err)
		}
		succeeded(t, tc.wait(task.Id))
		tc.exact("coordrestart", want)
	})

	t.Run("node restart", func(t *testing.T) {
		task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
			Dest:              &sluicev1.ReindexDestination{Index: "noderestart", Settings: &sluicev1.IndexSettings{NumberOfShards: 3}},
			RequestsPerSecond: 500})
		tc.waitProgress(task.Id, 200)
		info, err := tc.cl.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: "src"})
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range tc.dc.Nodes {
			if n.ID() == info.Index.Shards[0].NodeId {
				tc.restartNode(i)
			}
		}
		tc.waitGreen("src")
		if _, err := tc.cl.RethrottleTask(context.Background(), &sluicev1.RethrottleTaskRequest{Id: task.Id, RequestsPerSecond: 0}); err != nil {
			t.Fatal(err)
		}
		end := tc.wait(task.Id)
		succeeded(t, end)
		tc.exact("noderestart", want)
		t.Logf("after node restart: %v", end.Reindex)
		for _, sl := range end.Reindex.Slices {
			if sl.Restarts != 0 {
				t.Errorf("slice %d started over %d times after its node restarted; want a resume from its checkpoint", sl.Slice, sl.Restarts)
			}
		}
	})
}

// etcdClient is a client of the cluster's etcd, closed at the test's end.
func (tc *testCluster) etcdClient() *clientv3.Client {
	tc.t.Helper()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: tc.dc.EtcdEndpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { etcd.Close() })
	return etcd
}

// primaries maps each shard of an index to the node of its primary.
func (tc *testCluster) primaries(index string) map[int32]string {
	tc.t.Helper()
	info, err := tc.cl.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: index})
	if err != nil {
		tc.t.Fatal(err)
	}
	out := map[int32]string{}
	for _, sh := range info.Index.Shards {
		if sh.Primary {
			out[sh.Shard] = sh.NodeId
		}
	}
	return out
}

// A node joins while a local reindex is under way (accepted, its
// destination created next to its source, the task runner held off by the
// test holding the runner election, as a runner failover would): another
// index's primaries (no replicas) rebalance onto the new node, nothing of
// it lost, while the reindex's source and destination primaries, pinned
// by the task, stay where they are; the runner then copies by segments,
// every slice reporting SEGMENTS, and the copy is exact.
func TestReindexPinsAgainstRebalancing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx := context.Background()
	tc := startCluster(t)
	tc.createIndex("other", 6, 0)
	wantOther := tc.load("other", 600)
	tc.createIndex("src", 3, 0)
	want := tc.load("src", 1500)

	// Hold the task runner's election: the coordinator that runs tasks
	// stops, the test campaigns, a new coordinator starts (it allocates,
	// and accepts tasks, but does not run them while the test leads).
	etcd := tc.etcdClient()
	tc.coord.Stop()
	sess, err := concurrency.NewSession(etcd, concurrency.WithTTL(2))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	runner := concurrency.NewElection(sess, state.NewKeys("").Prefix+"election/reindex")
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := runner.Campaign(cctx, "test"); err != nil {
		t.Fatal(err)
	}
	tc.startCoordinator()

	task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"}, Dest: &sluicev1.ReindexDestination{Index: "pinned"}})
	if task.Reindex.CopyMethod != sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS {
		t.Fatalf("planned %v (%s), want SEGMENTS", task.Reindex.CopyMethod, task.Reindex.CopyMethodReason)
	}
	tc.waitGreen("pinned")
	srcAt, destAt := tc.primaries("src"), tc.primaries("pinned")
	for sh, n := range srcAt {
		if destAt[sh] != n {
			t.Fatalf("destination shard %d on %s, its source on %s: not co-located at the start", sh, destAt[sh], n)
		}
	}

	tc.addNode("node-4")
	// Other's primaries move to node-4, one at a time per round; wait
	// until the cluster has settled (no move in 3 s).
	var onNew int
	settled := time.Now()
	last := ""
	for deadline := time.Now().Add(60 * time.Second); time.Since(settled) < 3*time.Second; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no settled rebalance onto node-4: other on %v", tc.primaries("other"))
		}
		h, err := tc.cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		now := fmt.Sprint(tc.primaries("other"), h.RelocatingShards, h.Status)
		if now != last || h.RelocatingShards > 0 || h.Status != sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
			last, settled = now, time.Now()
		}
		onNew = 0
		for _, n := range tc.primaries("other") {
			if n == "node-4" {
				onNew++
			}
		}
		if onNew == 0 {
			settled = time.Now()
		}
	}
	t.Logf("other's primaries on node-4: %d of 6", onNew)
	if got := tc.primaries("src"); fmt.Sprint(got) != fmt.Sprint(srcAt) {
		t.Errorf("the source's primaries moved while pinned: %v, were %v", got, srcAt)
	}
	if got := tc.primaries("pinned"); fmt.Sprint(got) != fmt.Sprint(destAt) {
		t.Errorf("the destination's primaries moved while pinned: %v, were %v", got, destAt)
	}
	tc.exact("other", wantOther)

	// Let the runner run the task.
	if err := runner.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	end := tc.wait(task.Id)
	succeeded(t, end)
	if end.Reindex.CopyMethod != sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS {
		t.Errorf("task copied %v", end.Reindex.CopyMethod)
	}
	for _, sl := range end.Reindex.Slices {
		if sl.CopyMethod != sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS {
			t.Errorf("slice %d copied %v, want SEGMENTS", sl.Slice, sl.CopyMethod)
		}
	}
	tc.exact("pinned", want)
	tc.exact("other", wantOther)
}

// A local reindex whose destination primaries move while it copies (its
// pins deleted as they are written, a node joining so the allocator
// rebalances them): the documents copied before a move went into the old
// primary, those after into the new one. Right after the task succeeds a
// search (no refresh asked) and a scroll after a refresh both count every
// document — the verification's count is what a search sees.
func TestReindexDestinationMovesWhileCopying(t *testing.T) {
	ctx := context.Background()
	tc, want := startWithSource(t, 2, 4, 1500)

	etcd := tc.etcdClient()
	// Throttled (documents, a few seconds) and sub-sliced as the x2
	// subtest of TestReindexCluster.
	task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
		Dest:   &sluicev1.ReindexDestination{Index: "moved", Settings: &sluicev1.IndexSettings{NumberOfShards: 4}},
		Slices: 4, Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL, RequestsPerSecond: 250})
	destAt := tc.primaries("moved")
	stop := make(chan struct{})
	unpinned := make(chan struct{})
	go func() {
		defer close(unpinned)
		for {
			_, _ = etcd.Delete(ctx, state.NewKeys("").Pins(), clientv3.WithPrefix())
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	tc.addNode("node-4")
	end := tc.wait(task.Id)
	close(stop)
	<-unpinned
	succeeded(t, end)
	// At once, as a client would: a search, then a refresh and a scroll.
	resp, err := tc.cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"moved"}, Size: proto.Int32(0), TrackTotalHits: -1})
	if err != nil {
		t.Fatal(err)
	}
	movedTo := tc.primaries("moved")
	t.Logf("destination primaries %v at the start, %v at the end; search counted %d", destAt, movedTo, resp.GetTotal().GetValue())
	if resp.GetTotal().GetValue() != int64(len(want)) {
		t.Errorf("search right after the task counted %d documents, want %d (shards %v)", resp.GetTotal().GetValue(), len(want), resp.GetShards())
	}
	tc.exact("moved", want)
	if fmt.Sprint(destAt) == fmt.Sprint(movedTo) {
		t.Logf("no destination primary moved during this run")
	}
}

// lateSliceConn is a coordinator's connection to a data node whose
// RunReindexSlice streams start only when gate closes, as on a loaded
// machine where the slice is not yet running on its node when a rethrottle
// reaches that node. It reports each stream it holds back (started) and
// whether each RethrottleReindexSlice found its slice (found).
type lateSliceConn struct {
	grpc.ClientConnInterface
	gate    <-chan struct{}
	started chan<- struct{}
	found   chan<- bool
}

func (c lateSliceConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if method == nodev1.Reindex_RunReindexSlice_FullMethodName {
		c.started <- struct{}{}
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.ClientConnInterface.NewStream(ctx, desc, method, opts...)
}

func (c lateSliceConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	if r, ok := reply.(*nodev1.RethrottleReindexSliceResponse); ok && err == nil {
		select {
		case c.found <- r.GetFound():
		default:
		}
	}
	return err
}

// TestRethrottleReachesSlicesNotYetRunning: a rethrottle that reaches a
// slice's node before the slice runs there (its RunReindexSlice stream
// still starting) applies all the same: the slice does not keep the rate
// it was started with.
func TestRethrottleReachesSlicesNotYetRunning(t *testing.T) {
	ctx := context.Background()
	tc, want := startWithSource(t, 3, 0, 1500)

	gate, started, found := make(chan struct{}), make(chan struct{}, 100), make(chan bool, 1000)
	local := map[string]grpc.ClientConnInterface{}
	for _, n := range tc.dc.Nodes {
		local[n.Advertise()] = lateSliceConn{ClientConnInterface: n.Local(), gate: gate, started: started, found: found}
	}
	tc.coord.Stop()
	tc.startCoordinatorWith(local)

	const slow = 20 // docs/s: 75 s for the 1500 docs
	task := tc.reindex(&sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
		Dest: &sluicev1.ReindexDestination{Index: "late"}, RequestsPerSecond: slow})
	for range 3 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the slices did not start")
		}
	}
	if _, err := tc.cl.RethrottleTask(ctx, &sluicev1.RethrottleTaskRequest{Id: task.Id, RequestsPerSecond: 0}); err != nil {
		t.Fatal(err)
	}
	// The rethrottle reaches the nodes while no slice runs there.
	for range 3 {
		select {
		case f := <-found:
			if f {
				t.Fatal("a rethrottle found a slice whose stream is held back")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no rethrottle reached the nodes")
		}
	}
	close(gate)
	// Unthrottled the copy takes a second or two even under -race on a
	// busy machine; a slice left at its share of 20 docs/s takes 75 s.
	resp, err := tc.cl.GetTask(ctx, &sluicev1.GetTaskRequest{Id: task.Id, WaitForCompletion: true, Timeout: durationpb.New(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if end := resp.Task; end.State != sluicev1.TaskState_TASK_STATE_SUCCEEDED {
		t.Fatalf("30 s after the slices started, rethrottled to unlimited before: task %v, %v, slices %v", end.State, end.Error, end.Reindex.Slices)
	}
	tc.exact("late", want)
}
