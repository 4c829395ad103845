// Package client is the Go client of Sluice's public API: Dial a
// coordinator and call the generated sluice.v1.Sluice methods on the
// returned Client, which also carries the standard health client.
//
// Defaults: messages up to 64 MiB, keep-alive pings on idle connections,
// and transparent retries (with backoff) of UNAVAILABLE for the read-only,
// idempotent methods through the gRPC service config — a coordinator
// restarting behind a load balancer costs a retry, not an error. Writes
// (Bulk, CreateIndex, ...) are not retried automatically: the caller knows
// whether repeating one is safe.
package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

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
	}
}

// Client is a connection to a coordinator.
type Client struct {
	sluicev1.SluiceClient
	Health healthpb.HealthClient
	conn   *grpc.ClientConn
}

// Dial connects to a coordinator at addr ("host:port") and waits until the
// connection is ready or ctx ends, so a wrong address fails here with a
// clear error rather than at the first call.
func Dial(ctx context.Context, addr string, opts ...grpc.DialOption) (*Client, error) {
	conn, err := grpc.NewClient(addr, append(DialOptions(), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", addr, err)
	}
	if err := waitReady(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("client: cannot connect to %s: %w", addr, err)
	}
	return &Client{SluiceClient: sluicev1.NewSluiceClient(conn), Health: healthpb.NewHealthClient(conn), conn: conn}, nil
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
