package scaledown_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/devcluster"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/scaledown"
	"github.com/sluice-search/sluice/operator/crdtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// kube is a client of the test API server (envtest: a real kube-apiserver
// and etcd), as its admin; kubeCfg its config, for impersonation.
var (
	kube    kubernetes.Interface
	kubeCfg *rest.Config
)

func TestMain(m *testing.M) {
	if crdtest.Skipped() {
		fmt.Println(crdtest.SkipEnv + "=1: not starting kube-apiserver; skipping")
		os.Exit(0)
	}
	env, cfg, err := crdtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kubeCfg = cfg
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// namespace creates a fresh namespace for a test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("t%d", time.Now().UnixNano())
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// statefulSet creates a StatefulSet of data nodes, as the chart's (the
// test API server runs no controller: no pod is made).
func statefulSet(t *testing.T, ns, name string, replicas int32, start *int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "sluice"}}},
			},
		},
	}
	if start != nil {
		sts.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: *start}
	}
	if _, err := kube.AppsV1().StatefulSets(ns).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	s, err := kube.AppsV1().StatefulSets(ns).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = replicas
	if _, err := kube.AppsV1().StatefulSets(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestDecide(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	three := int32(3)
	statefulSet(t, ns, "data", 2, nil)
	statefulSet(t, ns, "from3", 2, &three)
	statefulSet(t, ns, "zero", 0, nil)
	statefulSet(t, ns, "deleting", 3, nil)
	// Foreground deletion holds the object, marked deleted, until its
	// finalizer goes: a StatefulSet deleted with its pods.
	del, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "deleting", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	del.Finalizers = []string{"sluice.dev/test"}
	if _, err := kube.AppsV1().StatefulSets(ns).Update(ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.AppsV1().StatefulSets(ns).Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		del, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "deleting", metav1.GetOptions{})
		if err == nil {
			del.Finalizers = nil
			_, _ = kube.AppsV1().StatefulSets(ns).Update(ctx, del, metav1.UpdateOptions{})
		}
	})

	for _, tc := range []struct {
		sts, pod string
		leaving  bool
		invalid  bool
		replicas int32
	}{
		{"data", "data-0", false, false, 2},
		{"data", "data-1", false, false, 2},
		{"data", "data-2", true, false, 2},
		{"data", "data-7", true, false, 2},
		{"from3", "from3-2", true, false, 2},
		{"from3", "from3-3", false, false, 2},
		{"from3", "from3-4", false, false, 2},
		{"from3", "from3-5", true, false, 2},
		{"zero", "zero-0", false, false, 0},
		{"deleting", "deleting-5", false, false, 3},
		{"gone", "gone-4", false, false, -1},
		{"data", "other-2", false, true, -1},
		{"data", "data-x", false, true, -1},
		{"data", "data-01", false, true, -1},
		{"data", "data--1", false, true, -1},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			d, err := scaledown.Decide(ctx, kube, scaledown.Pod{Namespace: ns, StatefulSet: tc.sts, Name: tc.pod})
			if tc.invalid {
				if !errors.Is(err, scaledown.ErrInvalid) {
					t.Fatalf("Decide = %+v, %v; want ErrInvalid", d, err)
				}
				return
			}
			if err != nil || d.Leaving != tc.leaving || d.Replicas != tc.replicas || d.Reason == "" {
				t.Fatalf("Decide = %+v, %v; want leaving %v, replicas %d", d, err, tc.leaving, tc.replicas)
			}
		})
	}
}

