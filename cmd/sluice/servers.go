package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/health"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/telemetry"
	"github.com/sluice-search/sluice/coordinator"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/devcluster"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/replication"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// serverFlags are shared by `sluice node` and `sluice coordinator`; the
// names are also used by the Helm chart.
type serverFlags struct {
	etcd          []string
	prefix        string
	listen        string
	logLevel      string
	metricsListen string
	healthListen  string
	enablePprof   bool
}

func (f *serverFlags) register(cmd *cobra.Command, defaultListen string) {
	registerEtcdFlags(cmd, &f.etcd, &f.prefix)
	cmd.Flags().StringVar(&f.listen, "listen", defaultListen, "gRPC listen address")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics on this address at /metrics, e.g. :9100 (default: off)")
	cmd.Flags().BoolVar(&f.enablePprof, "enable-pprof", false, "also serve the Go profiler at /debug/pprof/ on --metrics-listen")
	cmd.Flags().StringVar(&f.healthListen, "health-listen", "", "also serve the gRPC health service, alone and in plaintext, on this address, e.g. :9302: for kubelet gRPC probes, which cannot speak TLS (default: off)")
}

// registerEtcdFlags registers --etcd and --etcd-prefix.
func registerEtcdFlags(cmd *cobra.Command, endpoints *[]string, prefix *string) {
	cmd.Flags().StringSliceVar(endpoints, "etcd", []string{"http://127.0.0.1:2379"}, "etcd endpoints, comma separated")
	cmd.Flags().StringVar(prefix, "etcd-prefix", "/sluice/", "key prefix of this cluster in etcd")
}

// serveHealth serves h on --health-listen, when set, until ctx ends.
func (f *serverFlags) serveHealth(ctx context.Context, h *health.Server, log *slog.Logger) error {
	if f.healthListen == "" {
		return nil
	}
	addr, err := rpc.ServeHealth(ctx, f.healthListen, h, log)
	if err != nil {
		return err
	}
	log.Info("serving gRPC health in plaintext", "addr", addr.String())
	return nil
}

// startMetrics serves the process's metrics when --metrics-listen is set;
// it returns nil when it is not.
func (f *serverFlags) startMetrics(ctx context.Context, log *slog.Logger, extra ...prometheus.Collector) (*telemetry.Telemetry, error) {
	return startMetrics(ctx, log, f.metricsListen, f.enablePprof, extra...)
}

func startMetrics(ctx context.Context, log *slog.Logger, listen string, enablePprof bool, extra ...prometheus.Collector) (*telemetry.Telemetry, error) {
	if listen == "" {
		if enablePprof {
			return nil, fmt.Errorf("--enable-pprof needs --metrics-listen")
		}
		return nil, nil
	}
	t := telemetry.New()
	t.EnablePprof = enablePprof
	t.Registry.MustRegister(extra...)
	addr, err := t.Serve(ctx, listen, log)
	if err != nil {
		return nil, err
	}
	log.Info("serving metrics", "addr", addr.String(), "path", "/metrics", "pprof", enablePprof)
	return t, nil
}

// registry is t's registry, nil without metrics.
func registry(t *telemetry.Telemetry) prometheus.Registerer {
	if t == nil {
		return nil
	}
	return t.Registry
}

