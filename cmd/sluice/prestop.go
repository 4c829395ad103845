package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/scaledown"
)

// serviceAccountNamespace is where a pod's service account token mount
// says which namespace the pod is in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func newNodePreStopCmd() *cobra.Command {
	var etcd []string
	var prefix, logLevel, logFile, kubeconfig, dataDir, nodeID string
	var pod scaledown.Pod
	var timeout time.Duration
	var tf tlsFlags
	cmd := &cobra.Command{
		Use:   "prestop",
		Short: "A data node pod's preStop hook: drain the node if a StatefulSet scale-down removes it",
		Long: `The preStop hook of a data node run by a StatefulSet (the Helm chart's). It
reads the StatefulSet's spec.replicas through the Kubernetes API (in-cluster
service account, which needs get on that StatefulSet only). If the pod's
ordinal is still counted, the pod is restarting (a rolling update, an eviction,
a deleted pod) and the command returns at once: SIGTERM then hands the node's
primaries to in-sync replicas and its copies wait for it to come back. If the
ordinal is no longer counted, a scale-down is removing the pod for good: the
command drains the node (as 'sluice node drain') and waits until it holds no
shard copy, or --timeout, logging what is left; then SIGTERM stops it as
usual. The drain ends by itself once the node has stopped, so a later
scale-up's pod of the same ordinal takes copies again. A StatefulSet gone,
being deleted, or scaled to 0 drains nothing. docs/operations.md, "Scaling
data nodes down".

Hooks' output is not in the container's log: --log-file /proc/1/fd/2 writes
there (the node process's standard error, where it logs).`,
		Example: `  sluice node prestop --statefulset sluice-node --namespace search \
    --etcd https://sluice-etcd:2379 --data-dir /var/lib/sluice --timeout 29m --log-file /proc/1/fd/2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out io.Writer = cmd.ErrOrStderr()
			if logFile != "" {
				f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					fmt.Fprintf(out, "--log-file: %v; logging to stderr\n", err)
				} else {
					defer f.Close()
					out = f
				}
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})).With("component", "prestop")
			if pod.Namespace == "" {
				b, err := os.ReadFile(serviceAccountNamespace)
				if err != nil {
					return fmt.Errorf("--namespace not given, nor $POD_NAMESPACE, and not in a pod (%w)", err)
				}
				pod.Namespace = strings.TrimSpace(string(b))
			}
			if pod.StatefulSet == "" {
				return fmt.Errorf("--statefulset is required")
			}
			kcfg, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(kcfg)
			if err != nil {
				return err
			}
			var ec *clientv3.Client
			connect := func() (*state.Store, error) {
				etcdTLS, err := tf.etcd(etcd, log)
				if err != nil {
					return nil, err
				}
				if ec, err = dialEtcd(etcd, etcdTLS); err != nil {
					return nil, err
				}
				return state.NewStore(ec, prefix), nil
			}
			defer func() {
				if ec != nil {
					ec.Close()
				}
			}()
			_, err = scaledown.PreStop(cmd.Context(), scaledown.Config{Kube: kube, Pod: pod, NodeID: nodeID,
				Connect: connect, DataDir: dataDir, Timeout: timeout, Logger: log})
			return err
		},
	}
	fl := cmd.Flags()
	registerEtcdFlags(cmd, &etcd, &prefix)
	tf.register(cmd, "")
	host, _ := os.Hostname() // a StatefulSet pod's hostname is its name
	fl.StringVar(&pod.Name, "pod", envOr("POD_NAME", host), "the pod's name, <statefulset>-<ordinal> (default $POD_NAME, or the hostname)")
	fl.StringVar(&pod.StatefulSet, "statefulset", "", "the StatefulSet of the data node pods (required)")
	fl.StringVar(&pod.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the pod's namespace (default $POD_NAMESPACE, or the service account's)")
	fl.StringVar(&nodeID, "node-id", "", "the data node's id (default: the pod's name, as the chart's --node-id)")
	fl.StringVar(&dataDir, "data-dir", "./sluice-node", "the node's data directory: a scale-down's drain is recorded there, for the node to end it once stopped")
	fl.DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait for the node to be empty; keep it below the pod's terminationGracePeriodSeconds less the node's --shutdown-timeout and 30s for closing")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: the in-cluster service account)")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&logFile, "log-file", "", "append the log to this file, e.g. /proc/1/fd/2 (the container's log); default stderr")
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func kubeConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("not in a pod with a service account token (%w); give --kubeconfig", err)
	}
	return cfg, nil
}

func dialEtcd(endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return c, nil
}

// endScaleDownDrain ends a drain made by the scale-down preStop hook when
// dataDir holds its marker (scaledown.ClearDrain): `sluice node` calls it
// before the node starts and after it stopped. A failure is logged; the
// marker stays for the next try.
func endScaleDownDrain(endpoints []string, prefix string, tlsCfg *tls.Config, dataDir, nodeID string, log *slog.Logger) {
	if !scaledown.HasMarker(dataDir) || nodeID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ec, err := dialEtcd(endpoints, tlsCfg)
	if err == nil {
		defer ec.Close()
		_, err = scaledown.ClearDrain(ctx, state.NewStore(ec, prefix), dataDir, nodeID)
	}
	if err != nil {
		log.Warn("the scale-down preStop hook drained this node; ending that drain failed (it is tried again at the next start, or run `sluice node drain ID --undo`)", "node", nodeID, "err", err)
		return
	}
	log.Info("ended the drain the scale-down preStop hook made", "node", nodeID)
}
