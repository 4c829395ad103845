package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/operator/manager"
)

func newOperatorCmd() *cobra.Command {
	var opts manager.Options
	var kubeconfig, logLevel string
	var creds credFlags
	cmd := &cobra.Command{
		Use:     "operator",
		Short:   "Run the Kubernetes operator for Index and Reindex resources",
		GroupID: groupServers,
		Args:    cobra.NoArgs,
		Long: `Run the Kubernetes operator: it reconciles Index and Reindex resources
(group sluice.dev) with the Sluice cluster behind --coordinator, through the
public gRPC API, and reports back in their status (conditions Ready,
Progressing, Degraded; health, document counts, reindex progress).

Against a secure cluster it connects over TLS, verifying the coordinators
with --cacert ($SLUICE_CACERT), and authenticates with its own API key
($SLUICE_API_KEY): one of a role granting manage, monitor, read and write
on the indices it reconciles, not admin (the Helm chart makes both).

Run it in the cluster with the Helm chart (charts/sluice), or outside with a
kubeconfig. With --leader-elect, replicas elect one active operator through a
Lease in --leader-election-namespace. /healthz and /readyz are served on
--health-listen, Prometheus metrics on --metrics-listen.`,
		Example: `  sluice operator --coordinator sluice-coordinator:9200 --leader-elect
  sluice operator --kubeconfig ~/.kube/config --coordinator 127.0.0.1:9200 --namespace search`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			opts.Logger = log
			if opts.DialOptions, err = creds.dialOptions(); err != nil {
				return err
			}
			if kubeconfig != "" {
				if opts.Config, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
					return fmt.Errorf("--kubeconfig: %w", err)
				}
			}
			return manager.Run(cmd.Context(), opts)
		},
	}
	def := os.Getenv("SLUICE_ADDR")
	if def == "" {
		def = client.DefaultAddr
	}
	f := cmd.Flags()
	f.StringVar(&opts.Coordinator, "coordinator", def, "address of the Sluice API (a coordinator Service), host:port (default from $SLUICE_ADDR)")
	f.StringVar(&opts.Namespace, "namespace", "", "only reconcile resources in this namespace (default: all namespaces)")
	f.BoolVar(&opts.LeaderElection, "leader-elect", false, "elect one active operator among replicas through a Lease")
	f.StringVar(&opts.LeaderElectionID, "leader-election-id", manager.DefaultLeaderElectionID, "name of the leader election Lease")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"),
		"namespace of the leader election Lease (default $POD_NAMESPACE, or --namespace)")
	f.StringVar(&opts.MetricsAddr, "metrics-listen", "", `Prometheus metrics address; "0" turns metrics off (default :8080 in a pod, 127.0.0.1:8080 elsewhere)`)
	f.StringVar(&opts.ProbeAddr, "health-listen", "", `address of /healthz and /readyz; "0" turns them off (default :8081 in a pod, 127.0.0.1:8081 elsewhere)`)
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	creds.register(f)
	return cmd
}
