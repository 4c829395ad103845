package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-search/sluice/client"
)

// The scale-down suite runs data nodes named as a StatefulSet's pods
// (sluice-node-0..2) as processes, beside a test API server (a real
// kube-apiserver, no controllers or kubelet) holding their StatefulSet,
// and runs the chart's preStop hook, `sluice node prestop`, as the kubelet
// would before SIGTERM. A pod still counted by the StatefulSet (a restart)
// drains nothing; once the StatefulSet is scaled to 2, the hook of the
// pod of ordinal 2 drains its node under a writer and a searcher until it
// is empty, the node then stops (SIGTERM) and ends that drain itself, and
// nothing acknowledged is lost; scaled back to 3, the node of ordinal 2
// starts undrained and copies move to it again.
var _ = Describe("scaling data nodes down: the preStop hook", Ordered, func() {
	const (
		index = "scaled"
		sts   = "sluice-node"
		ns    = "default"
	)
	var (
		lc         *cluster
		lcl        *client.Client
		kube       kubernetes.Interface
		kubeconfig string
	)
	BeforeAll(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			Skip(`KUBEBUILDER_ASSETS is not set: no test API server (eval "$(scripts/k8s-tools.sh)")`)
		}
		dir := filepath.Join(c.dir, "scaledown")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		lc = labCluster(dir, nil, []string{sts + "-0", sts + "-1", sts + "-2"})
		lcl = lc.dial("coord-a")
		DeferCleanup(func() { lcl.Close() })
		labCreateIndex(lcl, index, 4, 1)

		apiserver := filepath.Join(dir, "bin", "apiserver")
		build := exec.Command("go", "build", "-o", apiserver, "./operator/crdtest/apiserver")
		build.Dir = ".."
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build the test API server: %s", out)
		kubeconfig = filepath.Join(dir, "kubeconfig")
		api := &proc{name: "apiserver", bin: apiserver, log: filepath.Join(dir, "apiserver.log"), args: []string{"--write-kubeconfig", kubeconfig}}
		api.start()
		DeferCleanup(func() { api.kill(syscall.SIGTERM) })
		Eventually(func() error { _, err := os.Stat(kubeconfig); return err }, 90*time.Second, 250*time.Millisecond).Should(Succeed(), "the test API server's kubeconfig")
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		kube, err = kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		replicas := int32(3)
		labels := map[string]string{"app.kubernetes.io/component": "node"}
		_, err = kube.AppsV1().StatefulSets(ns).Create(context.Background(), &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: sts},
			Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "sluice"}}}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	scale := func(n int32) {
		ctx := context.Background()
		s, err := kube.AppsV1().StatefulSets(ns).GetScale(ctx, sts, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.Spec.Replicas = n
		_, err = kube.AppsV1().StatefulSets(ns).UpdateScale(ctx, sts, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	// preStop runs the hook of pod as the chart's does (its etcd, its
	// data dir, $POD_NAME), with the test API server's kubeconfig.
	preStop := func(pod string) string {
		cmd := exec.Command(lc.sluice, "node", "prestop", "--kubeconfig", kubeconfig, "--statefulset", sts, "--namespace", ns,
			"--etcd", lc.etcdURL, "--data-dir", filepath.Join(lc.dir, pod), "--timeout", "2m")
		cmd.Env = append(os.Environ(), "POD_NAME="+pod)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "sluice node prestop: %s", out)
		GinkgoWriter.Printf("sluice node prestop (%s):\n%s", pod, out)
		return string(out)
	}
	drained := func() string {
		out, err := lc.cli("coord-a", "cluster", "settings")
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}

	It("drains nothing when the pod restarts", func() {
		start := time.Now()
		out := preStop(sts + "-2")
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		Expect(out).To(ContainSubstring("not leaving, not draining"))
		Expect(drained()).To(MatchRegexp(`drained nodes\s+-`))
		Expect(copiesPerNode(lc, index, sts+"-2")[0]).To(BeNumerically(">", 0))
	})

	It("drains the pod a scale-down removes under load, losing nothing; scaled back up it takes copies again", func() {
		w, s := startWriter(lcl, index, "scale-down", 2, nil), startSearcher(lcl, index)
		Eventually(w.h.n.Load, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 400))
		scale(2)
		out := preStop(sts + "-2")
		Expect(out).To(ContainSubstring("the node holds no shard copies; it may stop"))
		Expect(copiesPerNode(lc, index, sts+"-2")).To(Equal([]int{0}))
		Expect(drained()).To(MatchRegexp(`drained nodes\s+` + sts + "-2"))
		// SIGTERM, as the kubelet sends once the hook returned: the node
		// stops, deregisters, and ends the hook's drain.
		p := lc.proc(sts + "-2")
		p.kill(syscall.SIGTERM)
		Expect(lc.logOf(p)).To(ContainSubstring("ended the drain the scale-down preStop hook made"))
		Expect(drained()).To(MatchRegexp(`drained nodes\s+-`))
		labWaitGreen(lcl, index, 30*time.Second)
		// Every acknowledged write is there, and no search failed. (The
		// moves themselves, bounded and seen in state and health, are the
		// moves suite's: these small copies move within a second.)
		h := w.close()
		searches, failures := s.close()
		Expect(failures).To(BeEmpty(), "searches that failed during the drain (of %d)", searches)
		Expect(searches).To(BeNumerically(">", 10))
		checkHistory(lcl, index, h)

		// A scale-up makes the pod of ordinal 2 again, on its volume: the
		// node is given copies (rebalancing moves replicas to it).
		scale(3)
		p.start()
		lc.waitNodes(3)
		Eventually(func() int {
			return copiesPerNode(lc, index, sts+"-2")[0]
		}, 90*time.Second, 250*time.Millisecond).Should(BeNumerically(">", 0))
		labWaitGreen(lcl, index, 60*time.Second)
	})
})
