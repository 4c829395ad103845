// Package telemetry is what Sluice's servers expose to Prometheus: one
// registry per process with the Go runtime and process collectors, gRPC
// server metrics (requests, codes, handling-time histograms) and whatever
// the process adds (a data node adds its shards' engine statistics), served
// on /metrics by a small HTTP server that stops with its context. With
// EnablePprof the same server also serves the Go profiler under
// /debug/pprof/ (off by default: profiles expose internals and cost CPU
// while taken).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Telemetry is a process's metrics.
type Telemetry struct {
	Registry *prometheus.Registry
	// GRPC instruments a gRPC server (pass it to rpc.Options.Metrics).
	GRPC *grpcprom.ServerMetrics
	// EnablePprof adds /debug/pprof/ to the server Serve starts.
	EnablePprof bool
}

// New returns a registry with runtime, process and gRPC server metrics.
func New() *Telemetry {
	reg := prometheus.NewRegistry()
	g := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
		grpcprom.WithHistogramBuckets([]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}),
	))
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		g,
	)
	return &Telemetry{Registry: reg, GRPC: g}
}

// Serve serves /metrics on addr until ctx ends. It returns once the
// listener is bound (errors binding are returned at once); serving errors
// after that are logged.
func (t *Telemetry) Serve(ctx context.Context, addr string, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry}))
	if t.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
