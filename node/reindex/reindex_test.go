package reindex_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/nodetest"
	"github.com/sluice-search/sluice/node/reindex"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// testNode is a node's shard host and reindex runner, and a client of its
// services.
type testNode struct {
	host   *shard.Host
	runner *reindex.Runner
	addr   string
	client nodev1.ReindexClient
}

// startNode starts a real data node (node.New) whose slices checkpoint
// often, with small batches and two writers.
func startNode(t *testing.T) *testNode {
	t.Helper()
	n := nodetest.Start(t, nil, node.Config{Reindex: reindex.Options{CheckpointInterval: 10 * time.Millisecond, Workers: 2, BatchDocs: 50}})
	return &testNode{host: n.Shards(), runner: n.Reindex(), addr: n.Advertise(), client: nodev1.NewReindexClient(n.Conn)}
}

// open opens shards of an index with the test documents' mapping.
func (n *testNode) open(t *testing.T, uuid, name string, shards ...int) {
	t.Helper()
	for _, s := range shards {
		if _, err := n.host.Open(context.Background(), shard.Meta{ID: shard.ID{IndexUUID: uuid, Shard: s}, Index: name, Mapping: nodetest.Mapping(t)}); err != nil {
			t.Fatal(err)
		}
	}
}

func docSource(i int) string {
	return fmt.Sprintf(`{"title":"document number %d","n":%d,"tag":"t%d"}`, i, i, i%3)
}

// load indexes n docs into the source shards (held by nodes[shard]) as the
// data path routes them, refreshes, and returns id -> source.
func load(t *testing.T, nodes []*testNode, uuid string, p routing.Params, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	want := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("d%05d", i)
		s := routing.Shard(id, p)
		sh, err := nodes[s].host.Get(shard.ID{IndexUUID: uuid, Shard: s})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sh.IndexDoc(ctx, []byte(id), []byte(docSource(i)), false); err != nil {
			t.Fatal(err)
		}
		want[id] = docSource(i)
	}
	for s := range p.Shards {
		sh, _ := nodes[s].host.Get(shard.ID{IndexUUID: uuid, Shard: s})
		if err := sh.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

type destDoc struct {
	shard   int
	source  string
	routing string
}

// contents refreshes the destination shards and reads every live doc.
func contents(t *testing.T, nodes []*testNode, uuid string, shards int) map[string]destDoc {
	t.Helper()
	got := map[string]destDoc{}
	for d := range shards {
		var sh *shard.Shard
		for _, n := range nodes {
			if s, err := n.host.Get(shard.ID{IndexUUID: uuid, Shard: d}); err == nil {
				sh = s
			}
		}
		if sh == nil {
			t.Fatalf("destination shard %d is open nowhere", d)
		}
		if err := sh.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		rd := sh.Acquire()
		var sd index.StoredDoc
		for _, l := range rd.Leaves() {
			st := l.Reader.StoredFields()
			for doc := range l.Reader.MaxDoc() {
				if l.Live != nil && !l.Live.Get(doc) {
					continue
				}
				if err := st.Document(doc, &sd); err != nil {
					t.Fatal(err)
				}
				if prev, dup := got[string(sd.ID)]; dup {
					t.Errorf("doc %s twice: shards %d and %d", sd.ID, prev.shard, d)
				}
				got[string(sd.ID)] = destDoc{d, string(sd.Source), string(sd.Routing)}
			}
		}
		rd.Release()
	}
	return got
}

// runSlice runs a slice to its end and returns its last message and the
// number of messages.
func runSlice(ctx context.Context, c nodev1.ReindexClient, req *nodev1.RunReindexSliceRequest) (*nodev1.RunReindexSliceResponse, int, error) {
	st, err := c.RunReindexSlice(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	var last *nodev1.RunReindexSliceResponse
	n := 0
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return last, n, nil
		}
		if err != nil {
			return last, n, err
		}
		last, n = m, n+1
	}
}

func sliceReq(srcUUID string, s int, dstUUID string, dst routing.Params, nodes map[int32]string) *nodev1.RunReindexSliceRequest {
	return &nodev1.RunReindexSliceRequest{TaskId: "t1", Slice: int32(s),
		Source:        &nodev1.ShardID{IndexUuid: srcUUID, Shard: int32(s)},
		DestIndexUuid: dstUUID, DestIndex: "dst", DestShards: int32(dst.Shards), DestRoutingShards: int32(dst.RoutingShards),
		DestNodes: nodes}
}

