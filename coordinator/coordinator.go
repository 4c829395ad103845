// Package coordinator is the coordinator process: the public gRPC API
// (coordinator/server) over the cluster state in etcd, and a candidate for
// the allocator role (coordinator/allocator). Coordinators keep no state of
// their own; run as many as you like.
//
// Lifecycle: New connects to etcd and binds the listener (so Addr is known
// before serving), Start serves and runs the state cache and allocator in
// the background, Stop resigns the allocator role, drains in-flight calls
// and closes everything, in that order.
//
// The data path plugs in through Config.DataPath, a factory given a
// Cluster: the state cache (routing tables: which node holds each shard),
// the node connection pool (a sluicev1.NodeClient per node id) and the
// metadata service.
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator/allocator"
	"github.com/sluice-search/sluice/coordinator/server"
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
	// Etcd is a client to use; if nil, one is made from EtcdEndpoints
	// (and closed by Stop).
	Etcd          *clientv3.Client
	EtcdEndpoints []string
	// Prefix of the cluster's keys. Default state.DefaultPrefix.
	Prefix      string
	ClusterName string
	// DataPath builds the data path; nil serves data RPCs as UNIMPLEMENTED.
	DataPath func(Cluster) (server.DataPath, error)
	// AllocatorSessionTTL: how long a dead allocator holds the role. Default 10s.
	AllocatorSessionTTL time.Duration
	Logger              *slog.Logger
	// Metrics, if set, instruments the gRPC server for Prometheus.
	Metrics *grpcprom.ServerMetrics
	// LocalNodes are in-process clients of data nodes living in this
	// process, by registered address (`sluice dev`); other nodes are
	// reached over the network.
	LocalNodes map[string]grpc.ClientConnInterface
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
	if c.ClusterName == "" {
		c.ClusterName = "sluice"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Cluster is what a data path is built from.
type Cluster struct {
	Store    *state.Store
	Cache    *state.Cache
	Nodes    *nodeconn.Pool
	Metadata *metadata.Service
	Logger   *slog.Logger
}

// Coordinator is a running coordinator.
type Coordinator struct {
	cfg       Config
	etcd      *clientv3.Client
	ownsEtcd  bool
	lis       net.Listener
	grpc      *rpc.Server
	cluster   Cluster
	allocator *allocator.Allocator
	data      server.DataPath

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New connects to etcd and binds the listener.
func New(cfg Config) (*Coordinator, error) {
	cfg.SetDefaults()
	c := &Coordinator{cfg: cfg, etcd: cfg.Etcd}
	if c.etcd == nil {
		if len(cfg.EtcdEndpoints) == 0 {
			return nil, errors.New("coordinator: etcd endpoints required")
		}
		cl, err := clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("coordinator: etcd: %w", err)
		}
		c.etcd, c.ownsEtcd = cl, true
	}
	store := state.NewStore(c.etcd, cfg.Prefix)
	cache := state.NewCache(store, cfg.Logger)
	nodes := nodeconn.New(cache)
	for addr, cc := range cfg.LocalNodes {
		nodes.AddLocal(addr, cc)
	}
	c.cluster = Cluster{Store: store, Cache: cache, Nodes: nodes, Metadata: metadata.New(store), Logger: cfg.Logger}
	var dp server.DataPath
	if cfg.DataPath != nil {
		var err error
		if dp, err = cfg.DataPath(c.cluster); err != nil {
			c.closeEtcd()
			return nil, fmt.Errorf("coordinator: data path: %w", err)
		}
	}
	c.data = dp
	c.allocator = allocator.New(allocator.Config{Store: store, Cache: cache, ID: cfg.ID,
		SessionTTL: cfg.AllocatorSessionTTL, Logger: cfg.Logger.With("component", "allocator")})
	c.grpc = rpc.NewServer(rpc.Options{Logger: cfg.Logger, Metrics: cfg.Metrics})
	server.New(server.Config{
		Metadata: c.cluster.Metadata, Cache: cache, DataPath: dp, ClusterName: cfg.ClusterName,
		Leader: func(ctx context.Context) (string, error) { return allocator.Leader(ctx, c.etcd, store.Keys) },
	}).Register(c.grpc)
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		c.closeEtcd()
		return nil, fmt.Errorf("coordinator: listen: %w", err)
	}
	c.lis = lis
	return c, nil
}

func (c *Coordinator) closeEtcd() {
	if c.ownsEtcd {
		c.etcd.Close()
	}
}

// Addr is the address the coordinator serves on.
func (c *Coordinator) Addr() string { return c.lis.Addr().String() }

// ID is the coordinator's id.
func (c *Coordinator) ID() string { return c.cfg.ID }

// Cluster returns the coordinator's cluster handles.
func (c *Coordinator) Cluster() Cluster { return c.cluster }

// IsAllocator reports whether this coordinator holds the allocator role.
func (c *Coordinator) IsAllocator() bool { return c.allocator.IsLeader() }

// Start loads the cluster state, then serves and allocates in the
// background until Stop.
func (c *Coordinator) Start(ctx context.Context) error {
	if _, err := c.cluster.Cache.Refresh(ctx); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.wg.Go(func() { _ = c.cluster.Cache.Run(bg) })
	c.wg.Go(func() { _ = c.allocator.Run(bg) })
	// A data path with background work (the reindex task runner) runs it until Stop.
	if r, ok := c.data.(interface{ Run(context.Context) error }); ok {
		c.wg.Go(func() { _ = r.Run(bg) })
	}
	c.wg.Go(func() {
		if err := c.grpc.Serve(c.lis); err != nil {
			c.cfg.Logger.Error("coordinator: serve", "err", err)
		}
	})
	c.grpc.SetServing(true)
	c.cfg.Logger.Info("coordinator serving", "id", c.cfg.ID, "addr", c.Addr())
	return nil
}

// Stop resigns, drains calls (up to 10s), and releases everything.
func (c *Coordinator) Stop() {
	c.stop.Do(func() {
		c.grpc.Stop(10 * time.Second)
		if c.cancel != nil {
			c.cancel()
		} else {
			c.lis.Close()
		}
		c.wg.Wait()
		c.cluster.Nodes.Close()
		c.closeEtcd()
		c.cfg.Logger.Info("coordinator stopped", "id", c.cfg.ID)
	})
}
