package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// replicated is a test cluster of data nodes holding one index with
// replicas.
type replicated struct {
	e     *env
	nodes map[string]*Node
	dirs  map[string]string
	uuid  string
	// cfg is what every node starts with (DataDir and ID set per node).
	cfg Config
}

// newReplicated starts n nodes and creates index x (one shard, replicas),
// and waits for it to be green.
func newReplicated(t *testing.T, n int, replicas int32) *replicated {
	t.Helper()
	return newReplicatedWith(t, n, replicas, nil)
}

func newReplicatedWith(t *testing.T, n int, replicas int32, m *sluicev1.Mapping) *replicated {
	t.Helper()
	return newReplicatedCfg(t, n, replicas, m, Config{})
}

// newReplicatedCfg is newReplicatedWith with nodes configured by cfg.
func newReplicatedCfg(t *testing.T, n int, replicas int32, m *sluicev1.Mapping, cfg Config) *replicated {
	t.Helper()
	fastRetries(t)
	rc := &replicated{e: newEnv(t), nodes: map[string]*Node{}, dirs: map[string]string{}, cfg: cfg}
	for i := range n {
		rc.start(t, fmt.Sprintf("n%d", i+1), "")
	}
	info, err := rc.e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x",
		Settings: &sluicev1.IndexSettings{NumberOfReplicas: replicas}, Mapping: m}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.uuid = info.Uuid
	rc.waitGreen(t)
	return rc
}

// start starts node id (on its old data dir, if it had one).
func (rc *replicated) start(t *testing.T, id, _ string) *Node {
	t.Helper()
	dir := rc.dirs[id]
	if dir == "" {
		dir = t.TempDir()
		rc.dirs[id] = dir
	}
	cfg := rc.cfg
	cfg.DataDir, cfg.ID = dir, id
	n := rc.e.startNodeWith(t, cfg, nil)
	rc.nodes[id] = n
	t.Cleanup(n.Stop)
	return n
}

func (rc *replicated) waitGreen(t *testing.T) *sluicev1.IndexInfo {
	t.Helper()
	return rc.e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return started(sh) && sh.InSync })
}

