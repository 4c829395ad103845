package server

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Metrics are the coordinator's per-index request latencies: histograms
// of Search, Bulk and Refresh by index, for every call the server
// answers — gRPC and, through the in-process client, HTTP. (The gRPC
// server's own histograms time every method, but not per index.) Only
// calls that succeeded are observed, so the index label holds names that
// exist (a search of a made-up name is an error, counted by the gRPC
// server's code counters), not whatever a client sends.
type Metrics struct {
	search, bulk, refresh *prometheus.HistogramVec
}

// latencyBuckets are the gRPC server's (cluster/telemetry), so the two
// sets of histograms read alike.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewMetrics returns the histograms; register them (Metrics is a
// prometheus.Collector) and pass them in Config.Metrics.
func NewMetrics() *Metrics {
	h := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "sluice", Subsystem: "coordinator", Name: name, Help: help, Buckets: latencyBuckets,
		}, []string{"index"})
	}
	return &Metrics{
		search:  h("search_seconds", "Time to answer a Search, by index or alias searched (_all: every index; _pit: a point-in-time)."),
		bulk:    h("bulk_seconds", "Time to answer a Bulk or BulkStream, by index written (a call writing several indices is observed once for each)."),
		refresh: h("refresh_seconds", "Time to answer a Refresh, by index or alias refreshed (_all: every index)."),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.search.Describe(ch)
	m.bulk.Describe(ch)
	m.refresh.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.search.Collect(ch)
	m.bulk.Collect(ch)
	m.refresh.Collect(ch)
}

// observe records one call's time under each of its indices.
func observe(h *prometheus.HistogramVec, start time.Time, indices []string) {
	d := time.Since(start).Seconds()
	for _, idx := range indices {
		h.WithLabelValues(idx).Observe(d)
	}
}

// named is a request's index names, _all for none.
func named(names []string) []string {
	if len(names) == 0 {
		return []string{"_all"}
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

func (m *Metrics) observeSearch(start time.Time, req *sluicev1.SearchRequest) {
	if m == nil {
		return
	}
	if req.GetPit() != nil {
		observe(m.search, start, []string{"_pit"})
		return
	}
	observe(m.search, start, named(req.GetIndices()))
}

func (m *Metrics) observeBulk(start time.Time, items []*sluicev1.BulkItemResult) {
	if m == nil {
		return
	}
	var indices []string
	for _, r := range items {
		// A failed item's index may be a name that does not exist.
		if r.GetStatus() != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR && !slices.Contains(indices, r.GetIndex()) {
			indices = append(indices, r.GetIndex())
		}
	}
	observe(m.bulk, start, indices)
}

// observeStream records a BulkStream under its default index, when it
// had one and wrote something.
func (m *Metrics) observeStream(start time.Time, index string, resp *sluicev1.BulkStreamResponse) {
	if m == nil || index == "" || resp.GetFailed() == resp.GetTotal() {
		return
	}
	observe(m.bulk, start, []string{index})
}

func (m *Metrics) observeRefresh(start time.Time, req *sluicev1.RefreshRequest) {
	if m == nil {
		return
	}
	observe(m.refresh, start, named(req.GetIndices()))
}
