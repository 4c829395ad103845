package client

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// serve runs a gRPC server on loopback with a health service; sluice
// registers (and marks serving) the Sluice API as a coordinator does.
func serve(t *testing.T, sluice bool) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(s, h)
	if sluice {
		sluicev1.RegisterSluiceServer(s, sluicev1.UnimplementedSluiceServer{})
		h.SetServingStatus(sluicev1.Sluice_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// refusedAddr is a loopback port nothing listens on.
func refusedAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// silentAddr accepts connections and never answers.
func silentAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return lis.Addr().String()
}

func TestConnect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		addr    func(*testing.T) string
		want    string // "" connects
		within  time.Duration
		atLeast time.Duration
	}{
		{name: "a coordinator", addr: func(t *testing.T) string { return serve(t, true) }, within: time.Second},
		{name: "refused", addr: refusedAddr, want: ": connection refused", within: 3 * time.Second},
		{name: "a data node", addr: func(t *testing.T) string { return serve(t, false) }, want: "not the Sluice API (a data node?", within: time.Second},
		{name: "no name", addr: func(*testing.T) string { return "no-such-host.invalid:9200" }, want: ": the host name does not resolve", within: 3 * time.Second},
		{name: "silent", addr: silentAddr, want: "no answer within 5s", within: ConnectTimeout + 2*time.Second, atLeast: ConnectTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			start := time.Now()
			// The caller allows much longer: Connect's own bound applies.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := Connect(ctx, addr)
			took := time.Since(start)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			} else {
				if err == nil {
					c.Close()
					t.Fatalf("connected to %s", addr)
				}
				if !strings.HasPrefix(err.Error(), "no Sluice at "+addr+": ") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q, want it to start with %q and contain %q", err, "no Sluice at "+addr+": ", tc.want)
				}
				if _, ok := err.(*NotReachableError); !ok {
					t.Errorf("error is a %T, want *NotReachableError", err)
				}
			}
			if took > tc.within || took < tc.atLeast {
				t.Errorf("took %s, want between %s and %s", took, tc.atLeast, tc.within)
			}
		})
	}
}