// copies returns the primary's and a replica's node ids.
func (rc *replicated) copies(t *testing.T) (primary, replica string, term int64) {
	t.Helper()
	info, err := rc.e.md.GetIndex(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range info.Shards {
		if sh.Primary {
			primary, term = sh.NodeId, sh.PrimaryTerm
		} else if replica == "" {
			replica = sh.NodeId
		}
	}
	return primary, replica, term
}

func (rc *replicated) shard(t *testing.T, node string) *shard.Shard {
	t.Helper()
	s, err := rc.nodes[node].Shards().Get(shard.ID{IndexUUID: rc.uuid})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bulkOps(from, to int) []shard.Op {
	var ops []shard.Op
	for i := from; i < to; i++ {
		ops = append(ops, shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "d%d", i), Source: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	return ops
}

func mustBulk(t *testing.T, s *shard.Shard, ops []shard.Op, refresh shard.Refresh) {
	t.Helper()
	res, err := s.Bulk(context.Background(), ops, refresh)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("op %d: %v", i, r.Err)
		}
	}
}

// TestReplicaRecoversAndFollows: a replica copy recovers from its primary
// (files, then operations), joins the in-sync set, is started (green);
// every acknowledged operation is in its translog before the bulk
// returns, and refresh=wait_for returns only once the replica's searches
// show the writes (checkpoint published, files fetched).
func TestReplicaRecoversAndFollows(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	if p == "" || r == "" || p == r {
		t.Fatalf("primary on %q, replica on %q", p, r)
	}
	primary, replica := rc.shard(t, p), rc.shard(t, r)
	if primary.Replica() != nil || replica.Replica() == nil {
		t.Fatalf("primary's shard replica=%v, replica's replica=%v", primary.Replica() != nil, replica.Replica() != nil)
	}
	mustBulk(t, primary, bulkOps(0, 50), shard.RefreshNone)
	// Durable on the replica when acknowledged: its translog holds them.
	if st := replica.Replica().State(); st.LocalCheckpoint < 50 || st.MaxSeqNo < 50 {
		t.Fatalf("replica after 50 acknowledged ops: %+v", st)
	}
	mustBulk(t, primary, bulkOps(50, 100), shard.RefreshWaitFor)
	rd := replica.Acquire()
	docs := rd.NumDocs()
	rd.Release()
	if docs != 100 {
		t.Fatalf("replica shows %d docs after refresh=wait_for, want 100", docs)
	}
	if doc, found, err := replica.Get(context.Background(), []byte("d77"), false); err != nil || !found || string(doc.Source) != `{"n":77}` {
		t.Fatalf("get on the replica: %q %v %v", doc.Source, found, err)
	}
	// Writes reaching a replica are refused, retryably.
	if _, err := replica.Bulk(context.Background(), bulkOps(0, 1), shard.RefreshNone); Errors.Code(err) != codes.Unavailable {
		t.Fatalf("bulk on a replica: %v (%v)", err, Errors.Code(err))
	}
}

// TestRefreshShowsOnReplicas: the refresh API on a primary returns only
// once its in-sync replicas show what it made visible, so a search after
// a refresh sees every write whichever copy answers it.
func TestRefreshShowsOnReplicas(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	primary, replica := rc.shard(t, p), rc.shard(t, r)
	for round := 1; round <= 5; round++ {
		mustBulk(t, primary, bulkOps((round-1)*40, round*40), shard.RefreshNone)
		if err := primary.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		rd := replica.Acquire()
		docs := rd.NumDocs()
		rd.Release()
		if docs != round*40 {
			t.Fatalf("round %d: replica shows %d docs right after the primary's refresh, want %d", round, docs, round*40)
		}
	}
}

// TestReplicaFencesOldTerm: a replica refuses operations from a primary
// of an older term than it knows, with FAILED_PRECONDITION, and appends
// nothing; GetCopyState reports its real state.
func TestReplicaFencesOldTerm(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, term := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 10), shard.RefreshNone)
	info, _ := rc.e.md.GetIndex(context.Background(), "x")
	var alloc string
	for _, sh := range info.Shards {
		if !sh.Primary {
			alloc = sh.AllocationId
		}
	}
	conn, err := rc.nodes[p].peers.Node(r)
	if err != nil {
		t.Fatal(err)
	}
	c := nodev1.NewReplicationClient(conn)
	ctx := context.Background()
	id := &nodev1.ShardID{IndexUuid: rc.uuid}
	cs, err := c.GetCopyState(ctx, &nodev1.GetCopyStateRequest{Shard: id, AllocationId: alloc})
	if err != nil || cs.PrimaryTerm != term || cs.LocalCheckpoint != 10 || cs.MaxSeqNo != 10 {
		t.Fatalf("copy state %v, %v; want term %d, checkpoints 10", cs, err, term)
	}
	if _, err := c.GetCopyState(ctx, &nodev1.GetCopyStateRequest{Shard: id, AllocationId: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("copy state of another allocation: %v", err)
	}
	op := &nodev1.ReplicatedOp{SeqNo: 11, PrimaryTerm: term + 1, Type: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX, Id: []byte("z"), Source: []byte(`{}`)}
	// A newer term is adopted...
	if _, err := c.ReplicateOps(ctx, &nodev1.ReplicateOpsRequest{Shard: id, AllocationId: alloc, PrimaryTerm: term + 1, Ops: []*nodev1.ReplicatedOp{op}}); err != nil {
		t.Fatal(err)
	}
	// ...and the old primary's next operations are refused.
	op = &nodev1.ReplicatedOp{SeqNo: 12, PrimaryTerm: term, Type: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX, Id: []byte("y"), Source: []byte(`{}`)}
	_, err = c.ReplicateOps(ctx, &nodev1.ReplicateOpsRequest{Shard: id, AllocationId: alloc, PrimaryTerm: term, Ops: []*nodev1.ReplicatedOp{op}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("old term's ops: %v, want FAILED_PRECONDITION", err)
	}
	if st := rc.shard(t, r).Replica().State(); st.MaxSeqNo != 11 || st.Term != term+1 {
		t.Fatalf("replica after fencing: %+v", st)
	}
}

// TestFailedReplicaLeavesInSyncBeforeAck: a replica that cannot take an
// operation is out of the in-sync set in etcd when the bulk returns
// acknowledged; the index is yellow, never claiming a copy it is not.
func TestFailedReplicaLeavesInSyncBeforeAck(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	rc.e.stopAllocator() // only the primary changes the in-sync set now
	rc.nodes[r].Stop()
	mustBulk(t, rc.shard(t, p), bulkOps(0, 5), shard.RefreshNone)
	st, err := rc.e.store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rt := st.ByUUID[rc.uuid].Shards[0].Routing
	if len(rt.InSync) != 1 || state.Primary(rt).GetAllocationId() != rt.InSync[0] {
		t.Fatalf("in-sync set after acknowledging with a dead replica: %v (primary %s)", rt.InSync, state.Primary(rt).GetAllocationId())
	}
}

// TestPromotionKeepsAcknowledged: the primary's node goes; the allocator
// promotes the in-sync replica at a new term, which holds every
// acknowledged operation (replayed from its translog), takes writes, and
// the old node, back, recovers as a replica: green again.
func TestPromotionKeepsAcknowledged(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, term := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 200), shard.RefreshNone)
	rc.nodes[p].Stop()
	s := rc.waitPrimary(t, r, term)
	for i := range 200 {
		if _, found, err := s.Get(context.Background(), fmt.Appendf(nil, "d%d", i), true); err != nil || !found {
			t.Fatalf("acknowledged d%d after promotion: %v %v", i, found, err)
		}
	}
	mustBulk(t, s, bulkOps(200, 220), shard.RefreshNone)
	rc.start(t, p, "")
	info := rc.waitGreenWithin(t, 30*time.Second)
	if len(info.Shards) != 2 {
		t.Fatalf("copies %v", info.Shards)
	}
	_, back, _ := rc.copies(t)
	rep := rc.shard(t, back)
	if rep.Replica() == nil {
		t.Fatalf("the returned node's copy is not a replica")
	}
	mustBulk(t, s, bulkOps(220, 230), shard.RefreshWaitFor)
	rd := rep.Acquire()
	defer rd.Release()
	if rd.NumDocs() != 230 {
		t.Fatalf("recovered replica shows %d docs, want 230", rd.NumDocs())
	}
}

