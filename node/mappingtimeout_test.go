package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestMappingUpdateWithoutEtcdFailsRetryable: a node whose etcd is gone
// (the real embedded server stopped) takes a bulk whose documents add
// fields. Before, the dynamic mapping update waited on the etcd client,
// which retries for as long as its context lasts — a bulk without a
// deadline hung. Now each item that needs an update fails UNAVAILABLE
// (retryable) within the node's MappingUpdateTimeout, saying why; the
// items that need none are indexed; and for a timeout after a failed
// update the shard's other updates fail at once, so five items adding
// fields cost one timeout, not five.
func TestMappingUpdateWithoutEtcdFailsRetryable(t *testing.T) {
	srv := etcdtest.Start(t)
	e := newEnvOn(t, etcdtest.Client(t, srv))
	const timeout = 500 * time.Millisecond
	n := e.startNodeWith(t, Config{DataDir: t.TempDir(), ID: "n1", MappingUpdateTimeout: timeout}, nil)
	t.Cleanup(n.Stop)
	info, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	s, err := n.Shards().Get(shard.ID{IndexUUID: info.Uuid})
	if err != nil {
		t.Fatal(err)
	}
	mustBulk(t, s, bulkOps(0, 1), shard.RefreshNone) // maps n while etcd runs

	srv.Close()
	ops := bulkOps(1, 3)
	for _, f := range []string{"f1", "f2", "f3", "f4", "f5"} {
		ops = append(ops, shard.Op{Kind: shard.OpIndex, ID: []byte(f), Source: []byte(`{"` + f + `":"v"}`)})
	}
	began := time.Now()
	res, err := s.Bulk(context.Background(), ops, shard.RefreshNone) // no deadline
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if took > 3*timeout { // one timeout, not one per item (5)
		t.Fatalf("bulk took %v with a %v mapping update timeout", took, timeout)
	}
	for i, r := range res {
		if i < 2 {
			if r.Err != nil {
				t.Errorf("item %d needs no mapping update: %v", i, r.Err)
			}
			continue
		}
		d := Errors.Detail(r.Err)
		if !errors.Is(r.Err, shard.ErrMappingUnavailable) || codes.Code(d.GetCode()) != codes.Unavailable ||
			!strings.Contains(d.GetReason(), "mapping update not acknowledged by the cluster") || !strings.Contains(d.GetReason(), "retry") {
			t.Errorf("item %d: %v (code %v), want UNAVAILABLE naming the mapping update", i, r.Err, codes.Code(d.GetCode()))
		}
	}
}
