// Package node is the data node process, assembled in one place: New
// builds every part before anything serves —
//
//   - the shard host (node/shard): the node's shard engines, their pinned
//     readers, and their dynamic mapping updates, published to the cluster
//     metadata over the node's own etcd client (so no shard ever runs
//     without its updater);
//   - the internal gRPC services, each registered by the package that
//     serves it: the Node data path (node/server) and the reindex slices
//     (node/reindex, whose runner reaches other nodes through a node
//     connection pool);
//   - the routing reconciler, which follows the routing table: shard copies
//     assigned to this node are opened in the role the routing gives them
//     (copyRole: primary or replica, the primary term, the primary's node)
//     and reported STARTED (or FAILED with the reason) in their routing
//     entries; an open copy whose role changes (promoted, a new term) is
//     given its new role; copies that go away are closed, and their data
//     deleted once their index is gone or the shard is fully active on
//     other nodes (stored.go; also for data found at start, of copies that
//     moved while the node was down). A failed open is retried with a
//     growing backoff, 5 attempts in all (Elasticsearch's
//     index.allocation.max_retries), and again after a restart;
//   - the registration under nodes/<id> with a lease (cluster/registry),
//     carrying the disk figures of the data path (disk.go: measured every
//     DiskCheckInterval, registered again when they move), which the
//     allocator holds against the cluster's disk watermarks, and the
//     peer-recovery capability, which lets the allocator move copies here.
//
// With Config.TLS the node serves mutual TLS and takes only certificates
// of the cluster (security/tlsconf), and calls other nodes with its own.
//
// # Recovery
//
// Opening a shard recovers it: the last commit is loaded and the translog
// above it replayed, which takes as long as the translog is (a commit at
// 64 MB of translog bounds it to seconds; docs/engine-durability.md). The
// reconciler opens shards in the background, ConcurrentRecoveries at a
// time (default 4, Elasticsearch's
// cluster.routing.allocation.node_initial_primaries_recoveries), so a
// restarted node replays its shards side by side and a long recovery holds
// up neither the others nor the closing and updating of open shards. A
// replica's promotion (its engine reopened as a primary, the other copies
// resynced) runs in the background the same way, without a slot.
// Every primary open is recorded first, with the term raised
// (state.Store.ActivatePrimary), so a primary reopened where it was
// never writes in its earlier run's term.
//
// A copy counts as started only once this run of the node has opened it.
// Before it registers, a starting node marks every copy the routing table
// shows it holding as STARTED or NODE_LEFT — opened by its previous run —
// INITIALIZING ("queued"), so a node restarted before its old lease ran
// out (a SIGKILL) is never green before its shards are open.
//
// While a shard recovers, its node writes the recovery's stage and
// progress (operations and translog bytes done of their totals, elapsed
// time) into the copy's routing entry, as a reason a person reads and a
// structured ShardRecovery, once a second and only while recoveries run.
// Published rather than served by an RPC the coordinator would call: health
// and cluster state stay one consistent read of etcd, with no fan-out to
// busy or unreachable nodes on the health path, the same on every
// coordinator and through `wait_for_status`; the cost — one guarded write
// per recovering shard per second, and the cluster state reload it
// causes in each process — is paid only during recovery, for at most
// ConcurrentRecoveries shards per node.
//
// # Replica copies
//
// Copies are opened through the node's replication service
// (node/replication, which also serves the Replication gRPC service): a
// primary with its replication group, which replicates every write to
// the in-sync copies before it is acknowledged; a replica recovered from
// its primary (files, then operations), reported STARTED once its primary
// has added it to the in-sync set. A role change is given to the open
// copy (setRole): a replica promoted to primary, a new term; a copy that
// cannot take its new role in place (a primary demoted, a replica out of
// the in-sync set) is closed and opened again, which for a replica means
// a new recovery.
//
// # Readiness and graceful shutdown
//
// The health service's empty name is the process's liveness (SERVING from
// Start). ReadinessService (readiness.go) is its readiness: SERVING once
// every copy the node holds that can recover has recovered — not a
// replica whose primary is gone, nor a FAILED copy, which waiting could
// not mend — so a rolling restart moves to the next node only once this
// one's copies are back. Shutdown (shutdown.go; SIGTERM) registers
// shutting_down: the allocator hands the node's primaries to in-sync
// replicas on other nodes (term + 1) while it still runs, coordinators
// stop sending it reads, and it opens nothing more; once no primary is
// left that another copy could take (or its timeout), it stops as Stop
// does. Its replicas stay in the routing table, for it to reopen.
//
// Errors (errors.go) is the node's one error table: the typed errors of
// the shards, the engine, the query translation and the reindex runner as
// gRPC codes. The node's server applies it to every error a handler
// returns; the parts describe per-item failures with it.
//
// The node id is stored in <data-dir>/node.id on first start, so a
// restarted node is the same node and finds its shards under
// <data-dir>/<index-uuid>/<shard>/. A lock file keeps a second process off
// the same data dir.
//
// Start begins the background work in this order: serve gRPC, follow the
// cluster state (cache), release expired pinned readers, mark the copies
// held before recovering, register, follow the routing table, and watch
// for readiness; it returns once registered. Stop ends it in this order: stop serving gRPC (draining
// calls), stop following the routing table (cancelling recoveries in
// progress), release the readers reindex slices kept for resumes, close every
// open shard (releasing its pinned readers, then committing), then revoke
// the lease so the cluster sees the node leave at once, and close the
// connections.
package node

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/sluice-search/sluice/cluster/dirlock"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/registry"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/reindex"
	"github.com/sluice-search/sluice/node/replication"
	"github.com/sluice-search/sluice/node/server"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
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
	// Shards tunes the shard host (indexing buffer, pinned reader cap, bulk
	// parallelism, the scrubber's interval and rate, the translog size
	// that triggers a commit); its DataDir, Updater and Logger are the
	// node's.
	Shards shard.HostOptions
	// DiskCheckInterval: how often the node measures its data path's disk
	// for the disk watermarks; default DefaultDiskCheckInterval.
	DiskCheckInterval time.Duration
	// DiskUsage measures the disk of a directory (free, total bytes);
	// default statfs. Tests replace it.
	DiskUsage func(dir string) (free, total int64, err error)
	// ConcurrentRecoveries: how many shards the node opens (recovers) at
	// once; default DefaultConcurrentRecoveries.
	ConcurrentRecoveries int
	// MappingUpdateTimeout bounds how long a write that adds fields waits
	// for the cluster (etcd) to take the mapping update before the item
	// fails UNAVAILABLE (shard.ErrMappingUnavailable), retryable;
	// default DefaultMappingUpdateTimeout.
	MappingUpdateTimeout time.Duration
	// ReplicationTimeout: how long a primary waits for a replica to take
	// a batch of operations, or to show a refresh, before it fails the
	// copy (out of the in-sync set); default 30s (replication.Config).
	ReplicationTimeout time.Duration
	// RecoveryBytesPerSec and OutgoingRecoveries throttle peer recovery
	// (replication.Config): the bytes/s this node's replicas fetch, and
	// the recoveries its primaries serve at once. Zero: the defaults
	// (40 MiB/s, 2).
	RecoveryBytesPerSec int64
	OutgoingRecoveries  int
	// Server tunes the Node service.
	Server server.Options
	// Reindex tunes the reindex slices this node runs.
	Reindex reindex.Options
	Logger  *slog.Logger
	// Metrics, if set, instruments the gRPC server for Prometheus.
	Metrics *grpcprom.ServerMetrics
	// TLS, if set, secures the node's server and its calls to other
	// nodes. It must require client certificates (ClientCertAuth): the
	// internal services serve the cluster's own processes only.
	TLS *tlsconf.Source
	// EtcdTLS, if set, is the TLS configuration of the etcd client made
	// from EtcdEndpoints.
	EtcdTLS *tls.Config
}

