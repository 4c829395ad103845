package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator/allocator"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

type env struct {
	c     *clientv3.Client
	store *state.Store
	md    *metadata.Service
	// stopAllocator stops the allocator: routing entries then change only
	// by the nodes' reports.
	stopAllocator func()
}

// newEnv starts etcd and an allocator (as a coordinator would run it).
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, etcdtest.New(t))
}

// newEnvOn is newEnv on the etcd c talks to.
func newEnvOn(t *testing.T, c *clientv3.Client) *env {
	t.Helper()
	store := state.NewStore(c, "")
	var tx state.Txn // the host's disk must not decide placement
	tx.Put(store.Keys.Settings(), &statev1.ClusterSettings{Settings: watermark.Ignored()})
	if err := store.Commit(context.Background(), &tx); err != nil {
		t.Fatal(err)
	}
	cache := state.NewCache(store, quiet())
	a := allocator.New(allocator.Config{Store: store, Cache: cache, ID: "c", SessionTTL: time.Second,
		Interval: 100 * time.Millisecond, Logger: quiet()})
	ctx, cancel := context.WithCancel(context.Background())
	actx, acancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { cache.Run(ctx); done <- struct{}{} }()
	go func() { a.Run(actx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &env{c: c, store: store, md: metadata.New(store), stopAllocator: acancel}
}

// startNode starts a node on dir; wrap, if set, wraps the shards its
// routing reconciler drives.
func (e *env) startNode(t *testing.T, dir string, wrap func(shardSet) shardSet) *Node {
	t.Helper()
	return e.startNodeWith(t, Config{DataDir: dir}, wrap)
}

// startNodeWith starts a node configured by cfg on the test's etcd.
func (e *env) startNodeWith(t *testing.T, cfg Config, wrap func(shardSet) shardSet) *Node {
	t.Helper()
	cfg.Listen, cfg.Etcd, cfg.LeaseTTL, cfg.Logger = "127.0.0.1:0", e.c, 2*time.Second, quiet()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		n.routing.host = wrap(n.routing.host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) waitShards(t *testing.T, name string, pred func(*sluicev1.ShardRouting) bool) *sluicev1.IndexInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var info *sluicev1.IndexInfo
	for time.Now().Before(deadline) {
		var err error
		info, err = e.md.GetIndex(context.Background(), name)
		if err == nil {
			ok := true
			for _, sh := range info.Shards {
				ok = ok && pred(sh)
			}
			if ok {
				return info
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("index %s: shards never matched; last %v", name, info.GetShards())
	return nil
}

func started(sh *sluicev1.ShardRouting) bool {
	return sh.State == sluicev1.ShardState_SHARD_STATE_STARTED
}

func TestNodeOpensReportsAndDeletes(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	n := e.startNode(t, dir, nil)
	ctx := context.Background()
	info, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	for i := range 2 {
		if _, err := os.Stat(n.Shards().Path(shard.ID{IndexUUID: info.Uuid, Shard: i})); err != nil {
			t.Errorf("shard dir: %v", err)
		}
	}
	if len(n.routing.openShards()) != 2 {
		t.Errorf("open shards %v", n.routing.openShards())
	}
	if _, err := e.md.DeleteIndex(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(dir, info.Uuid))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index dir not deleted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.Stop()
}

func TestNodeReRegistersAndRecoversShards(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	n := e.startNode(t, dir, nil)
	ctx := context.Background()
	if _, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.waitShards(t, "x", started)
	// Revoke the node's lease: the key vanishes, the allocator marks the
	// shard NODE_LEFT, the node registers again and reports it STARTED,
	// all without restarting.
	if _, err := e.c.Revoke(ctx, n.Registration().Lease()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Registration().Count() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n.Registration().Count() < 2 {
		t.Fatal("node did not re-register")
	}
	after := e.waitShards(t, "x", started)
	if after.Shards[0].NodeId != n.ID() || after.Shards[0].AllocationId != before.Shards[0].AllocationId {
		t.Errorf("shard moved: %v -> %v", before.Shards[0], after.Shards[0])
	}

	// A restart on the same data dir is the same node and gets its shard back.
	id := n.ID()
	n.Stop()
	e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return sh.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT })
	n2 := e.startNode(t, dir, nil)
	defer n2.Stop()
	if n2.ID() != id {
		t.Errorf("restarted node id %s, want %s", n2.ID(), id)
	}
	e.waitShards(t, "x", started)
}

type failingShards struct{ shardSet }

func (failingShards) openShard(context.Context, *statev1.Index, state.ShardID, copyRole, *engine.Recovery) error {
	return errors.New("disk on fire")
}

func TestOpenFailureIsReported(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, t.TempDir(), func(s shardSet) shardSet { return failingShards{s} })
	defer n.Stop()
	if _, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return sh.State == sluicev1.ShardState_SHARD_STATE_FAILED
	})
	if !strings.Contains(info.Shards[0].Reason, "disk on fire") {
		t.Errorf("reason %q", info.Shards[0].Reason)
	}
}

func TestDataDirIdentity(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		want    string
		wantErr bool
	}{
		{"node-a", false}, // first start stores it
		{"", false},       // later starts read it
		{"node-a", false},
		{"node-b", true}, // the disk belongs to node-a
	}
	for _, tt := range tests {
		id, err := loadNodeID(dir, tt.want)
		if (err != nil) != tt.wantErr || (!tt.wantErr && id != "node-a") {
			t.Errorf("loadNodeID(%q) = %q, %v", tt.want, id, err)
		}
	}
	l1, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil {
		t.Error("a second lock on the data dir succeeded")
	}
	l1.Release()
	l2, err := lockDataDir(dir)
	if err != nil {
		t.Errorf("lock after release: %v", err)
	} else {
		l2.Release()
	}
}

