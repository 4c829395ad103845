// Package coordinator is the coordinator process, assembled in one place:
// New builds every part before anything serves —
//
//   - the cluster state (cluster/state: store and watch-fed cache) and the
//     index and alias API over it (cluster/metadata);
//   - the data path (coordinator/datapath): bulk routing, search fan-out
//     and merge, point-in-time, scroll, over a pool of connections to the
//     data nodes (cluster/nodeconn; in-process channels for nodes of this
//     process, as in sluice dev);
//   - the reindex task manager (coordinator/reindex), which accepts tasks
//     on any coordinator and runs them on the one elected task runner;
//   - the public gRPC service (coordinator/server), translating to those;
//   - optionally (Config.HTTPListen), the Elasticsearch-compatible HTTP
//     API (coordinator/esapi), a client of that service in-process
//     (rpc.Server.Local), so HTTP calls pass the same interceptors, guard
//     and error table as gRPC ones, with the HTTP caller's credentials;
//     served over TLS with Config.TLS;
//   - a candidate for the allocator role (coordinator/allocator);
//   - with Config.TLS, TLS on the public server and on the calls to data
//     nodes; with Config.Auth, the guard (security/auth) authenticating and
//     authorizing every public call, and the Auth service.
//
// Coordinators keep no state of their own; run as many as you like.
//
// errors.go holds the coordinator's one error table: the typed errors of
// the cluster state, the data path and the task manager as gRPC codes,
// with RetryInfo on overload. The server applies it to every error a
// handler returns; the data path and the task manager describe per-item
// failures and failed tasks with it. A data node's error is relayed with
// the node's code and details (rpc.Relay), never re-worded.
//
// New connects to etcd and binds the listener (so Addr is known before
// serving). Start loads the cluster state, then starts in this order:
// follow the cluster state, campaign for the allocator, campaign for the
// task runner, serve. Stop drains in-flight calls (stop serving), then
// ends the background work — the allocator resigns, the task runner stops
// its tasks' slices — and closes the node connections and etcd, in that
// order.
package coordinator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator/allocator"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/esapi"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/coordinator/server"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// DefaultListen is the coordinator's default address.
const DefaultListen = "127.0.0.1:9200"

