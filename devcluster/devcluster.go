// Package devcluster runs a whole Sluice cluster in one process, for
// `sluice dev` and for tests: an embedded etcd, one coordinator
// (coordinator.New) and N data nodes (node.New) on loopback — each process
// assembled by its own constructor, as the binary does — with all data
// under one directory:
//
//	<data-dir>/dev.lock   held while the cluster runs (cluster/dirlock)
//	<data-dir>/etcd/      the cluster state
//	<data-dir>/node-<i>/  node i: node.id and <index-uuid>/<shard>/ dirs
//
// The lock is taken before etcd starts: a second cluster on the same
// directory fails at once naming the holder, where etcd would wait for its
// database's lock forever.
//
// Every node listens on loopback (for standalone nodes, remote reindex and
// grpcurl), but the coordinator calls its in-process nodes directly
// (rpc.Server.Local): no encoding, HTTP/2 or socket on the search and bulk
// path.
//
// Stop shuts down the coordinator first (no new requests, allocator
// resigns), then the nodes (each commits its shards and deregisters), then
// etcd. Starting again on the same directory finds the same node ids, the
// same indices and routing, and the nodes reopen their shards.
package devcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-search/sluice/cluster/dirlock"
	"github.com/sluice-search/sluice/cluster/embedetcd"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// Config configures a dev cluster.
type Config struct {
	// DataDir holds everything. Required.
	DataDir string
	// Listen is the coordinator's address. Default coordinator.DefaultListen.
	Listen string
	// HTTPListen, if set, is the address of the coordinator's
	// Elasticsearch-compatible HTTP API (coordinator.Config.HTTPListen).
	HTTPListen string
	// EtcdURL is the embedded etcd's client URL; default a free loopback
	// port. Fix it to let standalone `sluice node`s join.
	EtcdURL string
	// Nodes is the number of in-process data nodes; 0 runs etcd and the
	// coordinator only, for separate `sluice node` processes to join
	// (multi-process tests and benchmarks).
	Nodes int
	// DataPath and Tasks tune the coordinator's data path and reindex task
	// manager (coordinator.Config).
	DataPath datapath.Options
	Tasks    reindex.Options
	// LeaseTTL of node registrations and the allocator session. Default 10s.
	LeaseTTL time.Duration
	// ClusterSettings, if set, are stored before anything is placed (test
	// clusters pass watermark.Ignored, so the host's disk does not decide
	// placement).
	ClusterSettings *sluicev1.ClusterSettings
	// Metrics, if set, instruments the gRPC servers of the coordinator and
	// the nodes (one set of gRPC metrics for the process; the services'
	// names tell them apart); Registry, if set, gets the coordinator's
	// per-index request histograms.
	Metrics  *grpcprom.ServerMetrics
	Registry prometheus.Registerer
	// Node is every node's configuration (scrubbing, recoveries, shard
	// tuning); its ID, DataDir, Listen, Etcd, LeaseTTL and Logger are set
	// per node.
	Node   node.Config
	Logger *slog.Logger
	// Secure runs the cluster with TLS on every connection (etcd
	// included, with client certificates) from a CA and certificates
	// made in <data-dir>/tls/ (kept across runs).
	Secure bool
}

// Cluster is a running dev cluster.
type Cluster struct {
	Etcd        *embedetcd.Server
	Coordinator *coordinator.Coordinator
	Nodes       []*node.Node

	// TLSDir holds the CA and certificates of a secure cluster; "" if
	// not secure.
	TLSDir string
	// AdminKey is a secure cluster's admin API key (encoded, as sent),
	// also kept in <TLSDir>/admin.apikey.
	AdminKey string

	etcd *clientv3.Client
	lock *dirlock.Lock
	log  *slog.Logger
}

