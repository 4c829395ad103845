package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/telemetry"
)

// TestServeCountsGRPCCalls makes a real call to an instrumented server and
// reads it back from /metrics over HTTP.
func TestServeCountsGRPCCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel := telemetry.New()
	addr, err := tel.Serve(ctx, "127.0.0.1:0", slog.Default())
	if err != nil {
		t.Fatal(err)
	}

	srv := rpc.NewServer(rpc.Options{Metrics: tel.GRPC})
	srv.SetServing(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop(time.Second)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; i < 3; i++ {
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}

	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 3`,
		`grpc_server_handling_seconds_bucket{`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	cancel() // the metrics server stops with its context
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := http.Get("http://" + addr.String() + "/metrics"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("metrics server still answering after its context ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeReportsBindErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := telemetry.New().Serve(context.Background(), ln.Addr().String(), slog.Default()); err == nil {
		t.Fatal("serving on a taken address did not fail")
	}
}

// TestPprofOnlyWhenEnabled: the profiler is served only when asked for.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	for _, tt := range []struct {
		enable bool
		want   int
	}{{false, http.StatusNotFound}, {true, http.StatusOK}} {
		ctx, cancel := context.WithCancel(context.Background())
		tel := telemetry.New()
		tel.EnablePprof = tt.enable
		addr, err := tel.Serve(ctx, "127.0.0.1:0", slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr.String() + "/debug/pprof/heap?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("EnablePprof=%v: /debug/pprof/heap answered %d, want %d", tt.enable, resp.StatusCode, tt.want)
		}
		if tt.enable && !strings.Contains(string(body), "heap profile") {
			t.Errorf("EnablePprof: /debug/pprof/heap is not a heap profile: %.100s", body)
		}
		cancel()
	}
}