// waitPrimary waits for node r's copy to be promoted past term, and
// returns it.
func (rc *replicated) waitPrimary(t *testing.T, r string, term int64) *shard.Shard {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		np, _, nt := rc.copies(t)
		if np == r && nt > term {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no promotion: primary %s term %d", np, nt)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		s, err := rc.nodes[r].Shards().Get(shard.ID{IndexUUID: rc.uuid})
		if err == nil && s.Primary() {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's copy never became a primary: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (rc *replicated) waitGreenWithin(t *testing.T, d time.Duration) *sluicev1.IndexInfo {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		info, err := rc.e.md.GetIndex(context.Background(), "x")
		if err == nil && info.Health == sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("not green within %v: %v", d, info.GetShards())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDocValuesUpdateReplicated: an in-place doc-values update reaches
// the replica's translog like any write, and the promoted replica holds
// the updated value.
func TestDocValuesUpdateReplicated(t *testing.T) {
	off := false
	rc := newReplicatedWith(t, 2, 1, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"price": {Type: sluicev1.FieldType_FIELD_TYPE_LONG, Index: &off}}})
	p, r, term := rc.copies(t)
	primary := rc.shard(t, p)
	mustBulk(t, primary, []shard.Op{{Kind: shard.OpIndex, ID: []byte("a"), Source: []byte(`{"price":1}`)}}, shard.RefreshWaitFor)
	mustBulk(t, primary, []shard.Op{{Kind: shard.OpUpdateDocValues, ID: []byte("a"), Source: []byte(`{"price":42}`)}}, shard.RefreshNone)
	if st := rc.shard(t, r).Replica().State(); st.LocalCheckpoint != 2 {
		t.Fatalf("replica after the update: %+v, want local checkpoint 2", st)
	}
	rc.nodes[p].Stop()
	s := rc.waitPrimary(t, r, term)
	rd := s.Acquire()
	defer rd.Release()
	if got := docValue(t, rd, "a", "price"); got != 42 {
		t.Fatalf("price after promotion %d, want 42", got)
	}
}

// docValue is the numeric doc value of field of the live doc with id.
func docValue(t *testing.T, rd *engine.Reader, id, field string) int64 {
	t.Helper()
	leaf, doc, ok := rd.LookupID([]byte(id))
	if !ok {
		t.Fatalf("doc %s not found", id)
	}
	dv := rd.Leaves()[leaf].Reader.NumericDocValues(field)
	if dv == nil {
		t.Fatalf("no doc values for %s", field)
	}
	v, ok := dv.Get(doc)
	if !ok {
		t.Fatalf("doc %s has no %s", id, field)
	}
	return v
}

// TestFailedReplicaRecoversAndRejoins: a replica removed from the in-sync
// set (FAILED by its primary) while its node was away recovers when the
// node is back — its retried open is a recovery — and rejoins the set:
// green again, with the writes it missed.
func TestFailedReplicaRecoversAndRejoins(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	rc.e.stopAllocator() // the copy stays FAILED, as the primary left it
	rc.nodes[r].Stop()
	mustBulk(t, rc.shard(t, p), bulkOps(0, 30), shard.RefreshNone)
	rc.e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return sh.Primary || sh.State == sluicev1.ShardState_SHARD_STATE_FAILED && !sh.InSync
	})
	rc.start(t, r, "")
	rc.waitGreenWithin(t, 30*time.Second)
	mustBulk(t, rc.shard(t, p), bulkOps(30, 40), shard.RefreshWaitFor)
	rd := rc.shard(t, r).Acquire()
	defer rd.Release()
	if rd.NumDocs() != 40 {
		t.Fatalf("rejoined replica shows %d docs, want 40", rd.NumDocs())
	}
}