// Node is a data node.
type Node struct {
	cfg      Config
	id       string
	lock     *dirlock.Lock
	etcd     *clientv3.Client
	ownsEtcd bool
	store    *state.Store
	cache    *state.Cache
	shards   *shard.Host
	reindex  *reindex.Runner
	peers    *nodeconn.Pool // other data nodes, for remote reindex
	reg      *registry.Registration
	lis      net.Listener
	grpc     *rpc.Server
	routing  *reconciler
	repl     *replication.Service
	disk     *diskMonitor
	// shuttingDown is registered (statev1.Node.shutting_down) once
	// Shutdown began; readyMu orders it with readiness turning SERVING,
	// so a node shutting down never reports ready.
	shuttingDown atomic.Bool
	readyMu      sync.Mutex
	stopped      bool // Stop began (under readyMu): never ready again

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New builds a node: locks the data dir, resolves the node id, connects to
// etcd, opens the shard host, registers the gRPC services and binds the
// listener. Nothing runs until Start.
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
	if cfg.TLS != nil && !cfg.TLS.Files().ClientCertAuth {
		return nil, errors.New("node: TLS without --client-cert-auth: a data node's internal services must require the cluster's client certificates")
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
	log := cfg.Logger.With("node", n.id)
	n.cfg.Logger = log
	n.etcd = cfg.Etcd
	if n.etcd == nil {
		if len(cfg.EtcdEndpoints) == 0 {
			return nil, errors.New("node: etcd endpoints required")
		}
		if n.etcd, err = clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, TLS: cfg.EtcdTLS, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
			return nil, fmt.Errorf("node: etcd: %w", err)
		}
		n.ownsEtcd = true
	}
	n.store = state.NewStore(n.etcd, cfg.Prefix)
	n.cache = state.NewCache(n.store, log)

	hopts := cfg.Shards
	hopts.DataDir, hopts.Updater, hopts.Logger = cfg.DataDir, mappingUpdater{metadata.New(n.store), cmp.Or(cfg.MappingUpdateTimeout, DefaultMappingUpdateTimeout)}, log
	if n.shards, err = shard.NewHost(hopts); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.peers = nodeconn.New(n.cache, cfg.TLS.DialOptions()...)
	ropts := cfg.Reindex
	if ropts.Logger == nil {
		ropts.Logger = log
	}
	if ropts.WriteBlocked == nil {
		ropts.WriteBlocked = n.writeBlocked
	}
	n.reindex = reindex.NewRunner(n.shards, n.peers, Errors, ropts)
	n.grpc = rpc.NewServer(rpc.Options{Logger: log, Metrics: cfg.Metrics, Errors: Errors, Creds: cfg.TLS.ServerCredentials()})
	server.New(n.shards, Errors, cfg.Server).Register(n.grpc)
	n.reindex.Register(n.grpc)
	n.repl = replication.New(replication.Config{NodeID: n.id, Host: n.shards, Store: n.store, Cache: n.cache,
		Dial: n.peers.Node, Logger: log, OpsTimeout: cfg.ReplicationTimeout, VisibleTimeout: cfg.ReplicationTimeout,
		RecoveryBytesPerSec: cfg.RecoveryBytesPerSec, OutgoingRecoveries: cfg.OutgoingRecoveries})
	n.repl.Register(n.grpc)
	n.setReady(false)

	if n.lis, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("node: listen: %w", err)
	}
	n.disk = newDiskMonitor(cfg.DataDir, cfg.DiskCheckInterval, cfg.DiskUsage, func() { n.reg.Refresh() })
	n.reg = registry.New(registry.Config{Client: n.etcd, Key: n.store.Keys.Node(n.id), TTL: cfg.LeaseTTL,
		Value: n.registration, Logger: log})
	n.routing = newReconciler(n.id, hostedShards{n.shards, n.repl}, n.store, n.cache, cfg.ConcurrentRecoveries, log)
	return n, nil
}