func TestLocalCopy(t *testing.T) {
	// One node holds every source and destination shard: every write is
	// in-process. With the destination at x1 and x2 shards (same routing
	// shards), each destination shard's docs come from one source shard.
	tests := []struct {
		name string
		dst  int
	}{{"same shards", 2}, {"x2 shards", 4}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			n := startNode(t)
			srcP := routing.Params{Shards: 2, RoutingShards: 4}
			dstP := routing.Params{Shards: tt.dst, RoutingShards: 4}
			n.open(t, "src", "src", 0, 1)
			for d := range tt.dst {
				n.open(t, "dst", "dst", d)
			}
			want := load(t, []*testNode{n, n}, "src", srcP, 700)
			var copied int64
			for s := range 2 {
				last, msgs, err := runSlice(ctx, n.client, sliceReq("src", s, "dst", dstP, nil))
				if err != nil {
					t.Fatal(err)
				}
				if !last.Done || last.Copied != last.Total || last.Created != last.Total || last.Restarted {
					t.Errorf("slice %d: last message %v", s, last)
				}
				if msgs < 1 {
					t.Errorf("slice %d: %d messages", s, msgs)
				}
				copied += last.Copied
			}
			got := contents(t, []*testNode{n}, "dst", tt.dst)
			if copied != int64(len(want)) || len(got) != len(want) {
				t.Fatalf("copied %d, destination holds %d, source %d", copied, len(got), len(want))
			}
			for id, src := range want {
				g := got[id]
				if g.source != src {
					t.Errorf("%s: _source %q, want %q", id, g.source, src)
				}
				if g.shard != routing.Shard(id, dstP) {
					t.Errorf("%s: in destination shard %d, routes to %d", id, g.shard, routing.Shard(id, dstP))
				}
				if ss, err := routing.SourceShard(srcP, dstP, g.shard); err != nil || ss != routing.Shard(id, srcP) {
					t.Errorf("%s: destination shard %d draws from source %d (%v), doc came from %d", id, g.shard, ss, err, routing.Shard(id, srcP))
				}
			}
			if k := n.runner.KeptReaders(); k != 0 {
				t.Errorf("%d readers kept after finished slices", k)
			}
		})
	}
}

func TestRemoteCopy(t *testing.T) {
	// 2 source shards into 3 destination shards spread over two nodes: most
	// documents stream to the other node through ShardIngest.
	ctx := context.Background()
	a, b := startNode(t), startNode(t)
	srcP := routing.Params{Shards: 2, RoutingShards: 2}
	dstP := routing.Params{Shards: 3, RoutingShards: 3}
	a.open(t, "src", "src", 0)
	b.open(t, "src", "src", 1)
	a.open(t, "dst", "dst", 0)
	b.open(t, "dst", "dst", 1, 2)
	addrs := map[int32]string{0: a.addr, 1: b.addr, 2: b.addr}
	want := load(t, []*testNode{a, b}, "src", srcP, 600)
	var total int64
	for s, n := range []*testNode{a, b} {
		last, _, err := runSlice(ctx, n.client, sliceReq("src", s, "dst", dstP, addrs))
		if err != nil {
			t.Fatal(err)
		}
		if !last.Done || last.Created != last.Total {
			t.Errorf("slice %d: %v", s, last)
		}
		total += last.Total
	}
	got := contents(t, []*testNode{a, b}, "dst", 3)
	if total != int64(len(want)) || len(got) != len(want) {
		t.Fatalf("total %d, destination %d, source %d", total, len(got), len(want))
	}
	for id, src := range want {
		if got[id].source != src || got[id].shard != routing.Shard(id, dstP) {
			t.Errorf("%s: got %+v", id, got[id])
		}
	}
}

