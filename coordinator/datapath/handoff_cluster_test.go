package datapath_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// A primary that moves again and again (relocation, the role handed to
// the target at term + 1) while bulks are in flight loses no
// acknowledged write: every id a bulk acknowledged is on every copy at
// the end, and the copies agree on the count (Elasticsearch's primary
// relocation hand-off: the source blocks new operations, waits for those
// in flight, hands off, and never acknowledges in a fenced term).
func TestClusterPrimaryHandOffUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a primary repeatedly on a real cluster")
	}
	tc := startCluster(t)
	ctx := context.Background()
	const index, moves, writers = "handoff", 6, 4
	_, err := tc.client.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, Mapping: textMapping()})
	if err != nil {
		t.Fatal(err)
	}
	waitGreen(t, tc, index)

	w := startWriters(tc, index, writers)
	// Move the primary: drain its node until the primary is elsewhere,
	// then undrain it (so the next move may come back to it).
	for m := range moves {
		p := primaryOf(t, tc, index)
		if _, err := tc.client.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: p.NodeId}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if q := primaryOf(t, tc, index); q.NodeId != p.NodeId && q.State == sluicev1.ShardState_SHARD_STATE_STARTED {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("move %d: the primary did not leave node %s", m, p.NodeId)
			}
		}
		if _, err := tc.client.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: p.NodeId, Undrain: true}); err != nil {
			t.Fatal(err)
		}
		waitGreen(t, tc, index)
	}
	acked := w.stop()
	waitGreen(t, tc, index)
	if _, err := tc.client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		t.Fatal(err)
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}

	// Every copy holds every acknowledged id.
	type held struct {
		node    string
		primary bool
		sh      *shard.Shard
	}
	var copies []held
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		copies = copies[:0]
		x, err := tc.Nodes[0].Cache().State().ResolveOne(index)
		if err != nil {
			t.Fatal(err)
		}
		r, id := x.Shards[0].Routing, shard.ID{IndexUUID: x.Meta.Uuid, Shard: 0}
		for _, n := range tc.Nodes {
			if c := state.CopyOnNode(r, n.ID()); c != nil && c.State == sluicev1.ShardState_SHARD_STATE_STARTED {
				if sh, err := n.Shards().Get(id); err == nil && sh.Primary() == c.Primary {
					copies = append(copies, held{n.ID(), c.Primary, sh})
				}
			}
		}
		if len(copies) == 2 && len(r.Copies) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("copies open as the routing says: %d, routing %v", len(copies), r)
		}
	}
	for _, c := range copies {
		sh := c.sh
		var missing []string
		for doc := range acked {
			if _, found, err := sh.Get(ctx, []byte(doc), false); err != nil || !found {
				missing = append(missing, doc)
			}
		}
		rd := sh.Acquire()
		docs := rd.NumDocs()
		rd.Release()
		if len(missing) > 0 {
			t.Errorf("copy on node %s (primary %v): %d of %d acknowledged ids missing, e.g. %v", c.node, c.primary, len(missing), len(acked), missing[:min(5, len(missing))])
		}
		if docs != len(acked) {
			t.Logf("copy on node %s (primary %v): %d docs, %d acknowledged", c.node, c.primary, docs, len(acked))
		}
	}
	t.Logf("%d moves, %d acknowledged writes", moves, len(acked))
}

// primaryOf is the index's first shard's primary as health reports it.
func primaryOf(t *testing.T, tc *testCluster, index string) *sluicev1.ShardRouting {
	t.Helper()
	h, err := tc.client.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Indices[0].Shards {
		if s.Primary {
			return s
		}
	}
	t.Fatalf("no primary: %v", h.Indices[0].Shards)
	return nil
}

func waitGreen(t *testing.T, tc *testCluster, index string) {
	t.Helper()
	h, err := tc.client.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(60 * time.Second)})
	if err != nil || h.TimedOut {
		t.Fatalf("index %s not green: %v %v", index, h, err)
	}
}

// writers bulk unique ids into an index, as fast as they are answered;
// an item counts once its bulk acknowledged it.
type writers struct {
	mu    sync.Mutex
	acked map[string]bool
	wg    sync.WaitGroup
	done  chan struct{}
}

// startWriters starts n writers into index.
func startWriters(tc *testCluster, index string, n int) *writers {
	ws := &writers{acked: map[string]bool{}, done: make(chan struct{})}
	for w := range n {
		ws.wg.Go(func() {
			for b := 0; ; b++ {
				select {
				case <-ws.done:
					return
				default:
				}
				items := make([]*sluicev1.BulkItem, 20)
				for i := range items {
					items[i] = &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("w%d-b%d-%d", w, b, i),
						Source: fmt.Appendf(nil, `{"title":"writer %d bulk %d","n":%d}`, w, b, i)}
				}
				bctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				resp, err := tc.client.Bulk(bctx, &sluicev1.BulkRequest{Index: index, Items: items})
				cancel()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				ws.mu.Lock()
				for i, r := range resp.Items {
					if r.Error == nil {
						ws.acked[items[i].Id] = true
					}
				}
				ws.mu.Unlock()
			}
		})
	}
	return ws
}

// stop stops the writers and returns the acknowledged ids.
func (ws *writers) stop() map[string]bool {
	close(ws.done)
	ws.wg.Wait()
	return ws.acked
}