// release frees what New acquired.
func (n *Node) release() {
	if n.peers != nil {
		n.peers.Close()
	}
	if n.lis != nil {
		n.lis.Close()
	}
	if n.ownsEtcd && n.etcd != nil {
		n.etcd.Close()
	}
	n.lock.Release()
}

// ID is the node id.
func (n *Node) ID() string { return n.id }

// Addr is the address the node serves on.
func (n *Node) Addr() string { return n.lis.Addr().String() }

// Health is the node's gRPC health service (rpc.ServeHealth serves it to
// probes in plaintext).
func (n *Node) Health() *health.Server { return n.grpc.Health }

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

// Services are the services the node serves (tests walk them).
func (n *Node) Services() map[string]grpc.ServiceInfo { return n.grpc.GetServiceInfo() }

// Shards is the node's shard host (tests open shards on it directly).
func (n *Node) Shards() *shard.Host { return n.shards }

// Collector exposes the node's shard statistics to Prometheus
// (shard.Host.Collector).
func (n *Node) Collector() prometheus.Collector { return n.shards.Collector() }

// Reindex is the node's reindex slice runner.
func (n *Node) Reindex() *reindex.Runner { return n.reindex }

// Store is the cluster state store.
func (n *Node) Store() *state.Store { return n.store }