// Config configures a coordinator.
type Config struct {
	// ID names this coordinator in the allocator election. Default:
	// hostname plus a random suffix.
	ID string
	// Listen is the gRPC address. Default DefaultListen.
	Listen string
	// HTTPListen, if set, serves the Elasticsearch-compatible HTTP API
	// (coordinator/esapi) on this address: HTTPS with TLS, its callers
	// authenticated and authorized by the guard with Auth.
	HTTPListen string
	// Etcd is a client to use; if nil, one is made from EtcdEndpoints
	// (and closed by Stop).
	Etcd          *clientv3.Client
	EtcdEndpoints []string
	// Prefix of the cluster's keys. Default state.DefaultPrefix.
	Prefix string
	// ClusterName is the name the cluster reports; the first coordinator
	// stores it in etcd, later ones must agree or leave it empty
	// (claimClusterName). Empty: the stored name, or DefaultClusterName.
	ClusterName string
	// DataPath tunes the data path (bulk admission, timeouts, scroll
	// keep-alives).
	DataPath datapath.Options
	// Tasks tunes the reindex task manager (task retention, checkpoint
	// and progress intervals).
	Tasks reindex.Options
	// AllocatorSessionTTL: how long a dead allocator holds the role. Default 10s.
	AllocatorSessionTTL time.Duration
	// FollowerCheckInterval: how often the allocator checks that each data
	// node serves (allocator.Config). Default 1s.
	FollowerCheckInterval time.Duration
	// MappingUpdateTimeout bounds how long PutMapping waits for etcd
	// (`--mapping-update-timeout`). Default
	// metadata.DefaultMappingUpdateTimeout.
	MappingUpdateTimeout time.Duration
	Logger               *slog.Logger
	// Metrics, if set, instruments the gRPC server for Prometheus.
	Metrics *grpcprom.ServerMetrics
	// Registry, if set, gets the coordinator's per-index request
	// latency histograms (server.Metrics) and, with HTTPListen, the HTTP
	// API's request histograms (esapi.Metrics).
	Registry prometheus.Registerer
	// LocalNodes are in-process clients of data nodes living in this
	// process, by registered address (`sluice dev`); other nodes are
	// reached over the network.
	LocalNodes map[string]grpc.ClientConnInterface
	// TLS, if set, secures the public server and the calls to data nodes,
	// which require its certificate to be of the cluster
	// (tlsconf.ClusterOrganization).
	TLS *tlsconf.Source
	// EtcdTLS, if set, is the TLS configuration of the etcd client made
	// from EtcdEndpoints.
	EtcdTLS *tls.Config
	// Auth, if set, authenticates and authorizes every call of the public
	// server and serves the Auth service (security/auth); its Store and
	// Cache are the coordinator's, its Audit defaults to Logger. It needs
	// TLS: credentials are not sent in plaintext.
	Auth *auth.Config
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = host + "-" + uuid.NewString()[:8]
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Coordinator is a coordinator.
type Coordinator struct {
	cfg       Config
	etcd      *clientv3.Client
	ownsEtcd  bool
	lis       net.Listener
	grpc      *rpc.Server
	store     *state.Store
	cache     *state.Cache
	nodes     *nodeconn.Pool
	data      *datapath.DataPath
	tasks     *reindex.Manager
	guard     *auth.Guard
	allocator *allocator.Allocator
	server    *server.Server
	httpLis   net.Listener
	http      *http.Server
	esapi     *esapi.API

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New connects to etcd and binds the listener.
func New(cfg Config) (*Coordinator, error) {
	cfg.SetDefaults()
	if cfg.Auth != nil && cfg.TLS == nil {
		return nil, errors.New("coordinator: authentication needs TLS (--cert-file, --key-file): API keys are not sent in plaintext")
	}
	c := &Coordinator{cfg: cfg, etcd: cfg.Etcd}
	if c.etcd == nil {
		if len(cfg.EtcdEndpoints) == 0 {
			return nil, errors.New("coordinator: etcd endpoints required")
		}
		cl, err := clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, TLS: cfg.EtcdTLS, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("coordinator: etcd: %w", err)
		}
		c.etcd, c.ownsEtcd = cl, true
	}
	c.store = state.NewStore(c.etcd, cfg.Prefix)
	c.cache = state.NewCache(c.store, cfg.Logger)
	c.nodes = nodeconn.New(c.cache, cfg.TLS.DialOptions()...)
	for addr, cc := range cfg.LocalNodes {
		c.nodes.AddLocal(addr, cc)
	}
	md := metadata.New(c.store)
	dopts := cfg.DataPath
	if dopts.Logger == nil {
		dopts.Logger = cfg.Logger
	}
	dopts.SetDefaults()
	errs := errorTable(dopts.RetryAfter)
	dopts.Errors = errs
	c.data = datapath.New(c.cache, c.nodes, dopts)
	topts := cfg.Tasks
	if topts.ID == "" {
		topts.ID = cfg.ID
	}
	if topts.Logger == nil {
		topts.Logger = cfg.Logger
	}
	topts.Errors = errs
	c.tasks = reindex.New(c.store, c.cache, c.nodes, md, c.data, topts)
	c.allocator = allocator.New(allocator.Config{Store: c.store, Cache: c.cache, ID: cfg.ID, Conn: c.nodes.Conn,
		SessionTTL: cfg.AllocatorSessionTTL, FollowerCheckInterval: cfg.FollowerCheckInterval,
		Logger: cfg.Logger.With("component", "allocator")})
	ropts := rpc.Options{Logger: cfg.Logger, Metrics: cfg.Metrics, Errors: errs,
		MaxRecvMessageBytes: int(dopts.MaxRequestBytes()), Admit: c.admit, Creds: cfg.TLS.ServerCredentials(),
		// A bulk item's action is checked with the item (datapath), so a
		// bad one fails alone.
		Enums: rpc.NewEnumCheck("sluice.v1.BulkItem.action")}
	var authStore *auth.Store
	if cfg.Auth != nil {
		acfg := *cfg.Auth
		authStore = auth.NewStore(c.etcd, cfg.Prefix)
		acfg.Store, acfg.Cache = authStore, c.cache
		if acfg.Audit == nil {
			acfg.Audit = cfg.Logger.With("component", "audit")
		}
		c.guard = auth.NewGuard(acfg)
		ropts.Unary, ropts.Stream = []grpc.UnaryServerInterceptor{c.guard.Unary}, []grpc.StreamServerInterceptor{c.guard.Stream}
	}
	c.grpc = rpc.NewServer(ropts)
	var reqMetrics *server.Metrics
	if cfg.Registry != nil {
		reqMetrics = server.NewMetrics()
		if err := cfg.Registry.Register(reqMetrics); err != nil {
			c.closeEtcd()
			return nil, fmt.Errorf("coordinator: metrics: %w", err)
		}
	}
	c.server = server.New(server.Config{
		Metadata: md, Cache: c.cache, Data: c.data, Tasks: c.tasks, Metrics: reqMetrics, MappingUpdateTimeout: cfg.MappingUpdateTimeout,
		Leader: func(ctx context.Context) (string, error) { return allocator.Leader(ctx, c.etcd, c.store.Keys) },
	})
	c.server.Register(c.grpc)
	if c.guard != nil {
		auth.NewService(authStore, c.guard).Register(c.grpc)
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		c.closeEtcd()
		return nil, fmt.Errorf("coordinator: listen: %w", err)
	}
	c.lis = lis
	if cfg.HTTPListen != "" {
		if c.httpLis, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			c.lis.Close()
			c.closeEtcd()
			return nil, fmt.Errorf("coordinator: HTTP listen: %w", err)
		}
		var httpMetrics *esapi.Metrics
		if cfg.Registry != nil {
			httpMetrics = esapi.NewMetrics()
			if err := cfg.Registry.Register(httpMetrics); err != nil {
				c.httpLis.Close()
				c.lis.Close()
				c.closeEtcd()
				return nil, fmt.Errorf("coordinator: HTTP metrics: %w", err)
			}
		}
		var authClient sluicev1.AuthClient
		if c.guard != nil {
			authClient = sluicev1.NewAuthClient(c.grpc.Local())
		}
		c.esapi = esapi.New(esapi.Config{Client: sluicev1.NewSluiceClient(c.grpc.Local()), Auth: authClient, Logger: cfg.Logger.With("component", "esapi"), Metrics: httpMetrics,
			// The HTTP API's bulks take room in the same budget as
			// gRPC's, before their bodies are read, and are no larger.
			AdmitBulk: func(ctx context.Context) (context.Context, error) {
				ctx, err := c.data.AdmitBulk(ctx)
				return ctx, errs.Err(err)
			},
			MaxRequestBytes: dopts.MaxRequestBytes()})
		c.http = &http.Server{Handler: c.esapi, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
		if cfg.TLS != nil {
			// The gRPC port's certificates, reloaded as they change, and
			// client certificates verified against the same CA.
			c.http.TLSConfig = cfg.TLS.ServerConfig()
		}
	}
	return c, nil
}

// admit sees every call before its messages are read: bulk calls take
// room in the bulk budget first, or are refused unread (datapath.AdmitBulk)
// — in a secure cluster only once their credentials are good, so a caller
// without them never holds budget (auth.Guard.Authenticate).
func (c *Coordinator) admit(ctx context.Context, method string) (context.Context, error) {
	switch method {
	case sluicev1.Sluice_Bulk_FullMethodName, sluicev1.Sluice_BulkStream_FullMethodName:
		if c.guard != nil {
			if err := c.guard.Authenticate(ctx, method); err != nil {
				return ctx, err
			}
		}
		return c.data.AdmitBulk(ctx)
	}
	return ctx, nil
}

// HTTPAddr is the address of the HTTP API, "" without one.
func (c *Coordinator) HTTPAddr() string {
	if c.httpLis == nil {
		return ""
	}
	return c.httpLis.Addr().String()
}

func (c *Coordinator) closeEtcd() {
	if c.ownsEtcd {
		c.etcd.Close()
	}
}

// Addr is the address the coordinator serves on.
func (c *Coordinator) Addr() string { return c.lis.Addr().String() }

// Health is the coordinator's gRPC health service (rpc.ServeHealth serves
// it to probes in plaintext).
func (c *Coordinator) Health() *health.Server { return c.grpc.Health }

// Services are the services the coordinator serves (tests walk them).
func (c *Coordinator) Services() map[string]grpc.ServiceInfo { return c.grpc.GetServiceInfo() }

// ID is the coordinator's id.
func (c *Coordinator) ID() string { return c.cfg.ID }

// DataPath is the coordinator's data path (tests hold its budgets).
func (c *Coordinator) DataPath() *datapath.DataPath { return c.data }

// IsAllocator reports whether this coordinator holds the allocator role.
func (c *Coordinator) IsAllocator() bool { return c.allocator.IsLeader() }

// Start settles the cluster's name with the other coordinators (stored in
// etcd by the first; a coordinator naming another cluster is refused) and
// loads the cluster state, then runs the coordinator in the background, in
// the order the package doc gives, until Stop.
func (c *Coordinator) Start(ctx context.Context) error {
	name, err := claimClusterName(ctx, c.etcd, c.store.Keys.ClusterName(), c.cfg.ClusterName)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.server.SetClusterName(name)
	if c.guard != nil {
		if err := c.guard.Start(ctx); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	if _, err := c.cache.Refresh(ctx); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.wg.Go(func() { _ = c.cache.Run(bg) })
	c.wg.Go(func() { _ = c.allocator.Run(bg) })
	c.wg.Go(func() { _ = c.tasks.Run(bg) })
	c.wg.Go(func() {
		if err := c.grpc.Serve(c.lis); err != nil {
			c.cfg.Logger.Error("coordinator: serve", "err", err)
		}
	})
	c.grpc.SetServing(true)
	if c.http != nil {
		c.wg.Go(func() {
			serve := c.http.Serve
			if c.http.TLSConfig != nil {
				serve = func(l net.Listener) error { return c.http.ServeTLS(l, "", "") }
			}
			if err := serve(c.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.cfg.Logger.Error("coordinator: serve HTTP", "err", err)
			}
		})
	}
	c.cfg.Logger.Info("coordinator serving", "id", c.cfg.ID, "addr", c.Addr(), "http", c.HTTPAddr())
	return nil
}

// Stop drains calls (up to 10s), ends the background work and releases
// everything, in the order the package doc gives.
func (c *Coordinator) Stop() {
	c.stop.Do(func() {
		if c.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := c.http.Shutdown(ctx); err != nil {
				c.http.Close()
			}
			cancel()
			c.esapi.Close()
		}
		c.grpc.Stop(10 * time.Second)
		if c.cancel != nil {
			c.cancel()
		} else {
			c.lis.Close()
			if c.httpLis != nil {
				c.httpLis.Close()
			}
		}
		c.wg.Wait()
		c.nodes.Close()
		c.closeEtcd()
		c.cfg.Logger.Info("coordinator stopped", "id", c.cfg.ID)
	})
}
