package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/bitflip"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestDamagedReplicaFailsAndRecovers: on real nodes (etcd, gRPC over
// loopback), a bit flipped on the replica's disk in a segment file it
// copied from the primary is found — by the node's scrubber, or by an
// on-demand verification (`sluice shard verify`), or by the corruption
// marker an earlier run of the node left (restart) — and the copy is
// reported FAILED and taken out of the in-sync set in one write (so it
// can never be promoted), then its data is deleted and it recovers from
// the primary afresh: green again, with every document, its files whole.
func TestDamagedReplicaFailsAndRecovers(t *testing.T) {
	for _, how := range []string{"scrub", "verify", "restart"} {
		t.Run(how, func(t *testing.T) {
			var cfg Config
			cfg.Shards.Scrub.Interval = -1 // verify: on demand only
			if how == "scrub" {
				cfg.Shards.Scrub = engine.ScrubOptions{Interval: 200 * time.Millisecond, Poll: 20 * time.Millisecond, BytesPerSec: -1}
			}
			rc := newReplicatedCfg(t, 2, 1, nil, cfg)
			p, r, _ := rc.copies(t)
			mustBulk(t, rc.shard(t, p), bulkOps(0, 500), shard.RefreshWaitFor)
			rep := rc.shard(t, r)
			if _, err := rep.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			alloc := rc.allocationOn(t, r)
			history := rc.watchRouting(t)

			dir := filepath.Join(rc.dirs[r], rc.uuid, "0")
			name := bitflip.Largest(t, dir, ".fdt")
			if how == "restart" {
				rc.nodes[r].Stop()
				marker := fmt.Sprintf(`{"reason":"corrupt index: %s: checksum mismatch","time":"2026-01-01T00:00:00Z"}`, name)
				if err := os.WriteFile(filepath.Join(dir, "corrupted_test"), []byte(marker), 0o644); err != nil {
					t.Fatal(err)
				}
				rc.start(t, r, "")
			}
			if how == "verify" {
				res, err := rc.nodes[r].Shards().Verify(context.Background(), shard.ID{IndexUUID: rc.uuid}, engine.VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !errors.Is(res.Err(), index.ErrCorrupt) || !strings.Contains(res.Err().Error(), name) {
					t.Fatalf("verify of the replica: %v, want damage to %s", res.Err(), name)
				}
			}

			// FAILED and out of the in-sync set, then green again.
			deadline := time.Now().Add(30 * time.Second)
			var failed *statev1.ShardCopy
			for failed == nil && time.Now().Before(deadline) {
				select {
				case rt := <-history:
					if c := state.CopyByAllocation(rt, alloc); c != nil && c.GetState() == sluicev1.ShardState_SHARD_STATE_FAILED {
						if state.InSync(rt, alloc) {
							t.Fatalf("damaged replica FAILED but still in the in-sync set: %v", rt)
						}
						failed = c
					}
				case <-time.After(time.Second):
				}
			}
			if failed == nil {
				t.Fatalf("the damaged replica was never reported FAILED")
			}
			if !strings.Contains(failed.GetReason(), name) || !strings.Contains(failed.GetReason(), "in-sync") {
				t.Fatalf("FAILED reason %q: want it to name the file %s and say the copy left the in-sync set", failed.GetReason(), name)
			}
			rc.waitGreenWithin(t, 30*time.Second)
			mustBulk(t, rc.shard(t, p), bulkOps(500, 510), shard.RefreshWaitFor)
			back := rc.shard(t, r)
			if back.Replica() == nil {
				t.Fatalf("the recovered copy is not a replica")
			}
			if st := back.Replica().Stats(); st.NumDocs != 510 || st.FilesFetched == 0 {
				t.Fatalf("recovered replica: %d docs, %d files fetched; want 510 docs, its files fetched again", st.NumDocs, st.FilesFetched)
			}
			res, err := rc.nodes[r].Shards().Verify(context.Background(), shard.ID{IndexUUID: rc.uuid}, engine.VerifyOptions{})
			if err != nil || res.Err() != nil {
				t.Fatalf("verify after the recovery: %v, %v", err, res.Err())
			}
		})
	}
}

// allocationOn is the allocation id of the copy on node.
func (rc *replicated) allocationOn(t *testing.T, node string) string {
	t.Helper()
	info, err := rc.e.md.GetIndex(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range info.Shards {
		if sh.NodeId == node {
			return sh.AllocationId
		}
	}
	t.Fatalf("no copy on %s", node)
	return ""
}

// watchRouting sends every version of shard 0's routing entry written
// from now on (an etcd watch misses none).
func (rc *replicated) watchRouting(t *testing.T) <-chan *statev1.ShardRouting {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan *statev1.ShardRouting, 1024)
	wch := rc.e.c.Watch(ctx, rc.e.store.Keys.Shard(rc.uuid, 0))
	go func() {
		for resp := range wch {
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				rt := &statev1.ShardRouting{}
				if state.Unmarshal(ev.Kv.Value, rt) == nil {
					select {
					case out <- rt:
					default:
					}
				}
			}
		}
	}()
	return out
}