// The chart's least privilege: the data nodes' account may get their own
// StatefulSet and nothing else, and that is enough for Decide.
func TestDecideWithOnlyGetOnItsStatefulSet(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	statefulSet(t, ns, "data", 2, nil)
	statefulSet(t, ns, "other", 2, nil)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "data-node", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, ResourceNames: []string{"data"}, Verbs: []string{"get"}}}}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "data-node", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "data-node"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "data-node", Namespace: ns}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(kubeCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":data-node"}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC may take a moment to see the new binding.
	var d scaledown.Decision
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if d, err = scaledown.Decide(ctx, as, scaledown.Pod{Namespace: ns, StatefulSet: "data", Name: "data-2"}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !d.Leaving {
		t.Fatalf("Decide as the data node = %+v, %v; want leaving", d, err)
	}
	if _, err := scaledown.Decide(ctx, as, scaledown.Pod{Namespace: ns, StatefulSet: "other", Name: "other-2"}); err == nil {
		t.Fatal("the data node's account read another StatefulSet")
	}
	if _, err := as.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the data node's account lists StatefulSets")
	}
}

// cluster is a real Sluice cluster in process: embedded etcd, a
// coordinator and data nodes named as a StatefulSet's pods, each on its
// own data directory, reached over loopback gRPC.
type cluster struct {
	t     *testing.T
	dc    *devcluster.Cluster
	dir   string
	log   *slog.Logger
	nodes map[string]*node.Node
	cl    *client.Client
	store *state.Store
}

func startCluster(t *testing.T, ids ...string) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{t: t, dir: t.TempDir(), log: slog.New(slog.DiscardHandler), nodes: map[string]*node.Node{}}
	dc, err := devcluster.Start(ctx, devcluster.Config{DataDir: c.dir, Listen: "127.0.0.1:0", LeaseTTL: 2 * time.Second,
		Logger: c.log, ClusterSettings: watermark.Ignored()})
	if err != nil {
		t.Fatal(err)
	}
	c.dc = dc
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Stop()
		}
		dc.Stop()
	})
	if c.cl, err = client.Dial(ctx, dc.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cl.Close() })
	etcd, err := clientv3.New(clientv3.Config{Endpoints: dc.EtcdEndpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	c.store = state.NewStore(etcd, "")
	for _, id := range ids {
		c.start(id)
	}
	return c
}

// start starts data node id on its data directory (again, after stop),
// ending a scale-down's drain first as `sluice node` does.
func (c *cluster) start(id string) {
	c.t.Helper()
	dir := c.dataDir(id)
	if _, err := scaledown.ClearDrain(context.Background(), c.store, dir, id); err != nil {
		c.t.Fatal(err)
	}
	n, err := node.New(node.Config{ID: id, DataDir: dir, Listen: "127.0.0.1:0", EtcdEndpoints: c.dc.EtcdEndpoints(),
		LeaseTTL: 2 * time.Second, Logger: c.log})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n
}

// stop shuts node id down as on SIGTERM, then ends a scale-down's drain,
// as `sluice node` does.
func (c *cluster) stop(id string) {
	c.t.Helper()
	c.nodes[id].Shutdown(10 * time.Second)
	delete(c.nodes, id)
	if _, err := scaledown.ClearDrain(context.Background(), c.store, c.dataDir(id), id); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) connect() (*state.Store, error) { return c.store, nil }

func (c *cluster) dataDir(id string) string { return filepath.Join(c.dir, id) }

func (c *cluster) state() *state.Snapshot {
	c.t.Helper()
	st, err := c.store.Load(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// index creates an index and waits for it to be green, with docs
// documents.
func (c *cluster) index(name string, shards, replicas int32, docs int) {
	c.t.Helper()
	ctx := context.Background()
	if _, err := c.cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: name, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: shards, NumberOfReplicas: replicas}}); err != nil {
		c.t.Fatal(err)
	}
	c.green(name)
	if docs == 0 {
		return
	}
	items := make([]*sluicev1.BulkItem, docs)
	for i := range items {
		items[i] = &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprint(i), Source: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	resp, err := c.cl.Bulk(ctx, &sluicev1.BulkRequest{Index: name, Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
	if err != nil || resp.Errors {
		c.t.Fatalf("bulk: %v, %v", resp, err)
	}
}

func (c *cluster) green(name string) {
	c.t.Helper()
	h, err := c.cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{name},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(30 * time.Second)})
	if err != nil || h.TimedOut {
		c.t.Fatalf("index %s not green: %v, %v", name, h, err)
	}
}

func (c *cluster) count(name string) int64 {
	c.t.Helper()
	ctx := context.Background()
	if _, err := c.cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{name}}); err != nil {
		c.t.Fatal(err)
	}
	r, err := c.cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{name}, TrackTotalHits: -1})
	if err != nil {
		c.t.Fatal(err)
	}
	if r.Shards.Failed != 0 {
		c.t.Fatalf("search of %s: shard failures %v", name, r.Shards.Failures)
	}
	return r.Total.Value
}

