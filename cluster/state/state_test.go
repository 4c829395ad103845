package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mvccpb "go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestKeysParse(t *testing.T) {
	k := NewKeys("/c1")
	tests := []struct {
		key   string
		kind  keyKind
		name  string
		shard int
		bad   bool
	}{
		{k.Node("n1"), kindNode, "n1", 0, false},
		{k.Index("logs"), kindIndex, "logs", 0, false},
		{k.Shard("u-1", 12), kindShard, "u-1", 12, false},
		{k.Alias("a"), kindAlias, "a", 0, false},
		{k.Task("t1"), kindOther, "", 0, false},
		{k.Pin("t1"), kindPin, "t1", 0, false},
		{k.Election() + "/694d7b", kindOther, "", 0, false},
		{"/other/nodes/x", kindOther, "", 0, false},
		{k.Routing() + "u-1/x", kindOther, "", 0, true},
		{k.Routing() + "u-1", kindOther, "", 0, true},
	}
	for _, tt := range tests {
		kind, name, shard, err := k.parse(tt.key)
		if (err != nil) != tt.bad || kind != tt.kind || name != tt.name || shard != tt.shard {
			t.Errorf("parse(%q) = %v %q %d %v", tt.key, kind, name, shard, err)
		}
	}
}

func seed(t *testing.T, s *Store) {
	t.Helper()
	var tx Txn
	tx.Put(s.Keys.Node("n1"), &statev1.Node{Address: "127.0.0.1:1", Zone: "a"})
	tx.Put(s.Keys.Index("logs"), &statev1.Index{Name: "logs", Uuid: "u1",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 2}})
	for i := range 2 {
		a := "a" + string(rune('0'+i))
		tx.Put(s.Keys.Shard("u1", i), &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{a},
			Copies: []*statev1.ShardCopy{{Primary: true, NodeId: "n1", AllocationId: a, State: sluicev1.ShardState_SHARD_STATE_STARTED}}})
	}
	tx.Put(s.Keys.Alias("l"), &statev1.Alias{Indices: []string{"logs"}})
	tx.Put(s.Keys.Task("t"), &sluicev1.Task{Id: "t"})
	if err := s.Commit(context.Background(), &tx); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	s := NewStore(etcdtest.New(t), "")
	seed(t, s)
	st, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.ResolveOne("l")
	if err != nil {
		t.Fatal(err)
	}
	got := st.Info(x)
	want := &sluicev1.IndexInfo{Name: "logs", Uuid: "u1",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 2},
		Aliases:  []string{"l"}, Health: sluicev1.HealthStatus_HEALTH_STATUS_GREEN,
		Shards: []*sluicev1.ShardRouting{
			{Shard: 0, Primary: true, NodeId: "n1", AllocationId: "a0", State: sluicev1.ShardState_SHARD_STATE_STARTED, PrimaryTerm: 1, InSync: true},
			{Shard: 1, Primary: true, NodeId: "n1", AllocationId: "a1", State: sluicev1.ShardState_SHARD_STATE_STARTED, PrimaryTerm: 1, InSync: true},
		}}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("Info (-want +got):\n%s", d)
	}
	if !st.Live("n1") || st.Live("n2") {
		t.Error("Live wrong")
	}
	if w, err := st.ResolveWrite("l"); err != nil || w.Name() != "logs" {
		t.Errorf("ResolveWrite = %v, %v", w, err)
	}
	if _, err := st.Resolve("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(nope) = %v", err)
	}
}

