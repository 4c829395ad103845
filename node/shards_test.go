package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestTranslogDurabilitySetting: the index's translog_durability and
// translog_sync_interval reach the engine, at open and on update, and
// decide the fsyncs: none per request under ASYNC, one per request under
// REQUEST, ASYNC's on its interval.
func TestTranslogDurabilitySetting(t *testing.T) {
	ctx := context.Background()
	h, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseAll(ctx) })
	shards := hostedShards{h: h}
	info := &statev1.Index{Name: "logs", Uuid: "u-dur", Settings: &sluicev1.IndexSettings{
		TranslogDurability:   sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC,
		TranslogSyncInterval: durationpb.New(time.Hour)}}
	id := state.ShardID{Index: "u-dur"}
	if err := shards.openShard(ctx, info, id, copyRole{Primary: true}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := h.Get(shardID(id))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	fsyncsFor := func(docs int) int64 {
		t.Helper()
		before := s.TranslogStats().Fsyncs
		for range docs {
			n++
			if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", n), []byte(`{"msg":"x"}`), false); err != nil {
				t.Fatal(err)
			}
		}
		return s.TranslogStats().Fsyncs - before
	}
	if f := fsyncsFor(20); f != 0 {
		t.Fatalf("ASYNC: %d fsyncs for 20 requests", f)
	}
	update := func(d sluicev1.TranslogDurability, iv time.Duration) {
		t.Helper()
		info.Settings.TranslogDurability, info.Settings.TranslogSyncInterval = d, durationpb.New(iv)
		if err := shards.updateIndex(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	update(sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST, time.Hour)
	if f := fsyncsFor(20); f != 20 { // the first covers what ASYNC left too
		t.Fatalf("REQUEST: %d fsyncs for 20 requests, want 20", f)
	}
	update(sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC, 20*time.Millisecond)
	if f := fsyncsFor(20); f > 1 {
		t.Fatalf("ASYNC: %d fsyncs for 20 requests", f)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.TranslogStats().UnsyncedOps > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ASYNC with a 20ms interval: no periodic fsync: %+v", s.TranslogStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
