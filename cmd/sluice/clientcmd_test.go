package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestInlineOrFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(p, []byte(`{"match_all":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value, want, err string
	}{
		{value: `{"term":{}}`, want: `{"term":{}}`},
		{value: "@" + p, want: `{"match_all":{}}`},
		{value: "@" + p + ".missing", err: "--query: open"},
	}
	for _, tc := range tests {
		got, err := inlineOrFile("query", tc.value)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want prefix %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v", tc.value, got, err)
		}
	}
}

func TestPrintHitsRouting(t *testing.T) {
	resp := &sluicev1.SearchResponse{Total: &sluicev1.TotalHits{Value: 2}, Hits: []*sluicev1.Hit{
		{Index: "logs", Id: "a", Score: 1.5, Routing: "tenant-7", Source: []byte(`{"x":1}`)},
		{Index: "logs", Id: "b", Score: 1, Source: []byte(`{"x":2}`)},
	}}
	var out bytes.Buffer
	if err := printHits(&out, io.Discard, resp, true); err != nil {
		t.Fatal(err)
	}
	want := `{"_index":"logs","_id":"a","_score":1.5,"_routing":"tenant-7","_source":{"x":1}}
{"_index":"logs","_id":"b","_score":1,"_source":{"x":2}}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	// Sorted by fields alone, hits have no score to print.
	out.Reset()
	if err := printHits(&out, io.Discard, resp, scored([]*sluicev1.SortField{{Field: "year"}})); err != nil {
		t.Fatal(err)
	}
	if want := `{"_index":"logs","_id":"b","_source":{"x":2}}`; !strings.HasSuffix(out.String(), want+"\n") || strings.Contains(out.String(), "_score") {
		t.Errorf("sorted by a field:\n%s", out.String())
	}
	if !scored(nil) || !scored([]*sluicev1.SortField{{Field: "year"}, {Field: "_score"}}) {
		t.Error("scored: a sort by score has scores")
	}
}

func TestLineKeys(t *testing.T) {
	for _, tt := range []struct {
		line, idField, routingField string
		id, routing, err            string
	}{
		{`{"id":"a1","t":"x"}`, "id", "", "a1", "", ""},
		{`{"isbn":978,"t":"x"}`, "isbn", "", "978", "", ""},
		{`{"id":"a1","tenant":"t7"}`, "id", "tenant", "a1", "t7", ""},
		{`{"id":"a1","tenant":42}`, "id", "tenant", "a1", "42", ""},
		{`{"id":"a1"}`, "id", "tenant", "a1", "", ""}, // no routing: routed by id
		{`{"tenant":"t7"}`, "", "tenant", "", "t7", ""},
		{`{"t":"x"}`, "id", "", "", "", `no "id" field`},
		{`{"id":"a1","tenant":{"x":1}}`, "id", "tenant", "", "", `field "tenant" is not a string or a number`},
		{`[1,2]`, "id", "", "", "", "not a JSON object"},
	} {
		id, routing, err := lineKeys([]byte(tt.line), tt.idField, tt.routingField)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil || id != tt.id || routing != tt.routing {
			t.Errorf("%s: (%q, %q, %v), want (%q, %q)", tt.line, id, routing, err, tt.id, tt.routing)
		}
	}
}

// slowCoordinator serves the Sluice API's health and a ClusterHealth that
// answers only when its caller gives up.
type slowCoordinator struct {
	sluicev1.UnimplementedSluiceServer
}

func (slowCoordinator) ClusterHealth(ctx context.Context, _ *sluicev1.ClusterHealthRequest) (*sluicev1.ClusterHealthResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestConnectionErrors(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(s, h)
	sluicev1.RegisterSluiceServer(s, slowCoordinator{})
	h.SetServingStatus(sluicev1.Sluice_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	go s.Serve(lis)
	defer s.Stop()
	slow := lis.Addr().String()

	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := refused.Addr().String()
	refused.Close()

	for _, tc := range []struct {
		args []string
		want string
	}{
		// Nothing there: said at once, whatever --timeout allows.
		{[]string{"health", "--addr", nobody, "--timeout", "1h"}, "no Sluice at " + nobody + ": connection refused"},
		{[]string{"scroll", "books", "--addr", nobody}, "no Sluice at " + nobody + ": connection refused"},
		// Connected, but the answer takes longer than --timeout.
		{[]string{"health", "--addr", slow, "--timeout", "100ms"}, slow + " did not answer within --timeout 100ms; give it longer with --timeout"},
		// Loads and exports run as long as their input: no --timeout.
		{[]string{"bulk", "-", "--index", "x", "--addr", slow, "--timeout", "1s"}, "unknown flag: --timeout"},
		{[]string{"scroll", "x", "--addr", slow, "--timeout", "1s"}, "unknown flag: --timeout"},
	} {
		start := time.Now()
		_, err := run(t, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%v: took %s", tc.args, took)
		}
	}
}

func TestPrintClusterSettings(t *testing.T) {
	var out bytes.Buffer
	if err := printClusterSettings(&out, &sluicev1.ClusterSettings{DiskWatermarkLow: "85%", DiskWatermarkHigh: "90%",
		DiskWatermarkFloodStage: "95%", RebalanceEnable: "primaries", DrainedNodes: []string{"n1", "n2"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"disk watermark low", "85%", "rebalance enable", "primaries", "drained nodes", "n1,n2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !slices.ContainsFunc(clusterSettingFlags, func(f struct{ flag, field, help string }) bool {
		return f.flag == "rebalance-enable" && f.field == "rebalance_enable"
	}) {
		t.Errorf("no --rebalance-enable flag")
	}
}
