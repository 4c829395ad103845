// Package node is the data node process: it registers itself in etcd under
// nodes/<id> with a lease (cluster/registry), serves the internal
// sluice.v1.Node gRPC service, and follows the routing table: shard copies
// assigned to it are opened through a ShardHost and reported STARTED (or
// FAILED with the reason) in their routing entries; copies that go away are
// closed, and deleted when their index is gone. A failed open is retried
// with a growing backoff, 5 attempts in all (Elasticsearch's
// index.allocation.max_retries), and again after a restart.
//
// The node id is stored in <data-dir>/node.id on first start, so a
// restarted node is the same node and finds its shards under
// <data-dir>/<index-uuid>/<shard>/. A lock file keeps a second process off
// the same data dir.
//
// Shutdown order (Stop): stop serving gRPC (draining calls), stop following
// the routing table, close every open shard (the host commits them), then
// revoke the lease so the cluster sees the node leave at once.
//
// The data path plugs in through Config.Host (its ShardHost) and
// Config.Register (registers its sluicev1.NodeServer on the node's gRPC
// server); Store gives it the cluster state, for example for dynamic
// mapping updates through cluster/metadata.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/registry"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/version"
)

// DefaultListen is the node's default gRPC address.
const DefaultListen = "127.0.0.1:9300"

// Config configures a node.
type Config struct {
	// ID is the node id. Default: the id stored in the data dir, or a new
	// random one stored there. A stored id that differs is an error.
	ID string
	// DataDir holds the node id and the shards. Required.
	DataDir string
	// Listen is the gRPC address. Default DefaultListen.
	Listen string
	// Advertise is the address registered for others to dial; default the
	// listener's address.
	Advertise string
	// Zone is the availability zone, for zone-aware placement.
	Zone string
	// Etcd is a client to use; if nil, one is made from EtcdEndpoints.
	Etcd          *clientv3.Client
	EtcdEndpoints []string
	// Prefix of the cluster's keys. Default state.DefaultPrefix.
	Prefix string
	// LeaseTTL of the registration. Default 10s.
	LeaseTTL time.Duration
	// Host hosts the shards. Default DirHost.
	Host ShardHost
	// Register registers the Node service (and any other) on the gRPC
	// server. Default: an UNIMPLEMENTED Node service.
	Register func(grpc.ServiceRegistrar)
	Logger   *slog.Logger
	// Metrics, if set, instruments the gRPC server for Prometheus.
	Metrics *grpcprom.ServerMetrics
}

// Node is a running data node.
type Node struct {
	cfg      Config
	id       string
	lock     *os.File
	etcd     *clientv3.Client
	ownsEtcd bool
	store    *state.Store
	cache    *state.Cache
	reg      *registry.Registration
	lis      net.Listener
	grpc     *rpc.Server
	shards   *reconciler

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New prepares a node: locks the data dir, resolves the node id, connects
// to etcd and binds the listener.
func New(cfg Config) (_ *Node, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: data dir required")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Host == nil {
		cfg.Host = DirHost{DataDir: cfg.DataDir}
	}
	n := &Node{cfg: cfg}
	defer func() {
		if err != nil {
			n.release()
		}
	}()
	if n.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if n.id, err = loadNodeID(cfg.DataDir, cfg.ID); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.cfg.Logger = cfg.Logger.With("node", n.id)
	n.etcd = cfg.Etcd
	if n.etcd == nil {
		if len(cfg.EtcdEndpoints) == 0 {
			return nil, errors.New("node: etcd endpoints required")
		}
		if n.etcd, err = clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
			return nil, fmt.Errorf("node: etcd: %w", err)
		}
		n.ownsEtcd = true
	}
	n.store = state.NewStore(n.etcd, cfg.Prefix)
	n.cache = state.NewCache(n.store, n.cfg.Logger)
	if n.lis, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("node: listen: %w", err)
	}
	n.grpc = rpc.NewServer(rpc.Options{Logger: n.cfg.Logger, Metrics: n.cfg.Metrics})
	if cfg.Register != nil {
		cfg.Register(n.grpc)
	} else {
		sluicev1.RegisterNodeServer(n.grpc, sluicev1.UnimplementedNodeServer{})
	}
	n.reg = registry.New(registry.Config{Client: n.etcd, Key: n.store.Keys.Node(n.id), TTL: cfg.LeaseTTL,
		Value: n.registration, Logger: n.cfg.Logger})
	n.shards = newReconciler(n.id, cfg.DataDir, cfg.Host, n.store, n.cache, n.cfg.Logger)
	return n, nil
}

// release frees what New acquired.
func (n *Node) release() {
	if n.lis != nil {
		n.lis.Close()
	}
	if n.ownsEtcd && n.etcd != nil {
		n.etcd.Close()
	}
	if n.lock != nil {
		n.lock.Close()
	}
}

// ID is the node id.
func (n *Node) ID() string { return n.id }

// Addr is the address the node serves on.
func (n *Node) Addr() string { return n.lis.Addr().String() }

// Advertise is the address the node registers for others to reach it:
// Config.Advertise, else the address it serves on.
func (n *Node) Advertise() string {
	if n.cfg.Advertise != "" {
		return n.cfg.Advertise
	}
	return n.Addr()
}

// Local is an in-process client of the node's services, for a coordinator
// in the same process (see rpc.Server.Local).
func (n *Node) Local() grpc.ClientConnInterface { return n.grpc.Local() }

// Store is the cluster state store.
func (n *Node) Store() *state.Store { return n.store }

// Cache is the node's cluster state cache.
func (n *Node) Cache() *state.Cache { return n.cache }

// Registration exposes the node's registration (for tests and status).
func (n *Node) Registration() *registry.Registration { return n.reg }

// registration is the node's nodes/<id> value.
func (n *Node) registration() (string, error) {
	free, total := diskUsage(n.cfg.DataDir)
	return state.Marshal(&sluicev1.NodeInfo{
		Address: n.Advertise(), Zone: n.cfg.Zone,
		DiskFreeBytes: free, DiskTotalBytes: total, Version: version.Version,
	})
}

// Start serves, registers and follows the routing table in the background.
// It returns once the node is registered (or ctx ends).
func (n *Node) Start(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	n.wg.Go(func() {
		if err := n.grpc.Serve(n.lis); err != nil {
			n.cfg.Logger.Error("node: serve", "err", err)
		}
	})
	n.grpc.SetServing(true)
	n.wg.Go(func() { _ = n.cache.Run(bg) })
	n.wg.Go(func() { _ = n.reg.Run(bg) })
	n.wg.Go(func() { n.shards.run(bg) })
	select {
	case <-n.reg.Registered():
	case <-ctx.Done():
		n.Stop()
		return ctx.Err()
	}
	n.cfg.Logger.Info("node started", "addr", n.Addr(), "zone", n.cfg.Zone, "data", n.cfg.DataDir)
	return nil
}

// Stop shuts down in order: gRPC, routing watch, shards, registration.
func (n *Node) Stop() {
	n.stop.Do(func() {
		n.grpc.Stop(10 * time.Second)
		n.shards.stop()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n.shards.closeAll(ctx)
		cancel()
		if n.cancel != nil {
			n.cancel() // ends the registration, which revokes the lease
		}
		n.wg.Wait()
		n.release()
		n.cfg.Logger.Info("node stopped")
	})
}
