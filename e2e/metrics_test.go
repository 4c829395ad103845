package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Metrics people can graph: every Sluice process serves, at its
// --metrics-listen address, the request histograms of its gRPC servers
// (grpc_server_handling_seconds, from the Prometheus gRPC middleware) and,
// on coordinators, per-index search, bulk and refresh latency histograms
// (sluice_coordinator_*_seconds) — histograms, from which Prometheus
// computes any quantile, not precomputed percentiles. `sluice dev` is
// checked in esapi_test.go, after the client suites.
var _ = Describe("metrics", func() {
	It("are served by the coordinator and every data node process, with request histograms", func() {
		ctx := context.Background()
		_, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "metrics", WaitForActiveShards: true,
			Settings: &sluicev1.IndexSettings{NumberOfShards: 3}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = cl.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "metrics"}) })
		waitGreen("metrics")
		st, err := c.state(coord)
		Expect(err).NotTo(HaveOccurred())
		before := shardNodes(st, "metrics")
		var items []*sluicev1.BulkItem
		for i := range 30 {
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: strconv.Itoa(i), Source: []byte(`{"n":1}`)})
		}
		_, err = cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "metrics", Items: items})
		Expect(err).NotTo(HaveOccurred())
		_, err = cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{"metrics"}})
		Expect(err).NotTo(HaveOccurred())
		_, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"metrics"}})
		Expect(err).NotTo(HaveOccurred())

		coordinator := c.coords[coord].metrics
		expectRequestMetrics(coordinator, "sluice.v1.Sluice")
		expectIndexMetrics(coordinator, map[string]string{"search": "metrics", "bulk": "metrics", "refresh": "metrics"})
		// Each node that held a shard of the index while it was written
		// and searched answered Node calls. Placement balances all
		// indices' copies, not only this one's, so after earlier specs a
		// node may hold none of the 3, and a copy may move meanwhile (a
		// node restarted by an earlier spec takes copies back, with its
		// counters at zero): only nodes holding a copy before and after
		// the calls are asked.
		st, err = c.state(coord)
		Expect(err).NotTo(HaveOccurred())
		after := shardNodes(st, "metrics")
		holders := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return !slices.Contains(after, n) })
		Expect(holders).NotTo(BeEmpty(), "a node held a copy throughout (before %v, after %v)", before, after)
		for _, n := range c.nodes {
			if !slices.Contains(holders, n.name) {
				continue
			}
			Eventually(func() []sample {
				return scrape(n.metrics, "grpc_server_handling_seconds_count", "grpc_service", "sluice.node.v1.Node")
			}, 10*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty(), "node %s", n.name)
			expectRequestMetrics(n.metrics, "sluice.node.v1.Node")
		}
	})
})

// expectRequestMetrics: the gRPC servers of the process at url time calls
// of each service in a histogram with calls counted.
func expectRequestMetrics(url string, services ...string) {
	GinkgoHelper()
	Expect(metricType(url, "grpc_server_handling_seconds")).To(Equal("histogram"))
	for _, svc := range services {
		var calls float64
		for _, s := range scrape(url, "grpc_server_handling_seconds_count", "grpc_service", svc) {
			calls += s.value
		}
		Expect(calls).To(BeNumerically(">", 0), "%s: no %s call in grpc_server_handling_seconds", url, svc)
		Expect(scrape(url, "grpc_server_handling_seconds_bucket", "grpc_service", svc)).NotTo(BeEmpty())
	}
}

// expectIndexMetrics: the coordinator at url has observed a call of each
// kind (search, bulk, refresh) on the given index in its histograms.
func expectIndexMetrics(url string, index map[string]string) {
	GinkgoHelper()
	for kind, idx := range index {
		name := "sluice_coordinator_" + kind + "_seconds"
		Expect(metricType(url, name)).To(Equal("histogram"), name)
		counts := scrape(url, name+"_count", "index", idx)
		Expect(counts).To(HaveLen(1), "%s{index=%q}", name, idx)
		Expect(counts[0].value).To(BeNumerically(">", 0), "%s{index=%q}", name, idx)
		Expect(len(scrape(url, name+"_bucket", "index", idx))).To(BeNumerically(">", 5), "%s buckets", name)
	}
}

// expectDashboardMetrics: every metric the chart's Grafana dashboard
// queries is served at url, so no panel stays empty; it returns the queries.
func expectDashboardMetrics(url string) (exprs []string) {
	GinkgoHelper()
	b, err := os.ReadFile("../charts/sluice/dashboards/sluice.json")
	Expect(err).NotTo(HaveOccurred())
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var d any
	Expect(json.Unmarshal(b, &d)).To(Succeed())
	walk(d)
	Expect(len(exprs)).To(BeNumerically(">=", 5))
	series := regexp.MustCompile(`([a-z_:][a-z0-9_:]*)\{`)
	for _, e := range exprs {
		for _, m := range series.FindAllStringSubmatch(e, -1) {
			Expect(scrape(url, m[1])).NotTo(BeEmpty(), "the dashboard queries %s (%s); %s does not serve it", m[1], e, url)
		}
	}
	return exprs
}

// sample is one line of Prometheus's text format.
type sample struct {
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

func fetchMetrics(url string) []byte {
	GinkgoHelper()
	resp, err := http.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return body
}

// metricType is the # TYPE of a metric family at url, "" if absent.
func metricType(url, family string) string {
	GinkgoHelper()
	for line := range strings.SplitSeq(string(fetchMetrics(url)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "+family+" "); ok {
			return rest
		}
	}
	return ""
}

// scrape reads a /metrics page and returns the samples of one metric,
// with the label values given as name, value pairs.
func scrape(url, name string, labels ...string) []sample {
	GinkgoHelper()
	var out []sample
	sc := bufio.NewScanner(bytes.NewReader(fetchMetrics(url)))
	sc.Buffer(nil, 1<<20)
next:
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		Expect(err).NotTo(HaveOccurred(), "metric line %q", sc.Text())
		s := sample{labels: map[string]string{}, value: v}
		for _, l := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}