// grpcMetrics is t's gRPC server instrumentation, nil without metrics.
func grpcMetrics(t *telemetry.Telemetry) *grpcprom.ServerMetrics {
	if t == nil {
		return nil
	}
	return t.GRPC
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// nodeFlags tune a data node's shards; `sluice node` and `sluice dev`
// (for its in-process nodes) take them.
type nodeFlags struct {
	scrubInterval  time.Duration
	scrubRate      byteSize
	recoveries     int
	flushThreshold byteSize
	replTimeout    time.Duration
	mappingTimeout time.Duration
	recoveryRate   byteSize
	outgoing       int
	diskCheck      time.Duration
}

func (f *nodeFlags) register(cmd *cobra.Command) {
	f.scrubRate, f.flushThreshold = engine.DefaultScrubBytesPerSec, engine.DefaultCommitTranslogBytes
	f.recoveryRate = replication.DefaultRecoveryBytesPerSec
	cmd.Flags().DurationVar(&f.scrubInterval, "scrub-interval", engine.DefaultScrubInterval,
		"how often the background scrubber starts a pass that re-verifies the checksum of every file of every open shard (a damaged file fails its shard); negative turns it off")
	cmd.Flags().Var(&f.scrubRate, "scrub-bytes-per-sec", "the scrubber's read rate cap over all shards, e.g. 20MiB; -1: unlimited")
	cmd.Flags().IntVar(&f.recoveries, "concurrent-recoveries", node.DefaultConcurrentRecoveries,
		"how many shards the node opens (recovers from commit and translog) at once")
	cmd.Flags().Var(&f.recoveryRate, "recovery-max-bytes-per-sec",
		"segment-file bytes per second this node's replica copies fetch from their primaries in peer recovery, all recoveries together (indices.recovery.max_bytes_per_sec), e.g. 100MiB; -1: unlimited")
	cmd.Flags().IntVar(&f.outgoing, "concurrent-outgoing-recoveries", replication.DefaultOutgoingRecoveries,
		"how many peer recoveries this node's primary copies serve at once; more wait their turn (node_concurrent_outgoing_recoveries)")
	cmd.Flags().DurationVar(&f.diskCheck, "disk-check-interval", node.DefaultDiskCheckInterval,
		"how often the node measures its data dir's disk for the disk watermarks (it re-registers only when the free space moved by 0.5% of the disk)")
	cmd.Flags().Var(&f.flushThreshold, "translog-flush-threshold",
		"commit a shard once its uncommitted translog exceeds this, bounding what a restart replays (index.translog.flush_threshold_size), e.g. 64MiB; -1: never by size")
	cmd.Flags().DurationVar(&f.mappingTimeout, "mapping-update-timeout", node.DefaultMappingUpdateTimeout,
		"how long a write that adds fields waits for the cluster (etcd) to take the mapping update before the item fails UNAVAILABLE, retryable (index.mapping.dynamic_timeout)")
	cmd.Flags().DurationVar(&f.replTimeout, "replication-timeout", 30*time.Second,
		"how long a primary waits for a replica copy to take a batch of operations or show a refresh before it fails the copy (removes it from the in-sync set), so a cut-off replica holds writes up that long")
}

// apply sets the flags' values into a node's config.
func (f *nodeFlags) apply(cfg *node.Config) {
	cfg.Shards.Scrub.Interval, cfg.Shards.Scrub.BytesPerSec = f.scrubInterval, int64(f.scrubRate)
	cfg.Shards.CommitTranslogBytes = int64(f.flushThreshold)
	cfg.ConcurrentRecoveries = f.recoveries
	cfg.ReplicationTimeout = f.replTimeout
	cfg.MappingUpdateTimeout = f.mappingTimeout
	cfg.RecoveryBytesPerSec, cfg.OutgoingRecoveries = int64(f.recoveryRate), f.outgoing
	cfg.DiskCheckInterval = f.diskCheck
}

func newNodeCmd() *cobra.Command {
	var f serverFlags
	var nf nodeFlags
	var tf tlsFlags
	var dataDir, zone, id, advertise string
	var shutdownTimeout time.Duration
	cmd := &cobra.Command{
		Use:     "node",
		Short:   "Run a data node",
		GroupID: groupServers,
		Args:    cobra.NoArgs,
		Long: `Run a data node: it registers in etcd under a lease, serves the internal Node
and Reindex gRPC services, and opens the shards the allocator assigns to it, under
<data-dir>/<index-uuid>/<shard>/. Its id is stored in <data-dir>/node.id on
first start, so a restarted node is the same node and finds its shards.
SIGINT/SIGTERM shut it down gracefully: it reports not ready, registers as
shutting down, and waits (at most --shutdown-timeout) until the allocator has
handed each of its primaries to an in-sync replica on another node; then its
shards are committed and closed and it deregisters. Its replicas stay, for it
to reopen when it is back (docs/operations.md, "Rolling restarts"). A node
that the scale-down preStop hook drained ('sluice node prestop') ends that
drain once stopped, or when it starts again.

With --health-listen, the gRPC health service "sluice.node.ready" (the
readiness probe's) is SERVING once every shard copy the node holds that can
recover has recovered; the empty service name is liveness.

On start it recovers its shards, --concurrent-recoveries at a time: each stays
INITIALIZING, with its translog replay progress in 'sluice health' and 'sluice
state', until it is open. A commit whenever a shard's translog passes
--translog-flush-threshold bounds what a restart replays. A background
scrubber re-reads every file of every open shard each --scrub-interval (at
most --scrub-bytes-per-sec, after indexing and searching) and fails a shard
with a damaged file, which then shows FAILED naming the file.

With --cert-file, --key-file and --trusted-ca-file the node serves TLS and
requires every caller to present a certificate of that CA with organization
"sluice-cluster" (coordinators and other nodes); https etcd endpoints use the
same files unless --etcd-cert-file etc. are given (docs/security.md).`,
		Example: `  sluice node --etcd http://etcd:2379 --data-dir /var/lib/sluice --zone eu-1a
  sluice node --etcd http://127.0.0.1:2379 --listen 127.0.0.1:9301 --data-dir ./n1`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(f.logLevel)
			if err != nil {
				return err
			}
			tel, err := f.startMetrics(cmd.Context(), log)
			if err != nil {
				return err
			}
			// A data node's services are internal: with TLS it serves only
			// the cluster's own certificates.
			tf.files.ClientCertAuth = tf.files.Enabled()
			tf.files.RequireOrganization = ""
			if tf.files.Enabled() {
				tf.files.RequireOrganization = tlsconf.ClusterOrganization
			}
			creds, etcdTLS, err := tf.apply(f.etcd, log)
			if err != nil {
				return err
			}
			cfg := node.Config{ID: id, DataDir: dataDir, Listen: f.listen, Advertise: advertise,
				Zone: zone, EtcdEndpoints: f.etcd, Prefix: f.prefix, Logger: log, Metrics: grpcMetrics(tel),
				TLS: creds, EtcdTLS: etcdTLS}
			nf.apply(&cfg)
			n, err := node.New(cfg)
			if err != nil {
				return err
			}
			if tel != nil {
				tel.Registry.MustRegister(n.Collector(), replication.Collector())
			}
			// A pod a scale-up brings back under the id of one that a
			// scale-down drained takes copies again (node/scaledown).
			endScaleDownDrain(f.etcd, f.prefix, etcdTLS, dataDir, n.ID(), log)
			if err := n.Start(cmd.Context()); err != nil {
				return err
			}
			if err := f.serveHealth(cmd.Context(), n.Health(), log); err != nil {
				n.Stop()
				return err
			}
			<-cmd.Context().Done()
			n.Shutdown(shutdownTimeout)
			// Deregistered, so nothing is placed on the node meanwhile.
			endScaleDownDrain(f.etcd, f.prefix, etcdTLS, dataDir, n.ID(), log)
			return nil
		},
	}
	f.register(cmd, node.DefaultListen)
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", node.DefaultShutdownTimeout,
		"on SIGTERM, how long the node waits for its primaries to be handed to in-sync replicas on other nodes before it closes them anyway; 0 closes at once (keep it below the pod's terminationGracePeriodSeconds, with room to commit)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "./sluice-node", "directory for the node id and shard data")
	cmd.Flags().StringVar(&zone, "zone", "", "availability zone, for zone-aware shard placement")
	cmd.Flags().StringVar(&id, "node-id", "", "node id (default: stored in the data dir, or generated on first start)")
	cmd.Flags().StringVar(&advertise, "advertise", "", "address other processes dial (default: the listen address)")
	nf.register(cmd)
	tf.register(cmd, "")
	cmd.AddCommand(newNodeDrainCmd(), newNodePreStopCmd())
	return cmd
}

