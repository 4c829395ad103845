package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// ServeHealth serves h, and nothing else, in plaintext on addr until ctx
// ends, for the kubelet: its gRPC probes speak neither TLS nor
// credentials, so a secure server's own port cannot answer them. It tells
// a prober only whether the process is serving. It returns once the
// listener is bound.
func ServeHealth(ctx context.Context, addr string, h *health.Server, log *slog.Logger) (net.Addr, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health listener: %w", err)
	}
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, h)
	go func() {
		if err := g.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("health server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		g.Stop()
	}()
	return lis.Addr(), nil
}
