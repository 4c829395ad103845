package esapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/devcluster"
)

// A real cluster (embedded etcd, a coordinator with its HTTP API, one
// node) for what the Python and curl suites of e2e/ do not see: the
// coordinator's metrics of HTTP calls, and exact wire details.
func startCluster(t *testing.T) (string, *prometheus.Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	c, err := devcluster.Start(ctx, devcluster.Config{ClusterSettings: watermark.Ignored(), DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		Nodes: 1, LeaseTTL: 2 * time.Second, Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return "http://" + c.HTTPAddr(), reg
}

func do(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	return doWith(t, http.DefaultTransport, method, url, body, header...)
}

// doWith sends a request through rt (no transparent gunzip) with header
// pairs set.
func doWith(t *testing.T, rt http.RoundTripper, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestHTTPAPIOnARealCluster(t *testing.T) {
	url, reg := startCluster(t)
	if code, _, body := do(t, "PUT", url+"/books", `{"settings":{"number_of_shards":2}}`); code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}

	// A gzipped bulk body, a gzipped answer.
	var nd bytes.Buffer
	for i := range 50 {
		nd.WriteString(`{"index":{"_id":"` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"}}` + "\n" + `{"title":"book"}` + "\n")
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(nd.Bytes())
	zw.Close()
	code, h, body := do(t, "POST", url+"/books/_bulk?refresh=true", gz.String(), "Content-Encoding", "gzip", "Accept-Encoding", "gzip")
	if code != 200 || h.Get("Content-Encoding") != "gzip" {
		t.Fatalf("bulk: %d %v", code, h)
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	var bulk struct {
		Errors bool             `json:"errors"`
		Items  []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(plain, &bulk); err != nil || bulk.Errors || len(bulk.Items) != 50 {
		t.Fatalf("bulk answer %s (%v)", plain, err)
	}
	if h.Get("X-Elastic-Product") != "Elasticsearch" {
		t.Error("no X-Elastic-Product header")
	}

	if code, _, body := do(t, "POST", url+"/books/_search", `{"query":{"match":{"title":"book"}},"size":1}`); code != 200 || !strings.Contains(body, `"total":{"value":50,"relation":"eq"}`) {
		t.Fatalf("search: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", url+"/books/_refresh", ""); code != 200 {
		t.Fatalf("refresh: %d %s", code, body)
	}

	// Errors have Elasticsearch's shape and order.
	code, _, body = do(t, "GET", url+"/books/_search?frm=1", "")
	if want := `{"error":{"root_cause":[{"type":"illegal_argument_exception","reason":"request [/books/_search] contains unrecognized parameter: [frm]"}],"type":"illegal_argument_exception","reason":"request [/books/_search] contains unrecognized parameter: [frm]"},"status":400}`; code != 400 || body != want {
		t.Errorf("unknown parameter: %d\n%s\nwant\n%s", code, body, want)
	}
	if code, _, body := do(t, "POST", url+"/books", ""); code != 405 || !strings.Contains(body, "allowed: [DELETE, GET, HEAD, PUT]") {
		t.Errorf("wrong method: %d %s", code, body)
	}
	if code, _, body := do(t, "GET", url+"/nope/_search", ""); code != 404 || !strings.Contains(body, `"type":"index_not_found_exception"`) {
		t.Errorf("missing index: %d %s", code, body)
	}

	if code, _, _ := do(t, "GET", url+"/_nodes/stats", ""); code != 400 {
		t.Errorf("no handler: %d", code)
	}

	// The HTTP calls are in the coordinator's per-index histograms.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "index" {
					seen[mf.GetName()+"{"+l.GetValue()+"}"] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	for _, want := range []string{"sluice_coordinator_bulk_seconds{books}", "sluice_coordinator_search_seconds{books}", "sluice_coordinator_refresh_seconds{books}"} {
		if seen[want] == 0 {
			t.Errorf("%s not observed; have %v", want, seen)
		}
	}
	if _, ok := seen["sluice_coordinator_search_seconds{nope}"]; ok {
		t.Error("a failed search of a name that does not exist made a label")
	}

	// Every HTTP request is in the HTTP API's histogram, by route
	// pattern, never by the path sent.
	routes := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			routes[l["method"]+" "+l["route"]+" "+l["code"]] = m.GetHistogram().GetSampleCount()
		}
	}
	for want, n := range map[string]uint64{"PUT /{index} 200": 1, "POST /{index}/_search 200": 1, "GET /{index}/_search 400": 1,
		"GET /{index}/_search 404": 1, "POST /{index} 405": 1, "POST /{index}/_bulk 200": 1, "GET none 400": 1} {
		if routes[want] != n {
			t.Errorf("sluice_http_request_duration_seconds{%s} counted %d, want %d; have %v", want, routes[want], n, routes)
		}
	}
}