// budgetFlags are a coordinator's memory budgets (`sluice coordinator`,
// `sluice dev`).
type budgetFlags struct {
	bulk, search byteSize
}

func (b *budgetFlags) register(cmd *cobra.Command) {
	b.bulk, b.search = datapath.DefaultMaxInFlightBulkBytes, datapath.DefaultMaxInFlightSearchBytes
	cmd.Flags().Var(&b.bulk, "max-inflight-bulk-bytes",
		"bulk request bytes the coordinator holds at once (Elasticsearch's indexing_pressure.memory.limit); a Bulk beyond it is refused with RESOURCE_EXHAUSTED and a retry delay, a BulkStream waits; the largest request accepted is a quarter of it (at most 64MiB)")
	cmd.Flags().Var(&b.search, "max-inflight-search-bytes",
		"bytes of fetched hits and scroll batches the coordinator holds at once; a search beyond it is refused with RESOURCE_EXHAUSTED and a retry delay")
}

func (b *budgetFlags) apply(o *datapath.Options) error {
	if b.bulk <= 0 || b.search <= 0 {
		return fmt.Errorf("--max-inflight-bulk-bytes and --max-inflight-search-bytes must be positive sizes")
	}
	o.MaxInFlightBulkBytes, o.MaxInFlightSearchBytes = int64(b.bulk), int64(b.search)
	return nil
}

