package esapi

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics time the HTTP API's requests by method, route and status. The
// route is the endpoint's path pattern ("/{index}/_search"), never the
// path a client sent, so the labels are bounded by the endpoint table;
// a path no endpoint serves is "none". (The calls an endpoint makes are
// also in the coordinator's gRPC and per-index histograms.)
type Metrics struct {
	requests *prometheus.HistogramVec
}

// NewMetrics returns the histograms; register them (Metrics is a
// prometheus.Collector) and pass them in Config.Metrics.
func NewMetrics() *Metrics {
	return &Metrics{requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "sluice", Subsystem: "http", Name: "request_duration_seconds",
		Help: "Time to answer a request of the Elasticsearch-compatible HTTP API, by method, route (the endpoint's path pattern; none: no endpoint) and HTTP status.",
		// The gRPC server's buckets (cluster/telemetry), so the two read alike.
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route", "code"})}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { m.requests.Describe(ch) }

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) { m.requests.Collect(ch) }

func (m *Metrics) observe(start time.Time, method, route string, code int) {
	if m == nil {
		return
	}
	if route == "" {
		route = "none"
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
}
