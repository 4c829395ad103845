package rpc

import (
	"context"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// TestServeHealthFollowsTheServer: the plaintext health port answers what
// the server's health says, as it changes, and serves nothing else.
func TestServeHealthFollowsTheServer(t *testing.T) {
	s := NewServer(Options{Logger: slog.Default()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := ServeHealth(ctx, "127.0.0.1:0", s.Health, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("before serving: %v", got)
	}
	s.SetServing(true)
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("serving: %v", got)
	}
	s.SetServing(false)
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("stopped: %v", got)
	}
	// Reflection, served on the server's own port, is not served here.
	st, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("reflection on the health port: %v, want Unimplemented", err)
	}
}
