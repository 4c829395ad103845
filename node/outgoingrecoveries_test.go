package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestOutgoingRecoveriesLimitedOnRealNodes: four shards' new replica
// copies recover at once onto a new node (which would recover all four
// together) from one source node whose --concurrent-outgoing-recoveries
// is 1: the source's sluice_recoveries_outgoing never shows more than one
// recovery served, while others wait their turn
// (sluice_recoveries_outgoing_queued), and every copy ends in sync.
// Recovery fetches are throttled so that the recoveries overlap.
func TestOutgoingRecoveriesLimitedOnRealNodes(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			fastRetries(t)
			e := newEnv(t)
			ctx := context.Background()
			src := fmt.Sprintf("src%d", limit)
			n1 := e.startNodeWith(t, Config{DataDir: t.TempDir(), ID: src, OutgoingRecoveries: limit}, nil)
			t.Cleanup(n1.Stop)
			const shards = 4
			info, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x",
				Settings: &sluicev1.IndexSettings{NumberOfShards: shards}}, metadata.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e.waitShards(t, "x", started)
			for n := range shards {
				s, err := n1.Shards().Get(shard.ID{IndexUUID: info.Uuid, Shard: n})
				if err != nil {
					t.Fatal(err)
				}
				mustBulk(t, s, bigOps(300), shard.RefreshWaitFor)
			}
			n2 := e.startNodeWith(t, Config{DataDir: t.TempDir(), ID: fmt.Sprintf("dst%d", limit), ConcurrentRecoveries: shards,
				RecoveryBytesPerSec: 1 << 20}, nil)
			t.Cleanup(n2.Stop)

			var mu sync.Mutex
			maxActive, maxQueued := 0.0, 0.0
			stop := make(chan struct{})
			var sampled sync.WaitGroup
			sampled.Go(func() {
				for {
					active, queued := outgoing(t, src)
					mu.Lock()
					maxActive, maxQueued = max(maxActive, active), max(maxQueued, queued)
					mu.Unlock()
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
			if _, err := e.md.UpdateSettings(ctx, "x", &sluicev1.IndexSettings{NumberOfReplicas: 1}, []string{"number_of_replicas"}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				got, err := e.md.GetIndex(ctx, "x")
				if err == nil && got.Health == sluicev1.HealthStatus_HEALTH_STATUS_GREEN && len(got.Shards) == 2*shards {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("replicas never recovered: %v", got.GetShards())
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(stop)
			sampled.Wait()
			t.Logf("limit %d: at most %.0f recoveries served at once, %.0f waiting", limit, maxActive, maxQueued)
			if maxActive != float64(limit) || maxQueued < 1 {
				t.Fatalf("limit %d: at most %.0f recoveries served at once, %.0f waiting; want %d served and some waiting",
					limit, maxActive, maxQueued, limit)
			}
		})
	}
}

// bigOps are n documents of about 1 KiB each.
func bigOps(n int) []shard.Op {
	ops := bulkOps(0, n)
	for i := range ops {
		ops[i].Source = fmt.Appendf(nil, `{"n":%d,"pad":"%0900d"}`, i, i)
	}
	return ops
}

// outgoing reads node's sluice_recoveries_outgoing and _queued gauges.
func outgoing(t *testing.T, node string) (active, queued float64) {
	t.Helper()
	fams, err := replicationMetrics().Gather()
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != node {
				continue
			}
			switch f.GetName() {
			case "sluice_recoveries_outgoing":
				active = m.GetGauge().GetValue()
			case "sluice_recoveries_outgoing_queued":
				queued = m.GetGauge().GetValue()
			}
		}
	}
	return active, queued
}