// writeBlocked is the flood-stage write block of the index with uuid as
// the node's cluster state has it (state.ErrWriteBlocked, naming the node
// and its disk), nil without one: writes the node makes itself — a
// reindex's into its destination — are refused as the coordinator
// refuses a bulk.
func (n *Node) writeBlocked(uuid string) error {
	if st := n.cache.State(); st != nil {
		if x := st.ByUUID[uuid]; x != nil {
			return x.WriteBlocked()
		}
	}
	return nil
}

// Cache is the node's cluster state cache.
func (n *Node) Cache() *state.Cache { return n.cache }

// Registration exposes the node's registration (for tests and status).
func (n *Node) Registration() *registry.Registration { return n.reg }

// registration is the node's nodes/<id> value.
func (n *Node) registration() (string, error) {
	free, total := n.disk.usage()
	return state.Marshal(&statev1.Node{
		Address: n.Advertise(), Zone: n.cfg.Zone,
		DiskFreeBytes: free, DiskTotalBytes: total, Version: version.Version, DataPath: n.cfg.DataDir,
		// It recovers a new copy from its primary (node/replication), so
		// the allocator may move copies to it.
		Capabilities: []string{state.CapabilityPeerRecovery},
		ShuttingDown: n.shuttingDown.Load(),
	})
}

// Start runs the node in the background, in the order the package doc
// gives, and returns once the node is registered (or ctx ends).
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
	n.wg.Go(func() { n.shards.Run(bg) })
	n.routing.markRecovering(ctx)
	n.wg.Go(func() { _ = n.reg.Run(bg) })
	n.wg.Go(func() { n.repl.Run(bg) })
	n.wg.Go(func() { n.disk.run(bg) })
	n.wg.Go(func() { n.routing.run(bg) })
	n.wg.Go(func() { n.runReadiness(bg) })
	select {
	case <-n.reg.Registered():
	case <-ctx.Done():
		n.Stop()
		return ctx.Err()
	}
	n.cfg.Logger.Info("node started", "addr", n.Addr(), "zone", n.cfg.Zone, "data", n.cfg.DataDir)
	return nil
}

// Stop shuts the node down in the order the package doc gives. It is safe
// to call on a node that was never started.
func (n *Node) Stop() {
	n.stop.Do(func() {
		n.readyMu.Lock()
		n.stopped = true
		n.setReady(false)
		n.readyMu.Unlock()
		n.grpc.Stop(10 * time.Second)
		n.routing.stop()
		n.reindex.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n.routing.closeAll(ctx)
		if err := n.shards.CloseAll(ctx); err != nil {
			n.cfg.Logger.Error("node: close shards", "err", err)
		}
		cancel()
		if n.cancel != nil {
			n.cancel() // ends the registration, which revokes the lease
		}
		n.wg.Wait()
		n.release()
		n.cfg.Logger.Info("node stopped")
	})
}
