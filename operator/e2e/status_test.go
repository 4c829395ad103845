package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-search/sluice/coordinator"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/conditions"
)

// Status that follows the cluster: through a coordinator outage, and
// after a Reindex moved an alias.
var _ = Describe("Index status", func() {
	It("turns health unknown while the coordinator is away, and Ready within seconds of its return", func(ctx SpecContext) {
		const ns = "outage"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		c := startCluster(ctx)
		addr := c.Addr()
		op := startOperator(ns, addr)
		DeferCleanup(op.stop)
		ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "through-outage", Namespace: ns}}
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		Expect(ix.Status.Health).To(Equal(v1alpha1.IndexHealthGreen))

		c.Coordinator.Stop()
		// Seen at once (the connection drops), not at the 30 s resync.
		Eventually(func(g Gomega) {
			get(ctx, ix)
			g.Expect(ix.Status.Health).To(Equal(v1alpha1.IndexHealthUnknown))
			r := condition(ix.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(conditions.ReasonClusterUnreachable))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())

		// A long outage: the retry backoff and gRPC's dial backoff have
		// grown to their caps by the time the coordinator returns.
		time.Sleep(25 * time.Second)
		back, err := coordinator.New(coordinator.Config{Listen: addr, EtcdEndpoints: c.EtcdEndpoints(), Logger: quietLogger()})
		Expect(err).NotTo(HaveOccurred())
		Expect(back.Start(ctx)).To(Succeed())
		DeferCleanup(back.Stop)
		returned := time.Now()
		Eventually(func(g Gomega) {
			get(ctx, ix)
			g.Expect(ix.Status.Health).To(Equal(v1alpha1.IndexHealthGreen))
			g.Expect(condition(ix.Status.Conditions, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("Ready %s after the coordinator returned\n", time.Since(returned).Round(time.Millisecond))
	}, SpecTimeout(90*time.Second))

	It("shows the aliases the index has after a Reindex moved one away, and does not take it back", func(ctx SpecContext) {
		blue := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "blue", Namespace: namespace},
			Spec: v1alpha1.IndexSpec{Aliases: []v1alpha1.IndexName{"colour"}}}
		green := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "green", Namespace: namespace}}
		for _, ix := range []*v1alpha1.Index{blue, green} {
			Expect(k8s.Create(ctx, ix)).To(Succeed())
			expectReady(ctx, ix)
			DeferCleanup(func(ctx SpecContext) {
				Expect(k8s.Delete(ctx, ix)).To(Succeed())
				expectGone(ctx, ix)
			})
		}
		Expect(blue.Status.Aliases).To(Equal([]string{"colour"}))
		load(ctx, "blue", 10)
		swap := v1alpha1.IndexName("colour")
		rx := &v1alpha1.Reindex{ObjectMeta: metav1.ObjectMeta{Name: "blue-to-green", Namespace: namespace},
			Spec: v1alpha1.ReindexSpec{Source: v1alpha1.ReindexSource{Index: "blue"},
				Destination: v1alpha1.ReindexDestination{Index: "green"}, SwapAlias: &swap}}
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		expectSucceeded(ctx, rx)
		// Both Index resources show it well before their 30 s resync.
		Eventually(func(g Gomega) {
			get(ctx, blue)
			get(ctx, green)
			g.Expect(blue.Status.Aliases).To(BeEmpty())
			g.Expect(blue.Status.AppliedAliases).To(Equal([]string{"colour"}))
			g.Expect(green.Status.Aliases).To(Equal([]string{"colour"}))
			g.Expect(green.Status.DocsCount).To(Equal(int64(10)))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		// A reconcile of blue (touch it) leaves the alias with green.
		update(ctx, blue, func(blue *v1alpha1.Index) { blue.Annotations = map[string]string{"touch": "1"} })
		Consistently(func() []string { return aliasesOf(ctx, "green") }).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal([]string{"colour"}))
		Expect(aliasesOf(ctx, "blue")).To(BeEmpty())
		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
	})
})