func (c *cluster) preStop(ns, pod string) scaledown.Result {
	c.t.Helper()
	res, err := scaledown.PreStop(context.Background(), scaledown.Config{Kube: kube,
		Pod:     scaledown.Pod{Namespace: ns, StatefulSet: "sluice-node", Name: pod},
		Connect: c.connect, DataDir: c.dataDir(pod), Timeout: time.Minute, Poll: 100 * time.Millisecond, Logger: c.log})
	if err != nil {
		c.t.Fatalf("PreStop %s: %v", pod, err)
	}
	return res
}

// The preStop hook on a StatefulSet of 3 data nodes scaled to 2: the pod of
// ordinal 0 (a restart) returns at once and drains nothing; the pod of
// ordinal 2 (removed) drains its node until it holds no copy, with every
// document of an index without replicas still there. When the StatefulSet
// grows back to 3, the node of that ordinal starts undrained and is given
// shards again.
func TestPreStopDrainsOnlyOnScaleDown(t *testing.T) {
	ns := namespace(t)
	statefulSet(t, ns, "sluice-node", 3, nil)
	c := startCluster(t, "sluice-node-0", "sluice-node-1", "sluice-node-2")
	const docs = 300
	c.index("logs", 6, 0, docs)
	st := c.state()
	held := st.CopiesOn("sluice-node-2")
	if held == 0 {
		t.Fatalf("sluice-node-2 holds none of the 6 shards; nothing to drain")
	}
	scale(t, ns, "sluice-node", 2)

	start := time.Now()
	res := c.preStop(ns, "sluice-node-0")
	if res.Decision.Leaving || res.Drained || time.Since(start) > 5*time.Second {
		t.Fatalf("ordinal 0: %+v after %v; want a restart, at once", res, time.Since(start))
	}
	if st := c.state(); len(st.Settings.GetDrainedNodes()) != 0 || st.CopiesOn("sluice-node-0") == 0 {
		t.Fatalf("ordinal 0: drained nodes %v, copies %d; want no drain", st.Settings.GetDrainedNodes(), st.CopiesOn("sluice-node-0"))
	}
	if scaledown.HasMarker(c.dataDir("sluice-node-0")) {
		t.Fatal("ordinal 0: a scale-down marker was written")
	}

	res = c.preStop(ns, "sluice-node-2")
	if !res.Decision.Leaving || !res.Drained || res.Left != 0 || res.ScaledBack {
		t.Fatalf("ordinal 2: %+v; want drained to empty", res)
	}
	st = c.state()
	if n := st.CopiesOn("sluice-node-2"); n != 0 || !st.Draining("sluice-node-2") {
		t.Fatalf("after the hook: node holds %d copies, draining %v", n, st.Draining("sluice-node-2"))
	}
	if !scaledown.HasMarker(c.dataDir("sluice-node-2")) {
		t.Fatal("no scale-down marker in the drained node's data dir")
	}
	if n := c.count("logs"); n != docs {
		t.Fatalf("count after the drain = %d, want %d", n, docs)
	}
	c.green("logs")

	// SIGTERM: the node stops and deregisters, and its drain ends.
	c.stop("sluice-node-2")
	if st := c.state(); st.Draining("sluice-node-2") || scaledown.HasMarker(c.dataDir("sluice-node-2")) {
		t.Fatalf("after the stop: drained nodes %v, marker %v", st.Settings.GetDrainedNodes(), scaledown.HasMarker(c.dataDir("sluice-node-2")))
	}

	// Scale back up: the pod of ordinal 2 comes back with its volume and
	// takes shards of a new index.
	scale(t, ns, "sluice-node", 3)
	c.start("sluice-node-2")
	waitLive(t, c, "sluice-node-2")
	c.index("metrics", 6, 0, 10)
	if n := c.state().CopiesOn("sluice-node-2"); n == 0 {
		t.Fatalf("the node back after a scale-down holds no shard of a new index (drained nodes %v)", c.state().Settings.GetDrainedNodes())
	}
	if n := c.count("logs"); n != docs {
		t.Fatalf("count at the end = %d, want %d", n, docs)
	}
}

