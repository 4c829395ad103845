// Package client is the Go client of Sluice's public API: Dial (wait for
// the cluster) or Connect (answer within seconds whether a coordinator is
// there) and call the generated sluice.v1.Sluice methods on the returned
// Client, which also carries the standard health client. Both fail with a
// *NotReachableError ("no Sluice at ADDR: connection refused").
//
// Defaults: messages up to 64 MiB, keep-alive pings on idle connections,
// reconnection at most ReconnectMaxDelay apart, and transparent retries (with backoff) of UNAVAILABLE for the read-only,
// idempotent methods through the gRPC service config — a coordinator
// restarting behind a load balancer costs a retry, not an error. Writes
// (Bulk, CreateIndex, ...) are not retried automatically: the caller knows
// whether repeating one is safe.
package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DefaultAddr is where `sluice dev` and a local coordinator listen.
const DefaultAddr = "127.0.0.1:9200"

// MaxMessageBytes matches the servers' limit.
const MaxMessageBytes = 64 << 20

// retryConfig retries UNAVAILABLE on idempotent reads.
const retryConfig = `{
  "methodConfig": [{
    "name": [
      {"service": "sluice.v1.Sluice", "method": "GetIndex"},
      {"service": "sluice.v1.Sluice", "method": "ListIndices"},
      {"service": "sluice.v1.Sluice", "method": "ListAliases"},
      {"service": "sluice.v1.Sluice", "method": "Get"},
      {"service": "sluice.v1.Sluice", "method": "Search"},
      {"service": "sluice.v1.Sluice", "method": "Refresh"},
      {"service": "sluice.v1.Sluice", "method": "GetTask"},
      {"service": "sluice.v1.Sluice", "method": "ListTasks"},
      {"service": "sluice.v1.Sluice", "method": "ClusterHealth"},
      {"service": "sluice.v1.Sluice", "method": "ClusterState"},
      {"service": "grpc.health.v1.Health", "method": "Check"}
    ],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.1s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// DialOptions are the defaults Dial uses; pass more to Dial to add to or
// override them (for example transport credentials for TLS).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		grpc.WithDefaultServiceConfig(retryConfig),
		// gRPC's default dial backoff grows to 2 minutes: a long-lived
		// client (the operator, a load) would notice a returned cluster
		// that late.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6,
			Jitter: 0.2, MaxDelay: ReconnectMaxDelay}, MinConnectTimeout: 5 * time.Second}),
	}
}

// ReconnectMaxDelay bounds the wait between attempts to reconnect to a
// coordinator that went away.
const ReconnectMaxDelay = 3 * time.Second

// Client is a connection to a coordinator.
type Client struct {
	sluicev1.SluiceClient
	Health healthpb.HealthClient
	conn   *grpc.ClientConn
}

// Dial connects to a coordinator at addr ("host:port") and waits until the
// connection is ready or ctx ends, so a wrong address fails here with a
// clear error rather than at the first call. Dial suits a program that
// waits for its cluster to come up; a command that wants a prompt answer
// calls Connect.
func Dial(ctx context.Context, addr string, opts ...grpc.DialOption) (*Client, error) {
	c, err := newClient(addr, opts)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, c.conn); err != nil {
		c.Close()
		return nil, &NotReachableError{Addr: addr, Reason: err.Error()}
	}
	return c, nil
}

// ConnectTimeout bounds how long Connect waits for an answer.
const ConnectTimeout = 5 * time.Second

// Connect connects to the coordinator at addr and checks, through the
// standard health service, that it serves the Sluice API. It fails within
// ConnectTimeout (or ctx, if that ends first) with a *NotReachableError:
// at once when the connection is refused or the name does not resolve,
// after ConnectTimeout when nothing answers. A gRPC server that is not a
// coordinator (a data node, another program) is refused too.
func Connect(ctx context.Context, addr string, opts ...grpc.DialOption) (*Client, error) {
	c, err := newClient(addr, opts)
	if err != nil {
		return nil, err
	}
	if err := c.check(ctx, addr); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func newClient(addr string, opts []grpc.DialOption) (*Client, error) {
	conn, err := grpc.NewClient(addr, append(DialOptions(), opts...)...)
	if err != nil {
		return nil, &NotReachableError{Addr: addr, Reason: err.Error()}
	}
	return &Client{SluiceClient: sluicev1.NewSluiceClient(conn), Health: healthpb.NewHealthClient(conn), conn: conn}, nil
}

// check asks the health service whether the Sluice API is served. The
// call does not wait for a connection: a refused one fails it at once
// (after the retries of the service config, about a second).
func (c *Client) check(ctx context.Context, addr string) error {
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	resp, err := c.Health.Check(cctx, &healthpb.HealthCheckRequest{Service: sluicev1.Sluice_ServiceDesc.ServiceName})
	switch {
	case err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
		return nil
	case err == nil:
		return &NotReachableError{Addr: addr, Reason: "the coordinator is not serving yet (starting or stopping)"}
	case ctx.Err() != nil:
		return ctx.Err()
	case cctx.Err() != nil:
		return &NotReachableError{Addr: addr, Reason: fmt.Sprintf("no answer within %s", ConnectTimeout)}
	}
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		// Reached, but refused: say why, not that nothing is there.
		return err
	case codes.NotFound:
		return &NotReachableError{Addr: addr, Reason: "it serves gRPC but not the Sluice API (a data node? clients connect to a coordinator)"}
	case codes.Unimplemented:
		return &NotReachableError{Addr: addr, Reason: "it serves gRPC but no health service: not a Sluice coordinator"}
	}
	return &NotReachableError{Addr: addr, Reason: dialReason(status.Convert(err).Message())}
}

// dialReason keeps the part of gRPC's connection error that says what
// went wrong ("connection refused", "no such host") after a chain of
// prefixes (retries, "rpc error: code = ...", "transport: ...").
func dialReason(msg string) string {
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	if strings.Contains(msg, "name resolver error") {
		return "the host name does not resolve"
	}
	if strings.Contains(msg, "server preface") {
		return "it closed the connection: does it serve TLS? (give the CA of its certificate: --cacert, $SLUICE_CACERT)"
	}
	if _, after, ok := strings.Cut(msg, "Error while dialing: "); ok {
		msg = strings.TrimSuffix(after, `"`)
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "dial tcp") {
		msg = msg[i+2:]
	}
	return msg
}

// NotReachableError is a coordinator that Dial or Connect could not reach.
type NotReachableError struct {
	Addr   string
	Reason string
}

func (e *NotReachableError) Error() string {
	return fmt.Sprintf("no Sluice at %s: %s", e.Addr, e.Reason)
}

func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			if s == connectivity.TransientFailure {
				return fmt.Errorf("%w (connection failing)", ctx.Err())
			}
			return ctx.Err()
		}
	}
}

// Conn is the underlying connection, for other services on the same server.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