func newCoordinatorCmd() *cobra.Command {
	var f serverFlags
	var budgets budgetFlags
	var tf tlsFlags
	var af authFlags
	var id, clusterName, httpListen string
	var taskRetention, mappingTimeout time.Duration
	cmd := &cobra.Command{
		Use:     "coordinator",
		Short:   "Run a coordinator: the public gRPC API",
		GroupID: groupServers,
		Args:    cobra.NoArgs,
		Long: `Run a coordinator: it serves the public Sluice gRPC API (with the standard
health service and reflection, so grpcurl works) over the cluster state in
etcd. Coordinators are stateless; run several behind a load balancer. One of
them, elected through etcd, is the allocator that places shards on nodes.

With --cert-file, --key-file and --trusted-ca-file it serves TLS, calls data
nodes with its certificate (organization "sluice-cluster"), and authenticates
every caller by API key or client certificate (--auth, on by default with
TLS; see 'sluice auth' and docs/security.md). Without them it serves
plaintext with no authentication, and says so in its log.`,
		Example: `  sluice coordinator --etcd http://etcd:2379 --listen 0.0.0.0:9200
  sluice coordinator --etcd http://etcd:2379 --http-listen 0.0.0.0:9201   # also the Elasticsearch-compatible HTTP API`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(f.logLevel)
			if err != nil {
				return err
			}
			tel, err := f.startMetrics(cmd.Context(), log)
			if err != nil {
				return err
			}
			creds, etcdTLS, err := tf.apply(f.etcd, log)
			if err != nil {
				return err
			}
			authCfg, err := af.config(creds != nil, log)
			if err != nil {
				return err
			}
			cfg := coordinator.Config{ID: id, Listen: f.listen, HTTPListen: httpListen, EtcdEndpoints: f.etcd,
				Prefix: f.prefix, ClusterName: clusterName, Logger: log, Metrics: grpcMetrics(tel), Registry: registry(tel),
				Tasks: reindex.Options{TaskRetention: taskRetention}, TLS: creds, EtcdTLS: etcdTLS, Auth: authCfg,
				MappingUpdateTimeout: mappingTimeout}
			if err := budgets.apply(&cfg.DataPath); err != nil {
				return err
			}
			c, err := coordinator.New(cfg)
			if err != nil {
				return err
			}
			if err := c.Start(cmd.Context()); err != nil {
				c.Stop()
				return err
			}
			if err := f.serveHealth(cmd.Context(), c.Health(), log); err != nil {
				c.Stop()
				return err
			}
			<-cmd.Context().Done()
			c.Stop()
			return nil
		},
	}
	f.register(cmd, coordinator.DefaultListen)
	cmd.Flags().StringVar(&id, "node-id", "", "coordinator id in the allocator election (default: hostname + random suffix)")
	cmd.Flags().StringVar(&clusterName, "cluster-name", "", "name of the cluster: stored by its first coordinator (default "+coordinator.DefaultClusterName+"); a coordinator naming another cluster is refused")
	cmd.Flags().StringVar(&httpListen, "http-listen", "", "serve the Elasticsearch-compatible HTTP API (docs/elasticsearch-api.md) on this address, e.g. 0.0.0.0:9201 (default: off); HTTPS with the TLS flags, callers authenticated as on gRPC (API keys, client certificates)")
	cmd.Flags().DurationVar(&taskRetention, "task-retention", reindex.DefaultTaskRetention, "how long finished reindex tasks stay listed before they are deleted from etcd; negative keeps them forever")
	cmd.Flags().DurationVar(&mappingTimeout, "mapping-update-timeout", metadata.DefaultMappingUpdateTimeout,
		"how long a PutMapping call waits for the cluster (etcd) to take the mapping, whatever the client's deadline, before it fails UNAVAILABLE, retryable")
	budgets.register(cmd)
	tf.register(cmd, "require every client of the public API to present a certificate chaining to --trusted-ca-file (without it, a certificate is verified when given, and API keys authenticate the rest)")
	af.register(cmd)
	return cmd
}