// A node killed after the hook drained it (its drain not ended at stop)
// comes back with the marker on its volume and ends the drain when it
// starts; a drain made by hand has no marker and survives a restart.
func TestStartEndsOnlyAScaleDownDrain(t *testing.T) {
	ns := namespace(t)
	statefulSet(t, ns, "sluice-node", 2, nil)
	c := startCluster(t, "sluice-node-0", "sluice-node-1", "sluice-node-2")
	c.index("logs", 3, 1, 50)
	res := c.preStop(ns, "sluice-node-2")
	if !res.Drained || res.Left != 0 {
		t.Fatalf("PreStop: %+v", res)
	}
	c.nodes["sluice-node-2"].Stop() // killed: no ClearDrain at stop
	delete(c.nodes, "sluice-node-2")
	if !c.state().Draining("sluice-node-2") {
		t.Fatal("the drain ended without ClearDrain")
	}
	c.start("sluice-node-2")
	if c.state().Draining("sluice-node-2") {
		t.Fatal("the node started again still drained")
	}

	// By hand: no marker, the drain stays across a restart.
	if _, err := c.cl.DrainNode(context.Background(), &sluicev1.DrainNodeRequest{NodeId: "sluice-node-1"}); err != nil {
		t.Fatal(err)
	}
	c.stop("sluice-node-1")
	c.start("sluice-node-1")
	if !c.state().Draining("sluice-node-1") {
		t.Fatal("a drain made by hand ended when its node restarted")
	}
}

// A StatefulSet scaled back up while its pod drains: the hook ends the
// drain and returns; the pod restarts.
func TestPreStopEndsTheDrainWhenScaledBack(t *testing.T) {
	ns := namespace(t)
	statefulSet(t, ns, "sluice-node", 1, nil)
	c := startCluster(t, "sluice-node-0", "sluice-node-1")
	// Two copies of each shard on two nodes: the copy on sluice-node-1
	// cannot move, so the drain waits.
	c.index("logs", 2, 1, 20)
	done := make(chan scaledown.Result, 1)
	go func() {
		res, err := scaledown.PreStop(context.Background(), scaledown.Config{Kube: kube,
			Pod:     scaledown.Pod{Namespace: ns, StatefulSet: "sluice-node", Name: "sluice-node-1"},
			Connect: c.connect, DataDir: c.dataDir("sluice-node-1"), Timeout: time.Minute,
			Poll: 100 * time.Millisecond, Recheck: 200 * time.Millisecond, Logger: c.log})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for deadline := time.Now().Add(10 * time.Second); !c.state().Draining("sluice-node-1"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hook did not drain the node")
		}
	}
	scale(t, ns, "sluice-node", 2)
	select {
	case res := <-done:
		if !res.ScaledBack || res.Left == 0 {
			t.Fatalf("PreStop = %+v; want scaled back with copies left", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("PreStop still waits after the scale-up")
	}
	if st := c.state(); st.Draining("sluice-node-1") || scaledown.HasMarker(c.dataDir("sluice-node-1")) {
		t.Fatalf("after the scale-up: drained nodes %v", st.Settings.GetDrainedNodes())
	}
}

func waitLive(t *testing.T, c *cluster, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !c.state().Live(id); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node %s not registered", id)
		}
	}
}