// countingShards fails opens while fail says so, counting them.
type countingShards struct {
	shardSet
	opens *atomic.Int32
	fail  func(n int32) bool
}

func (s countingShards) openShard(ctx context.Context, info *statev1.Index, id state.ShardID, role copyRole, rec *engine.Recovery) error {
	if n := s.opens.Add(1); s.fail(n) {
		return fmt.Errorf("disk full (open %d)", n)
	}
	return s.shardSet.openShard(ctx, info, id, role, rec)
}

func counting(opens *atomic.Int32, fail func(n int32) bool) func(shardSet) shardSet {
	return func(s shardSet) shardSet { return countingShards{s, opens, fail} }
}

func fastRetries(t *testing.T) {
	old := openRetryBase
	openRetryBase = 20 * time.Millisecond
	t.Cleanup(func() { openRetryBase = old })
}

// TestFailedOpenIsRetried: a shard whose open fails is FAILED, then opened
// by a later attempt and STARTED, with no operator involved.
func TestFailedOpenIsRetried(t *testing.T) {
	fastRetries(t)
	e := newEnv(t)
	dir := t.TempDir()
	var opens atomic.Int32
	n := e.startNode(t, dir, counting(&opens, func(n int32) bool { return n <= 2 }))
	defer n.Stop()
	if _, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	if got := opens.Load(); got != 3 {
		t.Errorf("%d opens, want 3 (two failures, then success)", got)
	}
}

// TestFailedOpenGivesUp: a shard that never opens is tried maxOpenAttempts
// times, stays FAILED with the last reason, and a node restart tries again.
func TestFailedOpenGivesUp(t *testing.T) {
	fastRetries(t)
	e := newEnv(t)
	dir := t.TempDir()
	var opens atomic.Int32
	always := func(int32) bool { return true }
	n := e.startNode(t, dir, counting(&opens, always))
	if _, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return sh.State == sluicev1.ShardState_SHARD_STATE_FAILED && strings.Contains(sh.Reason, "attempt 5 of 5")
	})
	if r := info.Shards[0].Reason; !strings.Contains(r, "disk full (open 5)") || !strings.Contains(r, "restart the node") {
		t.Errorf("reason %q", r)
	}
	time.Sleep(20 * openRetryBase) // well past every backoff
	if got := opens.Load(); got != maxOpenAttempts {
		t.Errorf("%d opens, want %d", got, maxOpenAttempts)
	}
	n.Stop()
	n2 := e.startNode(t, dir, counting(&opens, func(n int32) bool { return n <= maxOpenAttempts }))
	defer n2.Stop()
	e.waitShards(t, "x", started)
}

// TestDynamicMappingReachesTheCluster: a document that brings a new field
// to a shard the node opened is indexed only after the cluster's mapping
// has the field — the node's shards publish through its etcd store from
// the first open.
func TestDynamicMappingReachesTheCluster(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, t.TempDir(), nil)
	defer n.Stop()
	ctx := context.Background()
	info, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	sh, err := n.Shards().Get(shard.ID{IndexUUID: info.Uuid, Shard: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.IndexDoc(ctx, []byte("1"), []byte(`{"color":"red"}`), false); err != nil {
		t.Fatal(err)
	}
	got, err := e.md.GetIndex(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.GetMapping().GetProperties()["color"]; !ok {
		t.Fatalf("cluster mapping %v lacks the dynamic field", got.GetMapping())
	}
}

// TestNodeReportsScrubFailure: a node whose scrubber finds a damaged file
// in a shard reports the shard FAILED, with a reason that names the file,
// and keeps it so.
func TestNodeReportsScrubFailure(t *testing.T) {
	e := newEnv(t)
	n := e.startNodeWith(t, Config{DataDir: t.TempDir(), Shards: shard.HostOptions{
		Scrub: engine.ScrubOptions{Poll: 5 * time.Millisecond, Interval: 20 * time.Millisecond, BytesPerSec: -1}}}, nil)
	defer n.Stop()
	ctx := context.Background()
	info, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books"}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "books", started)
	id := shard.ID{IndexUUID: info.Uuid}
	s, err := n.Shards().Get(id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"body":"river stone w%d"}`, i), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Flip a byte in the middle of a postings file: its checksum fails.
	docs, _ := filepath.Glob(filepath.Join(n.Shards().Path(id), "*.doc"))
	if len(docs) == 0 {
		t.Fatal("no .doc file")
	}
	b, err := os.ReadFile(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x08
	if err := os.WriteFile(docs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	failed := func(sh *sluicev1.ShardRouting) bool { return sh.State == sluicev1.ShardState_SHARD_STATE_FAILED }
	got := e.waitShards(t, "books", failed)
	if r := got.Shards[0].Reason; !strings.Contains(r, filepath.Base(docs[0])) || !strings.Contains(r, "corrupt") {
		t.Fatalf("FAILED with reason %q, want the file %s named", r, filepath.Base(docs[0]))
	}
	if _, err := n.Shards().Get(id); !errors.Is(err, shard.ErrNotHere) {
		t.Fatalf("the failed shard is still open: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a few reconcile passes: it stays FAILED
	e.waitShards(t, "books", failed)

	// Deleting the index deletes the failed copy's data, marker included.
	if _, err := e.md.DeleteIndex(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(n.Shards().Path(id)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed copy's data outlived its index")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