// Start starts etcd, the nodes and the coordinator, and returns once all
// serve.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("devcluster: DataDir required")
	}
	if cfg.Nodes < 0 {
		return nil, errors.New("devcluster: Nodes must be >= 0")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Cluster{log: cfg.Logger}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.lock, err = dirlock.Acquire(cfg.DataDir, "dev.lock"); errors.Is(err, dirlock.ErrLocked) {
		return nil, fmt.Errorf("%w: is another sluice dev running on it? Stop it, or give this one another --data-dir", err)
	} else if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	ecfg := embedetcd.Config{Dir: filepath.Join(cfg.DataDir, "etcd"), ClientURL: cfg.EtcdURL}
	var nodeTLS, coordTLS *tlsconf.Source
	var etcdTLS *tls.Config
	if cfg.Secure {
		if nodeTLS, coordTLS, etcdTLS, err = c.secure(cfg.DataDir, &ecfg); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
	}
	c.Etcd, err = embedetcd.Start(ctx, ecfg)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	c.etcd, err = clientv3.New(clientv3.Config{Endpoints: c.Etcd.Endpoints(), TLS: etcdTLS, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("devcluster: etcd client: %w", err)
	}
	if cfg.ClusterSettings != nil {
		var t state.Txn
		t.Put(state.NewKeys("").Settings(), &statev1.ClusterSettings{Settings: cfg.ClusterSettings})
		if err := state.NewStore(c.etcd, "").Commit(ctx, &t); err != nil {
			return nil, fmt.Errorf("devcluster: cluster settings: %w", err)
		}
	}
	local := map[string]grpc.ClientConnInterface{}
	for i := range cfg.Nodes {
		id := fmt.Sprintf("node-%d", i+1)
		dir := filepath.Join(cfg.DataDir, id)
		ncfg := cfg.Node
		ncfg.ID, ncfg.DataDir, ncfg.Listen, ncfg.Etcd, ncfg.LeaseTTL, ncfg.Logger = id, dir, "127.0.0.1:0", c.etcd, cfg.LeaseTTL, cfg.Logger.With("node", id)
		ncfg.TLS = nodeTLS
		ncfg.Metrics = cfg.Metrics
		n, err := node.New(ncfg)
		if err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		c.Nodes = append(c.Nodes, n)
		local[n.Advertise()] = n.Local()
		if err := n.Start(ctx); err != nil {
			return nil, fmt.Errorf("devcluster: %s: %w", id, err)
		}
	}
	c.Coordinator, err = coordinator.New(coordinator.Config{
		ID: "coordinator-1", Listen: cfg.Listen, HTTPListen: cfg.HTTPListen, Etcd: c.etcd, ClusterName: "sluice-dev",
		DataPath: cfg.DataPath, Tasks: cfg.Tasks, AllocatorSessionTTL: cfg.LeaseTTL, Logger: cfg.Logger.With("component", "coordinator"),
		LocalNodes: local, TLS: coordTLS, Auth: authConfig(cfg.Secure), Metrics: cfg.Metrics, Registry: cfg.Registry,
		MappingUpdateTimeout: cfg.Node.MappingUpdateTimeout, // the same bound for the API's mapping updates
	})
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	if err := c.Coordinator.Start(ctx); err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	if cfg.Secure {
		if c.AdminKey, err = adminKey(ctx, auth.NewStore(c.etcd, ""), c.TLSDir); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
	}
	return c, nil
}

// secure makes or reuses the CA and certificates in <dataDir>/tls, serves
// etcd over TLS with them, and returns the TLS of the nodes (which require
// the cluster's client certificates), of the coordinator (whose clients
// may present certificates) and of the etcd client.
func (c *Cluster) secure(dataDir string, ecfg *embedetcd.Config) (nodeTLS, coordTLS *tlsconf.Source, etcdTLS *tls.Config, err error) {
	c.TLSDir = filepath.Join(dataDir, "tls")
	if err := prepareTLS(c.TLSDir); err != nil {
		return nil, nil, nil, err
	}
	files := tlsFiles(c.TLSDir)
	ecfg.CertFile, ecfg.KeyFile, ecfg.TrustedCAFile = files.CertFile, files.KeyFile, files.TrustedCAFile
	if coordTLS, err = tlsconf.Load(files, true, c.log); err != nil {
		return nil, nil, nil, err
	}
	internal := files
	internal.ClientCertAuth, internal.RequireOrganization = true, tlsconf.ClusterOrganization
	if nodeTLS, err = tlsconf.Load(internal, true, c.log); err != nil {
		return nil, nil, nil, err
	}
	return nodeTLS, coordTLS, coordTLS.ClientConfig(), nil
}

// Addr is the coordinator's address: what clients connect to.
func (c *Cluster) Addr() string { return c.Coordinator.Addr() }

// HTTPAddr is the coordinator's HTTP API address, "" without one.
func (c *Cluster) HTTPAddr() string { return c.Coordinator.HTTPAddr() }

// Collector exposes the shards of every in-process node on one metrics
// endpoint (shard.Collector).
func (c *Cluster) Collector() prometheus.Collector {
	return shard.Collector(func() []*shard.Host {
		hosts := make([]*shard.Host, len(c.Nodes))
		for i, n := range c.Nodes {
			hosts[i] = n.Shards()
		}
		return hosts
	})
}

// EtcdEndpoints are the embedded etcd's client URLs.
func (c *Cluster) EtcdEndpoints() []string { return c.Etcd.Endpoints() }

// Stop shuts down coordinator, nodes, then etcd. Safe on a partly started
// cluster.
func (c *Cluster) Stop() {
	if c.Coordinator != nil {
		c.Coordinator.Stop()
	}
	for _, n := range c.Nodes {
		n.Stop()
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	if c.Etcd != nil {
		c.Etcd.Close()
	}
	c.lock.Release()
	c.log.Info("dev cluster stopped")
}
