// Package manager assembles the Sluice operator: a controller-runtime
// manager running the Index and Reindex reconcilers, with leader election
// (a Lease, so only one replica acts at a time), Prometheus metrics,
// health and readiness probes, and one gRPC connection to the coordinators
// shared by both reconcilers.
//
// The connection is made lazily and never blocks start-up: an operator
// whose cluster is down still starts, and reports ClusterUnreachable in the
// conditions of every resource until the cluster answers. A watcher of the
// connection (clusterwatch) reconciles every resource when it is lost or
// comes back, so status follows an outage within seconds.
//
// Metrics and probes listen on every interface in a pod and on loopback
// elsewhere (InCluster), unless told an address. `sluice operator`
// (cmd/sluice) is a thin flag layer over Options and Run.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/clusterwatch"
	"github.com/sluice-search/sluice/operator/controllers/index"
	"github.com/sluice-search/sluice/operator/controllers/reindex"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DefaultLeaderElectionID names the Lease replicas compete for.
const DefaultLeaderElectionID = "sluice-operator.sluice.dev"

var skipNameValidation = true

// Options configure the operator. The zero value of every field but
// Coordinator is usable.
type Options struct {
	// Coordinator is the address of the Sluice API, "host:port" (a
	// Service in front of the coordinators in Kubernetes).
	Coordinator string
	// Namespace restricts the operator to one namespace; empty watches all.
	Namespace string
	// LeaderElection makes replicas elect one active operator.
	LeaderElection bool
	// LeaderElectionID names the Lease; default DefaultLeaderElectionID.
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease; default the namespace the
	// operator runs in (in-cluster) or Namespace.
	LeaderElectionNamespace string
	// MetricsAddr serves Prometheus metrics; "0" turns them off. Default
	// DefaultMetricsAddr().
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" turns them off. Default
	// DefaultProbeAddr().
	ProbeAddr string
	// Config reaches the Kubernetes API; default from the kubeconfig or
	// the in-cluster service account (ctrl.GetConfig).
	Config *rest.Config
	// DialOptions are added to the Sluice client's defaults (for example
	// TLS credentials).
	DialOptions []grpc.DialOption
	Logger      *slog.Logger
}

// DefaultMetricsAddr is where metrics are served unless told otherwise:
// on every interface in a pod (for the Prometheus scraping it), on
// loopback elsewhere (an operator run from a laptop should not expose
// them to the network).
func DefaultMetricsAddr() string { return defaultAddr(8080) }

// DefaultProbeAddr is where /healthz and /readyz are served unless told
// otherwise: every interface in a pod (for the kubelet), loopback
// elsewhere.
func DefaultProbeAddr() string { return defaultAddr(8081) }

func defaultAddr(port int) string {
	if InCluster() {
		return fmt.Sprintf(":%d", port)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// InCluster reports whether the process runs in a Kubernetes pod (the
// kubelet sets KUBERNETES_SERVICE_HOST in every container).
func InCluster() bool { return os.Getenv("KUBERNETES_SERVICE_HOST") != "" }

// Scheme knows the core types (for events) and the Sluice resources.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Operator is an assembled, not yet started operator.
type Operator struct {
	Manager manager.Manager
	conn    *grpc.ClientConn
}

// New builds the manager, the coordinator connection and the reconcilers.
func New(opts Options) (*Operator, error) {
	if opts.Coordinator == "" {
		return nil, errors.New("operator: the coordinator address is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = DefaultLeaderElectionID
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = opts.Namespace
	}
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = DefaultMetricsAddr()
	}
	if opts.ProbeAddr == "" {
		opts.ProbeAddr = DefaultProbeAddr()
	}
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return nil, fmt.Errorf("operator: kubernetes config: %w", err)
		}
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	mopts := manager.Options{
		Scheme:                  scheme,
		Logger:                  logr.FromSlogHandler(opts.Logger.Handler()),
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Step down promptly on SIGTERM so a new replica takes over fast.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		// Controller names are checked for uniqueness process-wide (for
		// their metrics); a process that restarts its operator, as the
		// tests do, would trip over its own previous manager.
		Controller: config.Controller{SkipNameValidation: &skipNameValidation},
	}
	if opts.Namespace != "" {
		mopts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("operator: manager: %w", err)
	}
	// grpc.NewClient connects lazily: the operator starts with its cluster
	// down and reports that in conditions instead of crash-looping.
	conn, err := grpc.NewClient(opts.Coordinator, append(client.DialOptions(), opts.DialOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("operator: coordinator %s: %w", opts.Coordinator, err)
	}
	cluster := sluicev1.NewSluiceClient(conn)
	o := &Operator{Manager: mgr, conn: conn}
	// Status follows the connection: every resource is reconciled when it
	// is lost or comes back.
	watch := clusterwatch.New(conn, opts.Logger.With("component", "clusterwatch"))
	if err := mgr.Add(watch); err != nil {
		o.Close()
		return nil, fmt.Errorf("operator: %w", err)
	}
	if err := (&index.Reconciler{Client: mgr.GetClient(), Cluster: cluster, Recorder: mgr.GetEventRecorder("sluice-index"),
		Wake: watch.Subscribe()}).SetupWithManager(mgr); err != nil {
		o.Close()
		return nil, fmt.Errorf("operator: index controller: %w", err)
	}
	if err := (&reindex.Reconciler{Client: mgr.GetClient(), Cluster: cluster, Recorder: mgr.GetEventRecorder("sluice-reindex"),
		Wake: watch.Subscribe()}).SetupWithManager(mgr); err != nil {
		o.Close()
		return nil, fmt.Errorf("operator: reindex controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		o.Close()
		return nil, fmt.Errorf("operator: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		o.Close()
		return nil, fmt.Errorf("operator: %w", err)
	}
	return o, nil
}

// Start runs the operator until ctx ends.
func (o *Operator) Start(ctx context.Context) error {
	return o.Manager.Start(ctx)
}

// Close releases the coordinator connection; call it after Start returns.
func (o *Operator) Close() error {
	return o.conn.Close()
}

// Run builds the operator, runs it until ctx ends and cleans up.
func Run(ctx context.Context, opts Options) error {
	if opts.Logger != nil {
		// controller-runtime's packages log through this global too.
		ctrl.SetLogger(logr.FromSlogHandler(opts.Logger.Handler()))
	}
	o, err := New(opts)
	if err != nil {
		return err
	}
	defer o.Close()
	return o.Start(ctx)
}
