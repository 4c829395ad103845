package tlsconf

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// check calls the health service at addr once, on a new connection.
func check(t *testing.T, addr string, opts ...grpc.DialOption) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// serveGRPC runs a gRPC health server on opts and returns its address.
func serveGRPC(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// TestResetIsNotARefusal: a plaintext node that resets the connection
// before the client's preface (a node dying) is a lost connection,
// retryable, not a certificate refusal.
func TestResetIsNotARefusal(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	reset := make(chan struct{}, 16)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0) // close with a RST
			c.Close()
			reset <- struct{}{}
		}
	}()
	// The dialler hands gRPC the connection only once the node has reset
	// it, so gRPC's write of its preface is what fails.
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		<-reset
		time.Sleep(20 * time.Millisecond)
		return c, nil
	}
	err = check(t, lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err == nil {
		t.Fatal("a reset connection answered")
	}
	if Refused(err) || status.Code(err) != codes.Unavailable {
		t.Fatalf("reset connection: %v (refused %v), want a retryable UNAVAILABLE, not a refusal", err, Refused(err))
	}
}

// TestRefusalsOverGRPC: certificates refused either way are refusals,
// every time, over DialOptions' connections: TLS 1.3's late refusal of a
// client certificate arrives as the server's alert, never as a broken
// connection.
func TestRefusalsOverGRPC(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	ca, otherCA := newCA(t), newCA(t)
	node := issue(t, ca, dir, "node", ClusterOrganization)
	node.RequireOrganization = ClusterOrganization
	member := issue(t, ca, dir, "coordinator", ClusterOrganization)
	user := issue(t, ca, dir, "alice", "admin")
	foreign := issue(t, otherCA, other, "node", ClusterOrganization)
	foreign.RequireOrganization = ClusterOrganization

	for _, tt := range []struct {
		name    string
		server  Files
		client  Files
		refused bool
	}{
		{"member to node", node, member, false},
		{"server of a foreign CA", foreign, member, true},
		{"user certificate to an internal service", node, user, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveGRPC(t, grpc.Creds(load(t, tt.server, true).ServerCredentials()))
			client := load(t, tt.client, false)
			for i := 0; i < 20; i++ {
				err := check(t, addr, client.DialOptions()...)
				if tt.refused != Refused(err) || (!tt.refused && err != nil) {
					t.Fatalf("call %d: %v (refused %v), want refused %v", i, err, Refused(err), tt.refused)
				}
			}
		})
	}
	if Refused(errors.New("tls: waiting for the server's first bytes: read tcp: connection reset by peer")) {
		t.Error("a reset while waiting for the server counts as a refusal")
	}
}

// TestConfirmWithASilentServer: a server that waits for the client to
// speak first (a proxy that reads the preface before it answers) is used
// once confirmWait has passed, not refused and not waited on for the
// whole dial.
func TestConfirmWithASilentServer(t *testing.T) {
	defer func(d time.Duration) { confirmWait = d }(confirmWait)
	confirmWait = 200 * time.Millisecond
	dir := t.TempDir()
	ca := newCA(t)
	srv := issue(t, ca, dir, "node", ClusterOrganization)
	srv.ClientCertAuth = true
	addr := serve(t, load(t, srv, true).ServerConfig()) // echoes; says nothing first
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := load(t, issue(t, ca, dir, "coordinator", ClusterOrganization), false).ClientConfig()
	cfg.NextProtos = nil // the echo server speaks no h2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	conn, _, err := confirmed{credentials.NewTLS(cfg)}.ClientHandshake(ctx, "127.0.0.1", raw)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the handshake waited %v", d)
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q, %v", got, err)
	}
}
