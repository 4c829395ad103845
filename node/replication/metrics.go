package replication

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-search/sluice/node/shard"
)

// lagSeconds is the replica lag histogram: from a primary's publication of
// a checkpoint to a replica copy's answer that it opened it (its reader
// shows it), per index, observed by the primary's node on its own clock
// (no clock skew between nodes). A copy that gets only the newest of
// several checkpoints (latest wins) is measured from the oldest it had not
// shown. Process-wide: a process runs one node (sluice dev's in-process
// nodes share it).
var lagSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "sluice_replica_lag_seconds",
	Help: "Time from a primary's checkpoint publication (after a refresh) until a replica copy opened it, observed on the primary's node.",
	// 5 ms to ~41 s: loopback installs take milliseconds, a lagging copy
	// seconds, and a copy slower than 30 s (--replication-timeout) is
	// failed.
	Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
}, []string{"index"})

// outgoingActive and outgoingQueued count the peer recoveries a node's
// primaries serve now (at most OutgoingRecoveries) and those waiting for
// a turn, by node.
var (
	outgoingActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_recoveries_outgoing",
		Help: "Peer recoveries this node's primary copies serve now (at most --concurrent-outgoing-recoveries).",
	}, []string{"node"})
	outgoingQueued = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_recoveries_outgoing_queued",
		Help: "Peer recoveries waiting for one of this node's --concurrent-outgoing-recoveries turns.",
	}, []string{"node"})
)

// Collector exposes the replication metrics (sluice_replica_lag_seconds,
// sluice_recoveries_outgoing{,_queued}) on a node's metrics endpoint.
func Collector() prometheus.Collector { return collectors{lagSeconds, outgoingActive, outgoingQueued} }

// collectors is one Collector of several.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

// observeLag records one checkpoint's lag for the index of primary sh.
func observeLag(sh *shard.Shard, lag time.Duration) {
	if sh == nil {
		return
	}
	lagSeconds.WithLabelValues(sh.Index()).Observe(lag.Seconds())
}
