package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluiceclient "github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/devcluster"
	"github.com/sluice-search/sluice/operator/crdtest"
	"github.com/sluice-search/sluice/operator/manager"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	// Eventually(...).WithContext(ctx) would otherwise poll until the spec
	// is interrupted instead of failing after the timeout.
	EnforceDefaultTimeoutsWhenUsingContexts()
	RunSpecs(t, "Sluice operator")
}

var (
	restConfig *rest.Config
	k8s        client.Client
	cluster    *devcluster.Cluster
	sluice     *sluiceclient.Client
	// namespace is watched by the operator the suite runs.
	namespace = "e2e"
	// operator is the running operator; specs that restart it replace it.
	operator *runningOperator
)

var _ = BeforeSuite(func(ctx SpecContext) {
	if crdtest.Skipped() {
		Skip(crdtest.SkipEnv + "=1: not starting kube-apiserver")
	}
	ctrl.SetLogger(logr.FromSlogHandler(quietLogger().Handler()))
	env, cfg, err := crdtest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
	restConfig = cfg

	scheme, err := manager.Scheme()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{namespace, unreachableNamespace, noReindexNamespace, secureNamespace} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}

	// The Sluice cluster, wired as `sluice dev` wires it: embedded etcd, a
	// coordinator with the data path and reindex tasks, three data nodes
	// with shard engines.
	cluster = startCluster(ctx)
	sluice, err = sluiceclient.Dial(ctx, cluster.Addr())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sluice.Close)

	operator = startOperator(namespace, cluster.Addr())
	DeferCleanup(func() { operator.stop() })
}, NodeTimeout(90*time.Second))

// startCluster starts a dev cluster on a free port.
func startCluster(ctx context.Context) *devcluster.Cluster {
	GinkgoHelper()
	c, err := devcluster.Start(ctx, devcluster.Config{ClusterSettings: watermark.Ignored(), DataDir: GinkgoT().TempDir(), Listen: "127.0.0.1:0", Nodes: 3, Logger: quietLogger(),
		Tasks: reindex.Options{Logger: quietLogger(),
			// Frequent checkpoints, so progress shows within a few seconds
			// of copying.
			CheckpointInterval: 300 * time.Millisecond, ProgressInterval: 300 * time.Millisecond}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Stop)
	return c
}

// quietLogger keeps the servers' and the operator's logs out of the test
// output unless SLUICE_E2E_LOG=1.
func quietLogger() *slog.Logger {
	if os.Getenv("SLUICE_E2E_LOG") == "1" {
		return slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// runningOperator is an operator running in this process.
type runningOperator struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startOperator runs the real operator (the manager `sluice operator`
// runs) for one namespace against the coordinator at addr, dialling with
// dial (TLS and an API key) besides the defaults.
func startOperator(ns, addr string, dial ...grpc.DialOption) *runningOperator {
	GinkgoHelper()
	op, err := manager.New(manager.Options{
		Coordinator: addr, Namespace: ns, Config: restConfig,
		MetricsAddr: "0", ProbeAddr: "0", Logger: quietLogger(), DialOptions: dial,
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningOperator{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		defer op.Close()
		Expect(op.Start(ctx)).To(Succeed())
	}()
	return r
}

// stop stops the operator and waits until it has.
func (r *runningOperator) stop() {
	r.once.Do(func() {
		r.cancel()
		Eventually(r.done).WithTimeout(20 * time.Second).Should(BeClosed())
	})
}

// sample reads a manifest of deploy/samples into obj, in namespace ns.
func sample(file string, obj client.Object, ns string) {
	GinkgoHelper()
	root, err := crdtest.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "deploy", "samples", file))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(data, obj)).To(Succeed())
	obj.SetNamespace(ns)
}

// fromYAML decodes a manifest written in a spec.
func fromYAML(manifest string, obj client.Object) {
	GinkgoHelper()
	Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed())
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
}

// get reads obj again from the API server.
func get(ctx context.Context, obj client.Object) client.Object {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// update applies change to the latest version of obj and writes it, again
// on a conflict: the operator writes status meanwhile, which changes the
// resource version (kubectl edit and apply do the same).
func update[T client.Object](ctx context.Context, obj T, change func(T)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}

// condition returns the condition typ of conds, or an empty one.
func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// clusterIndex reads an index through the Sluice API.
func clusterIndex(ctx context.Context, name string) (*sluicev1.IndexInfo, error) {
	resp, err := sluice.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: name})
	return resp.GetIndex(), err
}

// deadAddress is a loopback address nothing listens on.
func deadAddress() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}