func TestUpdateRetriesConflicts(t *testing.T) {
	// Concurrent read-modify-write increments through Update lose nothing.
	s := NewStore(etcdtest.New(t), "")
	ctx := context.Background()
	key := s.Keys.Alias("counter")
	const workers, each = 4, 5
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				_, err := s.Update(ctx, func(st *Snapshot) (*Txn, error) {
					var tx Txn
					a, ok := st.Aliases["counter"]
					info := &statev1.Alias{}
					var rev int64
					if ok {
						info.Indices = append(info.Indices, a.Info.Indices...)
						rev = a.ModRevision
					}
					info.Indices = append(info.Indices, "x")
					tx.Unchanged(key, rev)
					tx.Put(key, info)
					return &tx, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st, _ := s.Load(ctx)
	if n := len(st.Aliases["counter"].Info.Indices); n != workers*each {
		t.Errorf("got %d increments, want %d", n, workers*each)
	}
}

func TestCacheFollows(t *testing.T) {
	s := NewStore(etcdtest.New(t), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := NewCache(s, nil)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if _, err := c.WaitFor(ctx, func(st *Snapshot) bool { return true }); err != nil {
		t.Fatal(err)
	}
	seed(t, s)
	st, err := c.WaitFor(ctx, func(st *Snapshot) bool { return st.Indices["logs"] != nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Indices["logs"].Shards) != 2 || st.Indices["logs"].Shards[1] == nil {
		t.Errorf("cached routing incomplete: %v", st.Indices["logs"].Shards)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	k := NewKeys("")
	f.Add(k.Shard("u", 1), []byte(`{"shard":1,"node_id":"n"}`))
	f.Add(k.Index("x"), []byte(`{"name":"x","settings":{"number_of_shards":3}}`))
	f.Add(k.Index("x"), []byte(`{"name":"x","settings":{"number_of_shards":-3}}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		// Garbage in etcd must give an error, never a panic.
		kv := []*mvccpb.KeyValue{{Key: []byte(key), Value: value}}
		_, _ = decode(k, 1, kv)
	})
}

// TestMarkRecovering: a starting node turns its STARTED and NODE_LEFT
// copies INITIALIZING, and leaves FAILED copies and other nodes' alone.
func TestMarkRecovering(t *testing.T) {
	s := NewStore(etcdtest.New(t), "")
	ctx := context.Background()
	var tx Txn
	tx.Put(s.Keys.Index("logs"), &statev1.Index{Name: "logs", Uuid: "u1",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 5, NumberOfRoutingShards: 5}})
	in := []struct {
		node  string
		state sluicev1.ShardState
	}{
		{"n1", sluicev1.ShardState_SHARD_STATE_STARTED},
		{"n1", sluicev1.ShardState_SHARD_STATE_NODE_LEFT},
		{"n1", sluicev1.ShardState_SHARD_STATE_FAILED},
		{"n2", sluicev1.ShardState_SHARD_STATE_STARTED},
		{"n1", sluicev1.ShardState_SHARD_STATE_STARTED},
	}
	for i, c := range in {
		tx.Put(s.Keys.Shard("u1", i), &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, Copies: []*statev1.ShardCopy{
			{Primary: true, NodeId: c.node, AllocationId: fmt.Sprint("a", i), State: c.state, Reason: "before"},
			{NodeId: "n3", AllocationId: fmt.Sprint("r", i), State: c.state, Reason: "before"}}})
	}
	if err := s.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	n, err := s.MarkRecovering(ctx, "n1", "restarted", 2) // batches of 2: two transactions
	if err != nil || n != 3 {
		t.Fatalf("MarkRecovering = %d, %v; want 3", n, err)
	}
	st, _ := s.Load(ctx)
	want := []sluicev1.ShardState{sluicev1.ShardState_SHARD_STATE_INITIALIZING, sluicev1.ShardState_SHARD_STATE_INITIALIZING,
		sluicev1.ShardState_SHARD_STATE_FAILED, sluicev1.ShardState_SHARD_STATE_STARTED, sluicev1.ShardState_SHARD_STATE_INITIALIZING}
	for i, w := range want {
		r := Primary(st.Indices["logs"].Shards[i].Routing)
		if other := st.Indices["logs"].Shards[i].Routing.Copies[1]; other.State != in[i].state || other.Reason != "before" {
			t.Errorf("shard %d: the copy on another node changed: %v", i, other)
		}
		if r.State != w {
			t.Errorf("shard %d: %v, want %v", i, r.State, w)
		}
		if wantReason := map[bool]string{true: "restarted", false: "before"}[w == sluicev1.ShardState_SHARD_STATE_INITIALIZING]; r.Reason != wantReason {
			t.Errorf("shard %d: reason %q, want %q", i, r.Reason, wantReason)
		}
	}
	if n, err := s.MarkRecovering(ctx, "n1", "restarted", 2); err != nil || n != 0 {
		t.Errorf("second MarkRecovering = %d, %v; want 0", n, err)
	}
}

// TestNodeInfo: the public view of a registered node carries what the
// node registered, including that it is shutting down.
func TestNodeInfo(t *testing.T) {
	n := &Node{ID: "n1", Info: &statev1.Node{Address: "10.0.0.1:9400", Zone: "a", DiskFreeBytes: 10, DiskTotalBytes: 20,
		Version: "v1", DataPath: "/data", ShuttingDown: true}}
	want := &sluicev1.NodeInfo{Id: "n1", Address: "10.0.0.1:9400", Zone: "a", DiskFreeBytes: 10, DiskTotalBytes: 20,
		Live: true, Version: "v1", DataPath: "/data", ShuttingDown: true}
	if diff := cmp.Diff(want, NodeInfo(n), protocmp.Transform()); diff != "" {
		t.Errorf("NodeInfo (-want +got):\n%s", diff)
	}
}

// A pin names shards of an index, or every shard of it; the first task by
// id that pins a shard is its holder.
func TestPinnedBy(t *testing.T) {
	st := &Snapshot{Pins: map[string]*statev1.ShardPins{
		"t2": {Holder: "reindex task [t2]", Indices: []*statev1.PinnedShards{{IndexUuid: "src", Shards: []int32{1}}, {IndexUuid: "dst"}}},
		"t1": {Holder: "reindex task [t1]", Indices: []*statev1.PinnedShards{{IndexUuid: "dst", Shards: []int32{0}}}},
	}}
	for _, tt := range []struct {
		id   ShardID
		want string
	}{
		{ShardID{"src", 1}, "reindex task [t2]"},
		{ShardID{"src", 0}, ""},
		{ShardID{"dst", 0}, "reindex task [t1]"},
		{ShardID{"dst", 5}, "reindex task [t2]"},
		{ShardID{"other", 0}, ""},
	} {
		if got := st.PinnedBy(tt.id); got != tt.want {
			t.Errorf("PinnedBy(%v) = %q, want %q", tt.id, got, tt.want)
		}
	}
}
