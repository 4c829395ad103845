package node

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-search/sluice/node/replication"
	"github.com/sluice-search/sluice/node/shard"
)

// TestReplicaLagObserved: on real nodes, each refresh's checkpoint that a
// replica opens is observed in sluice_replica_lag_seconds for its index,
// from the primary's publication to the replica's answer: a refreshed bulk
// (refresh=wait_for, which returns once the replica shows it) adds an
// observation of about as long as its wait.
func TestReplicaLagObserved(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, _, _ := rc.copies(t)
	count0, sum0 := lagHistogram(t, "x")
	began := time.Now()
	for i := range 5 {
		mustBulk(t, rc.shard(t, p), bulkOps(i*10, i*10+10), shard.RefreshWaitFor)
	}
	took := time.Since(began)
	// The primary observes a lag when the replica's install answers, which
	// may be just after the bulk saw its documents shown there.
	count, sum := lagHistogram(t, "x")
	for deadline := time.Now().Add(5 * time.Second); count < count0+5 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		count, sum = lagHistogram(t, "x")
	}
	if count < count0+5 {
		t.Fatalf("replica lag observations: %d before, %d after 5 refreshed bulks", count0, count)
	}
	// Each wait_for bulk waited for its checkpoint to be shown: the lags
	// observed meanwhile are on average shorter than the bulks took.
	if d := sum - sum0; d <= 0 || d/float64(count-count0) > took.Seconds() {
		t.Fatalf("replica lag: %.3fs over %d observations; the bulks took %v", d, count-count0, took)
	}
}

// lagHistogram reads sluice_replica_lag_seconds for index: its sample
// count and sum.
func lagHistogram(t *testing.T, index string) (uint64, float64) {
	t.Helper()
	fams, err := replicationMetrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "sluice_replica_lag_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "index" && l.GetValue() == index {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

// replicationMetrics is a registry of the process's replication metrics
// (replication.Collector).
func replicationMetrics() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(replication.Collector())
	return reg
}