func TestResume(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	p := routing.Params{Shards: 1, RoutingShards: 1}
	n.open(t, "src", "src", 0)
	n.open(t, "dst", "dst", 0)
	want := load(t, []*testNode{n}, "src", p, 500)

	// First run: stop after the first checkpoint (a throttle makes sure
	// there is one before the end).
	req := sliceReq("src", 0, "dst", p, nil)
	req.RequestsPerSecond = 2000
	rctx, cancel := context.WithCancel(ctx)
	st, err := n.client.RunReindexSlice(rctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if first.Done || first.Copied == 0 {
		t.Fatalf("first checkpoint %v", first)
	}
	waitFor(t, func() bool { return n.runner.KeptReaders() == 1 })

	// Resume in the kept reader: the two runs add up to the whole slice.
	req.RequestsPerSecond = 0
	req.Cursor = first.Cursor
	last, _, err := runSlice(ctx, n.client, req)
	if err != nil {
		t.Fatal(err)
	}
	if last.Restarted || first.Copied+last.Copied != int64(len(want)) || !last.Done {
		t.Errorf("resumed: first %d + rest %d (restarted %v), want %d", first.Copied, last.Copied, last.Restarted, len(want))
	}

	// A new runner (as after a node restart) on an unchanged shard resumes
	// by position: same fingerprint.
	r2 := reindex.NewRunner(n.host, nil, node.Errors, reindex.Options{CheckpointInterval: time.Hour})
	fs := &fakeStream{ctx: ctx}
	if err := r2.RunReindexSlice(&nodev1.RunReindexSliceRequest{Source: req.Source, DestIndexUuid: "dst", DestShards: 1,
		DestRoutingShards: 1, Cursor: first.Cursor}, fs); err != nil {
		t.Fatal(err)
	}
	if m := fs.last(); m.Restarted || m.Copied != int64(len(want))-first.Copied {
		t.Errorf("new runner, same layout: %v", m)
	}

	// After the source changed, the old position means nothing: start over.
	src, _ := n.host.Get(shard.ID{IndexUUID: "src", Shard: 0})
	if _, err := src.IndexDoc(ctx, []byte("new"), []byte(`{"title":"new"}`), false); err != nil {
		t.Fatal(err)
	}
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fs = &fakeStream{ctx: ctx}
	if err := r2.RunReindexSlice(&nodev1.RunReindexSliceRequest{Source: req.Source, DestIndexUuid: "dst", DestShards: 1,
		DestRoutingShards: 1, Cursor: first.Cursor}, fs); err != nil {
		t.Fatal(err)
	}
	if m := fs.last(); !m.Restarted || m.Copied != int64(len(want))+1 || m.Created != 1 {
		t.Errorf("changed source: %v", m)
	}
	if got := contents(t, []*testNode{n}, "dst", 1); len(got) != len(want)+1 {
		t.Errorf("destination holds %d docs, want %d", len(got), len(want)+1)
	}
}

// TestResumeAfterCrash: a source shard whose documents were refreshed but
// never committed is committed when a slice starts, so the node's crash
// image (its files on disk, as after SIGKILL: the last commit plus the
// translog) reopens with the same segments and the slice resumes by
// position rather than starting over.
func TestResumeAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	host, err := shard.NewHost(shard.HostOptions{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer host.CloseAll(ctx)
	n := &testNode{host: host, runner: reindex.NewRunner(host, nil, node.Errors, reindex.Options{CheckpointInterval: 10 * time.Millisecond})}
	defer n.runner.Close()
	p := routing.Params{Shards: 1, RoutingShards: 1}
	n.open(t, "src", "src", 0)
	n.open(t, "dst", "dst", 0)
	want := load(t, []*testNode{n}, "src", p, 500) // refreshed, not committed
	// A second segment: replaying the translog would make one.
	src, _ := host.Get(shard.ID{IndexUUID: "src"})
	for i := range 100 {
		id := fmt.Sprintf("e%05d", i)
		if _, err := src.IndexDoc(ctx, []byte(id), []byte(docSource(i)), false); err != nil {
			t.Fatal(err)
		}
		want[id] = docSource(i)
	}
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	req := &nodev1.RunReindexSliceRequest{Source: &nodev1.ShardID{IndexUuid: "src"}, DestIndexUuid: "dst",
		DestShards: 1, DestRoutingShards: 1, RequestsPerSecond: 2000}
	rctx, cancel := context.WithCancel(ctx)
	fs := &fakeStream{ctx: rctx, onSend: cancel} // stop after the first checkpoint
	_ = n.runner.RunReindexSlice(req, fs)
	first := fs.last()
	if first == nil || first.Done || first.Copied == 0 {
		t.Fatalf("first checkpoint %v", first)
	}

	// The crash image: what is on disk now, opened by a new node.
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	host2, err := shard.NewHost(shard.HostOptions{DataDir: crashed, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer host2.CloseAll(ctx)
	n2 := &testNode{host: host2, runner: reindex.NewRunner(host2, nil, node.Errors, reindex.Options{CheckpointInterval: time.Hour})}
	defer n2.runner.Close()
	for _, uuid := range []string{"src", "dst"} {
		// The mapping with its dynamic updates, as etcd would hand it over.
		sh, err := host.Get(shard.ID{IndexUUID: uuid})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := host2.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: uuid}, Index: uuid, Mapping: sh.Mapping()}); err != nil {
			t.Fatal(err)
		}
	}
	req.RequestsPerSecond, req.Cursor = 0, first.Cursor
	fs = &fakeStream{ctx: ctx}
	if err := n2.runner.RunReindexSlice(req, fs); err != nil {
		t.Fatal(err)
	}
	if m := fs.last(); m.Restarted || !m.Done || m.Copied != int64(len(want))-first.Copied {
		t.Errorf("after the crash: restarted %v, copied %d, want %d resumed from the checkpoint", m.Restarted, m.Copied, int64(len(want))-first.Copied)
	}
	if got := contents(t, []*testNode{n2}, "dst", 1); len(got) != len(want) {
		t.Errorf("destination holds %d docs, want %d", len(got), len(want))
	}
}

func TestRethrottleTakesEffectAtOnce(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	p := routing.Params{Shards: 1, RoutingShards: 1}
	n.open(t, "src", "src", 0)
	n.open(t, "dst", "dst", 0)
	load(t, []*testNode{n}, "src", p, 300)
	req := sliceReq("src", 0, "dst", p, nil)
	req.RequestsPerSecond = 1 // 300 s at this rate
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, _, err := runSlice(ctx, n.client, req)
		done <- err
	}()
	var found bool
	waitFor(t, func() bool {
		r, err := n.client.RethrottleReindexSlice(ctx, &nodev1.RethrottleReindexSliceRequest{TaskId: "t1", Slice: 0, RequestsPerSecond: 0})
		found = err == nil && r.Found
		return found
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("slice still throttled after rethrottle to unlimited")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	r, err := n.client.RethrottleReindexSlice(ctx, &nodev1.RethrottleReindexSliceRequest{TaskId: "t1", Slice: 0})
	if err != nil || r.Found {
		t.Errorf("rethrottle of a finished slice: %v %v", r, err)
	}
}

func TestConflictsAndFilters(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	p := routing.Params{Shards: 1, RoutingShards: 1}
	n.open(t, "src", "src", 0)
	n.open(t, "dst", "dst", 0)
	n.open(t, "dst2", "dst2", 0)
	want := load(t, []*testNode{n}, "src", p, 300)
	for _, uuid := range []string{"dst", "dst2"} {
		dst, _ := n.host.Get(shard.ID{IndexUUID: uuid, Shard: 0})
		for _, id := range []string{"d00001", "d00002", "d00003"} {
			if _, err := dst.IndexDoc(ctx, []byte(id), []byte(`{"title":"already here"}`), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	req := sliceReq("src", 0, "dst", p, nil)
	req.OpType = sluicev1.BulkAction_BULK_ACTION_CREATE
	// The aborted slice reports its counts, the conflict among them,
	// with the version-conflict code (Elasticsearch's 409).
	if last, _, err := runSlice(ctx, n.client, req); status.Code(err) != codes.Aborted || !errors.Is(errorOf(err), reindex.ErrConflictAbort) {
		t.Fatalf("create with conflicts=abort: %v", err)
	} else if last.GetVersionConflicts() < 1 {
		t.Errorf("the aborted slice's last report: %v", last)
	}
	// The aborted run wrote some documents already; proceed into a fresh copy.
	req.ProceedOnConflicts = true
	req.TaskId, req.DestIndexUuid = "t2", "dst2"
	last, _, err := runSlice(ctx, n.client, req)
	if err != nil {
		t.Fatal(err)
	}
	if last.VersionConflicts != 3 || last.Copied != 300 {
		t.Errorf("proceed: %v", last)
	}
	if g := contents(t, []*testNode{n}, "dst2", 1)["d00002"].source; g != `{"title":"already here"}` {
		t.Errorf("create overwrote an existing doc: %s", g)
	}

	// Sub-slices partition a shard; a query filters it; max_docs caps it.
	var sum int64
	for sub := range 3 {
		r := sliceReq("src", 0, "dst", p, nil)
		r.TaskId, r.SubSlice = fmt.Sprintf("sub%d", sub), &sluicev1.Slice{Id: int32(sub), Max: 3}
		last, _, err := runSlice(ctx, n.client, r)
		if err != nil {
			t.Fatal(err)
		}
		if last.Total == 0 || last.Total == int64(len(want)) {
			t.Errorf("sub-slice %d selects %d of %d", sub, last.Total, len(want))
		}
		sum += last.Total
	}
	if sum != int64(len(want)) {
		t.Errorf("sub-slices select %d docs, shard has %d", sum, len(want))
	}
	r := sliceReq("src", 0, "dst", p, nil)
	r.TaskId = "q"
	r.Query = &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag", Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: "t1"}}}}}
	if last, _, err := runSlice(ctx, n.client, r); err != nil || last.Total != 100 {
		t.Errorf("query tag=t1: %v %v, want 100 docs", last, err)
	}
	r.TaskId, r.Query, r.MaxDocs = "max", nil, 42
	if last, _, err := runSlice(ctx, n.client, r); err != nil || last.Total != 42 || last.Copied != 42 {
		t.Errorf("max_docs 42: %v %v", last, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeStream collects a slice's messages when calling the Runner directly.
type fakeStream struct {
	grpc.ServerStream
	ctx    context.Context
	msgs   []*nodev1.RunReindexSliceResponse
	onSend func() // called after each message, e.g. to stop the run
}

func (f *fakeStream) Context() context.Context { return f.ctx }
func (f *fakeStream) Send(m *nodev1.RunReindexSliceResponse) error {
	f.msgs = append(f.msgs, m)
	if f.onSend != nil {
		f.onSend()
	}
	return nil
}
func (f *fakeStream) last() *nodev1.RunReindexSliceResponse {
	if len(f.msgs) == 0 {
		return nil
	}
	return f.msgs[len(f.msgs)-1]
}

// TestRoutedCopy: documents indexed with a custom routing are copied to
// the destination shard their routing maps to, with the routing stored,
// so a get with the routing finds them there — locally and through
// ShardIngest — unless the request discards or replaces the routing.
func TestRoutedCopy(t *testing.T) {
	tests := []struct {
		name    string
		remote  bool
		routing string
		// want is the destination routing of a doc stored with routing r.
		want func(r string) string
	}{
		{"local keep", false, "", func(r string) string { return r }},
		{"local discard", false, "discard", func(string) string { return "" }},
		{"local value", false, "=fixed", func(string) string { return "fixed" }},
		{"remote keep", true, "keep", func(r string) string { return r }},
		{"remote value", true, "=fixed", func(string) string { return "fixed" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			a := startNode(t)
			nodes := []*testNode{a, a}
			srcP := routing.Params{Shards: 2, RoutingShards: 4}
			dstP := routing.Params{Shards: 4, RoutingShards: 4}
			var addrs map[int32]string
			a.open(t, "src", "src", 0, 1)
			if tt.remote {
				b := startNode(t)
				nodes = []*testNode{a, b}
				dstP = routing.Params{Shards: 3, RoutingShards: 3}
				b.open(t, "src", "src", 1)
				a.open(t, "dst", "dst", 0)
				b.open(t, "dst", "dst", 1, 2)
				addrs = map[int32]string{0: a.addr, 1: b.addr, 2: b.addr}
			} else {
				a.open(t, "dst", "dst", 0, 1, 2, 3)
			}
			// Two of three docs routed by tenant: their source shard is
			// the tenant's, not their id's.
			stored := map[string]string{}
			for i := range 300 {
				id := fmt.Sprintf("d%05d", i)
				key, r := id, ""
				if i%3 != 0 {
					r = fmt.Sprintf("tenant-%d", i%7)
					key = r
				}
				s := routing.Shard(key, srcP)
				sh, err := nodes[s].host.Get(shard.ID{IndexUUID: "src", Shard: s})
				if err != nil {
					t.Fatal(err)
				}
				res, err := sh.Bulk(ctx, []shard.Op{{Kind: shard.OpIndex, ID: []byte(id), Routing: []byte(r), Source: []byte(docSource(i))}}, shard.RefreshNone)
				if err == nil {
					err = res[0].Err
				}
				if err != nil {
					t.Fatal(err)
				}
				stored[id] = r
			}
			for s := range srcP.Shards {
				sh, _ := nodes[s].host.Get(shard.ID{IndexUUID: "src", Shard: s})
				if err := sh.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for s, n := range nodes {
				req := sliceReq("src", s, "dst", dstP, addrs)
				req.Routing = tt.routing
				if last, _, err := runSlice(ctx, n.client, req); err != nil || !last.Done || last.Created != last.Total {
					t.Fatalf("slice %d: %v %v", s, last, err)
				}
			}
			got := contents(t, nodes, "dst", dstP.Shards)
			if len(got) != len(stored) {
				t.Fatalf("destination holds %d docs, source %d", len(got), len(stored))
			}
			for id, r := range stored {
				wantR := tt.want(r)
				key := id
				if wantR != "" {
					key = wantR
				}
				g := got[id]
				if g.routing != wantR || g.shard != routing.Shard(key, dstP) {
					t.Fatalf("%s (source routing %q): in shard %d with routing %q, want shard %d routing %q", id, r, g.shard, g.routing, routing.Shard(key, dstP), wantR)
				}
			}
			// A get with the routing goes to routing.Shard(routing) and
			// finds the doc there.
			for id, r := range stored {
				if r == "" || tt.want(r) != r {
					continue
				}
				d := routing.Shard(r, dstP)
				var sh *shard.Shard
				for _, n := range nodes {
					if s, err := n.host.Get(shard.ID{IndexUUID: "dst", Shard: d}); err == nil {
						sh = s
					}
				}
				doc, found, err := sh.Get(ctx, []byte(id), false)
				if err != nil || !found || string(doc.Routing) != r {
					t.Fatalf("get %s with routing %s (shard %d): found=%v routing %q, %v", id, r, d, found, doc.Routing, err)
				}
			}
		})
	}
}

// TestSegmentCopy: a slice asked for SEGMENTS adds its source shard's
// segments into each co-located destination shard (x1 and x2 shards):
// every live doc (deleted ones excluded) once, with its _source and
// routing, found by a get with the routing; a rerun of the slice adds
// nothing twice; a destination whose mapping differs makes the slice copy
// documents instead, saying why.
func TestSegmentCopy(t *testing.T) {
	tests := []struct {
		name       string
		dstShards  int
		otherMap   bool // destination mapping differs from the source's
		lateOpen   bool // destination shard 1 opens while its slice runs, as after a restart
		wantMethod sluicev1.ReindexCopyMethod
	}{
		{"x1", 2, false, false, sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS},
		{"x2", 4, false, false, sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS},
		{"x2 other mapping", 4, true, false, sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS},
		{"x2 destination opens late", 4, false, true, sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			n := startNode(t)
			srcP := routing.Params{Shards: 2, RoutingShards: 4}
			dstP := routing.Params{Shards: tt.dstShards, RoutingShards: 4}
			n.open(t, "src", "src", 0, 1)
			stored := map[string]string{} // id -> routing of live docs
			for i := range 400 {
				id := fmt.Sprintf("d%05d", i)
				key, r := id, ""
				if i%3 != 0 {
					r = fmt.Sprintf("tenant-%d", i%7)
					key = r
				}
				sh, err := n.host.Get(shard.ID{IndexUUID: "src", Shard: routing.Shard(key, srcP)})
				if err != nil {
					t.Fatal(err)
				}
				res, err := sh.Bulk(ctx, []shard.Op{{Kind: shard.OpIndex, ID: []byte(id), Routing: []byte(r), Source: []byte(docSource(i))}}, shard.RefreshNone)
				if err == nil {
					err = res[0].Err
				}
				if err != nil {
					t.Fatal(err)
				}
				stored[id] = r
				if i%100 == 99 {
					if err := sh.Refresh(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := 0; i < 400; i += 9 { // deletes in the source
				id := fmt.Sprintf("d%05d", i)
				key := id
				if stored[id] != "" {
					key = stored[id]
				}
				sh, _ := n.host.Get(shard.ID{IndexUUID: "src", Shard: routing.Shard(key, srcP)})
				if _, err := sh.DeleteDoc(ctx, []byte(id)); err != nil {
					t.Fatal(err)
				}
				delete(stored, id)
			}
			src0, _ := n.host.Get(shard.ID{IndexUUID: "src"})
			m := src0.Mapping()
			if tt.otherMap {
				// title a keyword rather than text: the same documents fit,
				// analysed otherwise.
				var err error
				if m, err = mapping.New(mapping.DynamicDefault, map[string]mapping.Field{"title": mapping.NewField(document.Keyword),
					"n": mapping.NewField(document.Long), "tag": mapping.NewField(document.Keyword)}); err != nil {
					t.Fatal(err)
				}
			}
			late := make(chan error, 1)
			for d := range tt.dstShards {
				meta := shard.Meta{ID: shard.ID{IndexUUID: "dst", Shard: d}, Index: "dst", Mapping: m}
				if tt.lateOpen && d == 1 {
					go func() {
						time.Sleep(300 * time.Millisecond)
						_, err := n.host.Open(ctx, meta)
						late <- err
					}()
					continue
				}
				if _, err := n.host.Open(ctx, meta); err != nil {
					t.Fatal(err)
				}
			}
			run := func() int64 {
				var copied int64
				for s := range srcP.Shards {
					req := sliceReq("src", s, "dst", dstP, nil)
					req.CopyMethod = sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS
					req.SourceShards = int32(srcP.Shards)
					last, _, err := runSlice(ctx, n.client, req)
					if err != nil {
						t.Fatal(err)
					}
					if !last.Done || last.Copied != last.Total || last.CopyMethod != tt.wantMethod ||
						(tt.wantMethod == sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS) != (last.CopyMethodReason != "") {
						t.Fatalf("slice %d: last message %v", s, last)
					}
					copied += last.Copied
				}
				return copied
			}
			check := func(stage string, copied int64) {
				got := contents(t, []*testNode{n}, "dst", dstP.Shards)
				if copied != int64(len(stored)) || len(got) != len(stored) {
					t.Fatalf("%s: copied %d, destination holds %d, source %d live", stage, copied, len(got), len(stored))
				}
				for id, r := range stored {
					key := id
					if r != "" {
						key = r
					}
					g := got[id]
					if g.routing != r || g.shard != routing.Shard(key, dstP) || g.source != docSource(mustAtoi(t, id[1:])) {
						t.Fatalf("%s: %s in shard %d routing %q, want shard %d routing %q", stage, id, g.shard, g.routing, routing.Shard(key, dstP), r)
					}
					sh, _ := n.host.Get(shard.ID{IndexUUID: "dst", Shard: routing.Shard(key, dstP)})
					doc, found, err := sh.Get(ctx, []byte(id), false)
					if err != nil || !found || string(doc.Routing) != r {
						t.Fatalf("%s: get %s: found=%v routing %q, %v", stage, id, found, doc.Routing, err)
					}
				}
			}
			check("first run", run())
			if tt.lateOpen {
				if err := <-late; err != nil {
					t.Fatal(err)
				}
			}
			check("rerun", run())
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCopyCarriesInPlaceUpdates: after in-place doc-values updates in the
// source, both copies serve the updated values — a segment copy through
// the linked generation files (its _source is the original, as in the
// source), a document copy by re-indexing the current values into
// _source — never the stale ones from _source.
func TestCopyCarriesInPlaceUpdates(t *testing.T) {
	price := mapping.NewField(document.Long)
	price.Index = false // doc values only: updatable in place
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{
		"title": mapping.NewField(document.Text), "price": price})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []sluicev1.ReindexCopyMethod{sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS, sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS} {
		t.Run(method.String(), func(t *testing.T) {
			ctx := context.Background()
			n := startNode(t)
			p := routing.Params{Shards: 1, RoutingShards: 1}
			open := func(uuid string) *shard.Shard {
				sh, err := n.host.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: uuid}, Index: uuid, Mapping: m})
				if err != nil {
					t.Fatal(err)
				}
				return sh
			}
			src, dst := open("src"), open("dst")
			bulk := func(ops ...shard.Op) {
				t.Helper()
				res, err := src.Bulk(ctx, ops, shard.RefreshImmediate)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if r.Err != nil {
						t.Fatal(r.Err)
					}
				}
			}
			var ops []shard.Op
			for i := range 50 {
				ops = append(ops, shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "d%d", i), Source: fmt.Appendf(nil, `{"title":"doc %d","price":%d}`, i, i)})
			}
			bulk(ops...)
			bulk(shard.Op{Kind: shard.OpUpdateDocValues, ID: []byte("d7"), Source: []byte(`{"price":700}`)},
				shard.Op{Kind: shard.OpUpdateDocValues, ID: []byte("d9"), Source: []byte(`{"price":900}`)})
			req := sliceReq("src", 0, "dst", p, nil)
			req.CopyMethod, req.SourceShards = method, 1
			last, _, err := runSlice(ctx, n.client, req)
			if err != nil {
				t.Fatal(err)
			}
			if !last.Done || last.Copied != 50 || last.CopyMethod != method {
				t.Fatalf("last message %v", last)
			}
			if err := dst.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			rd := dst.Acquire()
			defer rd.Release()
			got := map[string]int64{}
			sources := map[string]string{}
			var sd index.StoredDoc
			for _, l := range rd.Leaves() {
				dv := l.Reader.NumericDocValues("price")
				for doc := range l.Reader.MaxDoc() {
					if err := l.Reader.StoredFields().Document(doc, &sd); err != nil {
						t.Fatal(err)
					}
					v, _ := dv.Get(doc)
					got[string(sd.ID)], sources[string(sd.ID)] = v, string(sd.Source)
				}
			}
			for id, want := range map[string]int64{"d7": 700, "d9": 900, "d8": 8} {
				if got[id] != want {
					t.Errorf("%s: price %d in the copy, want %d", id, got[id], want)
				}
			}
			wantSrc := `{"title":"doc 7","price":7}`
			if method == sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS {
				wantSrc = `{"title":"doc 7","price":700}`
			}
			if sources["d7"] != wantSrc {
				t.Errorf("d7: _source %s, want %s", sources["d7"], wantSrc)
			}
		})
	}
}

// errorOf is a node's status error as its text, for errors.Is on a
// sentinel's message.
func errorOf(err error) error {
	if err != nil && strings.Contains(status.Convert(err).Message(), reindex.ErrConflictAbort.Error()) {
		return reindex.ErrConflictAbort
	}
	return err
}

// TestUpdateAbortsOnConflict: an update-by-query slice under
// conflicts=abort that finds a document written since its reader ends
// with ABORTED (the version-conflict code), after reporting its final
// counts: the updates before the conflict and the conflict itself.
func TestUpdateAbortsOnConflict(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	p := routing.Params{Shards: 1, RoutingShards: 1}
	price := mapping.NewField(document.Long)
	price.Index = false // in place: doc values only
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{
		"title": mapping.NewField(document.Text), "n": mapping.NewField(document.Long), "tag": mapping.NewField(document.Keyword), "price": price})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.host.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "src", Shard: 0}, Index: "src", Mapping: m}); err != nil {
		t.Fatal(err)
	}
	const docs = 100
	load(t, []*testNode{n}, "src", p, docs)
	req := sliceReq("src", 0, "src", p, nil)
	req.UpdateDocValues = []byte(`{"price":7}`)
	req.RequestsPerSecond = 50 // two seconds: time to write the last document meanwhile
	st, err := n.client.RunReindexSlice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if first.GetCopied() >= docs-1 {
		t.Fatalf("the slice went too fast to race: %v", first)
	}
	sh, _ := n.host.Get(shard.ID{IndexUUID: "src", Shard: 0})
	if _, err := sh.IndexDoc(ctx, []byte(fmt.Sprintf("d%05d", docs-1)), []byte(docSource(1)), false); err != nil {
		t.Fatal(err)
	}
	last := first
	for {
		m, err := st.Recv()
		if err != nil {
			if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "conflicts=abort") || strings.Contains(err.Error(), "already exists") {
				t.Fatalf("slice ended with %v, want ABORTED for the conflict", err)
			}
			break
		}
		last = m
	}
	if last.GetVersionConflicts() != 1 || last.GetUpdated() != docs-1 || last.GetDone() {
		t.Errorf("last report %v: want the %d updates and the conflict", last, docs-1)
	}
}