// DefaultDevHTTPListen is where `sluice dev` serves the
// Elasticsearch-compatible HTTP API: beside the gRPC port, where
// Elasticsearch's own 9200 is taken by Sluice's gRPC API.
const DefaultDevHTTPListen = "127.0.0.1:9201"

func newDevCmd() *cobra.Command {
	var dataDir, listen, httpListen, etcdURL, logLevel, metricsListen string
	var nodes int
	var enablePprof, secure bool
	var nf nodeFlags
	var budgets budgetFlags
	cmd := &cobra.Command{
		Use:     "dev",
		Short:   "Run a whole cluster in one process (embedded etcd, a coordinator, N nodes)",
		GroupID: groupServers,
		Args:    cobra.NoArgs,
		Long: `Run a whole Sluice cluster in this process, on loopback: an embedded etcd,
one coordinator and N data nodes, with all data under --data-dir. The
coordinator calls its in-process nodes directly rather than over the network;
nodes still listen on loopback for standalone nodes and tools. Ctrl-C
shuts it down cleanly; starting it again on the same directory finds the same
indices and data.`,
		Example: `  sluice dev
  sluice dev --nodes 1 --data-dir /tmp/sluice --listen 127.0.0.1:9201
  # then, in another terminal:
  sluice index create books --shards 3
  sluice health`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if metricsListen == "" && enablePprof {
				return fmt.Errorf("--enable-pprof needs --metrics-listen")
			}
			dc := devcluster.Config{DataDir: dataDir, Listen: listen, HTTPListen: httpListen, EtcdURL: etcdURL, Nodes: nodes, Logger: log, Secure: secure}
			nf.apply(&dc.Node)
			if err := budgets.apply(&dc.DataPath); err != nil {
				return err
			}
			// The process's metrics: runtime, gRPC (coordinator and
			// nodes), per-index requests, and every in-process node's
			// shards, served once the cluster runs.
			var tel *telemetry.Telemetry
			if metricsListen != "" {
				tel = telemetry.New()
				tel.EnablePprof = enablePprof
				dc.Metrics, dc.Registry = tel.GRPC, tel.Registry
			}
			c, err := devcluster.Start(cmd.Context(), dc)
			if err != nil {
				return err
			}
			if tel != nil {
				tel.Registry.MustRegister(c.Collector(), replication.Collector())
				addr, err := tel.Serve(cmd.Context(), metricsListen, log)
				if err != nil {
					c.Stop()
					return err
				}
				log.Info("serving metrics", "addr", addr.String(), "path", "/metrics", "pprof", enablePprof)
			}
			printDevBanner(cmd.OutOrStdout(), c, nodes, dataDir)
			<-cmd.Context().Done()
			fmt.Fprintln(cmd.OutOrStdout(), "stopping...")
			c.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "./sluice-data", "directory for etcd and node data")
	cmd.Flags().StringVar(&listen, "listen", client.DefaultAddr, "coordinator listen address")
	cmd.Flags().StringVar(&httpListen, "http-listen", DefaultDevHTTPListen, "address of the Elasticsearch-compatible HTTP API (docs/elasticsearch-api.md); empty turns it off; HTTPS with API keys with --secure")
	cmd.Flags().StringVar(&etcdURL, "etcd-listen", "", "embedded etcd client URL, e.g. http://127.0.0.1:2379 (default: a free port)")
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of in-process data nodes; 0 runs etcd and the coordinator only, for separate `sluice node` processes to join (fix --etcd-listen then)")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics on this address: runtime, gRPC requests of the coordinator and nodes, per-index search/bulk/refresh latency, shards (default: off)")
	cmd.Flags().BoolVar(&enablePprof, "enable-pprof", false, "also serve the Go profiler at /debug/pprof/ on --metrics-listen")
	cmd.Flags().BoolVar(&secure, "secure", false, "TLS on every connection (etcd included) and authenticated callers: a CA, certificates and an admin API key are made in <data-dir>/tls/ (kept across runs), and printed how to use")
	nf.register(cmd)
	budgets.register(cmd)
	return cmd
}