// TestConflictingReplicaRecoversFromScratch: a replica whose primary lost
// its files rejoins with the primary's data only. The primary reopened
// in the same term once, reusing segment names the replica's last commit
// held with other bytes, so the replica had to start again from nothing
// (engine.ErrFileConflict; that fallback is kept, and tested in the
// engine); reopened at term + 1 (state.Store.ActivatePrimary) it names
// its segments from the new term's range, and the replica's recovery
// replaces what it had.
func TestConflictingReplicaRecoversFromScratch(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	rc.e.stopAllocator()
	mustBulk(t, rc.shard(t, p), bulkOps(0, 10), shard.RefreshWaitFor)
	if _, err := rc.shard(t, r).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.nodes[r].Stop()
	rc.nodes[p].Stop()
	if err := os.RemoveAll(filepath.Join(rc.dirs[p], rc.uuid, "0")); err != nil {
		t.Fatal(err)
	}
	rc.start(t, p, "")
	rc.e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return sh.Primary && started(sh) || sh.State == sluicev1.ShardState_SHARD_STATE_FAILED
	})
	ops := []shard.Op{{Kind: shard.OpIndex, ID: []byte("other"), Source: []byte(`{"n":-1}`)}}
	mustBulk(t, rc.shard(t, p), ops, shard.RefreshWaitFor)
	rc.start(t, r, "")
	rc.waitGreenWithin(t, 30*time.Second)
	rd := rc.shard(t, r).Acquire()
	defer rd.Release()
	if _, _, ok := rd.LookupID([]byte("other")); !ok || rd.NumDocs() != 1 {
		t.Fatalf("replica after recovering from scratch: %d docs, other found %v; want the primary's 1", rd.NumDocs(), ok)
	}
}

// TestAddIndexesDurableOnReplicas: segments a primary adds outside its
// translog (AddIndexes) are committed on every in-sync copy when
// AddIndexes returns — no operation could bring them back — so a replica
// that crashes right after (closed without a commit) and reopens from its
// disk still holds the added docs, as it must if it is to be promoted
// once the primary is lost.
func TestAddIndexesDurableOnReplicas(t *testing.T) {
	ctx := context.Background()
	rc := newReplicated(t, 2, 1)
	p, r, _ := rc.copies(t)
	info, err := rc.e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "src"}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.e.waitShards(t, "src", started)
	var src *shard.Shard
	for _, n := range rc.nodes {
		if s, err := n.Shards().Get(shard.ID{IndexUUID: info.Uuid}); err == nil {
			src = s
		}
	}
	if src == nil {
		t.Fatal("source shard not open on any node")
	}
	mustBulk(t, src, bulkOps(0, 30), shard.RefreshImmediate)
	rd := src.Acquire()
	defer rd.Release()
	res, err := rc.shard(t, p).AddIndexes(ctx, rd, engine.AddIndexesOptions{Marker: "test/0"})
	if err != nil || res.Docs != 30 {
		t.Fatalf("AddIndexes: %+v %v", res, err)
	}
	// The replica crashes: its engine closes without a commit.
	rs := rc.shard(t, r)
	if err := rs.Replica().Close(ctx); err != nil {
		t.Fatal(err)
	}
	parser, err := engine.NewMappingParser(rs.Mapping())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := engine.OpenReplica(ctx, engine.Options{Path: rc.nodes[r].Shards().Path(rs.ID()),
		Parser: parser, RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close(ctx)
	got := rep.Acquire()
	defer got.Release()
	if n := got.NumDocs(); n != 30 {
		t.Fatalf("replica reopened from disk after AddIndexes: %d docs, want the 30 added", n)
	}
}