// printDevBanner says where the cluster is, and whether it is secure and
// how to connect if so.
func printDevBanner(w io.Writer, c *devcluster.Cluster, nodes int, dataDir string) {
	fmt.Fprintf(w, "Sluice dev cluster: %d data nodes, data in %s\n", nodes, dataDir)
	fmt.Fprintf(w, "  coordinator (connect here): %s   e.g. export SLUICE_ADDR=%s\n", c.Addr(), c.Addr())
	if addr := c.HTTPAddr(); addr != "" && c.TLSDir == "" {
		fmt.Fprintf(w, "  Elasticsearch-compatible HTTP API: http://%s   e.g. curl http://%s/_cat/indices?v\n", addr, addr)
	} else if addr != "" {
		fmt.Fprintf(w, "  Elasticsearch-compatible HTTP API: https://%s   e.g.\n", addr)
		fmt.Fprintf(w, "    curl --cacert %s -H \"Authorization: ApiKey %s\" https://%s/_cat/indices?v\n", filepath.Join(c.TLSDir, devcluster.CAFile), c.AdminKey, addr)
	}
	fmt.Fprintf(w, "  etcd: %s\n", strings.Join(c.EtcdEndpoints(), ","))
	if c.TLSDir == "" {
		fmt.Fprintln(w, "  INSECURE: plaintext, no authentication — anyone who reaches these ports can read,")
		fmt.Fprintln(w, "  write and delete everything. Loopback only; for TLS and API keys run `sluice dev --secure`.")
	} else {
		fmt.Fprintf(w, "  secure: TLS everywhere, callers authenticated; CA and certificates in %s\n", c.TLSDir)
		fmt.Fprintf(w, "    export SLUICE_CACERT=%s\n", filepath.Join(c.TLSDir, devcluster.CAFile))
		fmt.Fprintf(w, "    export SLUICE_API_KEY=%s   # admin key, also in %s\n", c.AdminKey, filepath.Join(c.TLSDir, devcluster.AdminKeyFile))
		fmt.Fprintf(w, "    # or a client certificate: --cert %s --key %s\n", filepath.Join(c.TLSDir, devcluster.AdminCert), filepath.Join(c.TLSDir, devcluster.AdminKey))
		fmt.Fprintln(w, "    sluice auth whoami")
	}
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}
