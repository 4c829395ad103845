package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluiceclient "github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/conditions"
	"github.com/sluice-search/sluice/operator/controllers/reindex"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// noReindexNamespace is watched by an operator whose cluster has no
// reindex support (startWithoutReindex).
const noReindexNamespace = "noreindex"

// load indexes n documents into index; every other one is published.
func load(ctx context.Context, index string, n int) {
	GinkgoHelper()
	const batch = 500
	for i := 0; i < n; i += batch {
		var items []*sluicev1.BulkItem
		for j := i; j < min(i+batch, n); j++ {
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprint(j),
				Source: fmt.Appendf(nil, `{"title": "product %d", "sku": "sku-%d", "price": %d.5, "published": %t}`, j, j, j, j%2 == 0)})
		}
		resp, err := sluice.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.GetErrors()).To(BeFalse(), "bulk item errors: %v", resp.GetItems())
	}
}

// sourceIndex creates an Index resource through the operator, waits
// until it is Ready and loads n documents.
func sourceIndex(ctx context.Context, name string, shards int32, n int) {
	GinkgoHelper()
	ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.IndexSpec{IndexParameters: v1alpha1.IndexParameters{Shards: shards}}}
	Expect(k8s.Create(ctx, ix)).To(Succeed())
	expectReady(ctx, ix)
	load(ctx, name, n)
	DeferCleanup(func(ctx SpecContext) {
		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
	})
}

// newReindex is a Reindex from src into a destination it creates.
func newReindex(name, src, dst string, rps int32) *v1alpha1.Reindex {
	return &v1alpha1.Reindex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.ReindexSpec{
			Source:            v1alpha1.ReindexSource{Index: v1alpha1.IndexName(src)},
			Destination:       v1alpha1.ReindexDestination{Index: v1alpha1.IndexName(dst), Create: &v1alpha1.IndexParameters{Shards: 2}},
			RequestsPerSecond: &rps,
		},
	}
}

// expectRunning waits until rx's task runs and returns the task id.
func expectRunning(ctx context.Context, rx *v1alpha1.Reindex) string {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		get(ctx, rx)
		g.Expect(rx.Status.TaskID).NotTo(BeEmpty())
		g.Expect(rx.Status.Phase).To(Equal(v1alpha1.ReindexRunning))
	}).WithContext(ctx).Should(Succeed())
	return rx.Status.TaskID
}

// expectSucceeded waits until rx has succeeded.
func expectSucceeded(ctx context.Context, rx *v1alpha1.Reindex) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		get(ctx, rx)
		ready := condition(rx.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(rx.Status.Phase).To(Equal(v1alpha1.ReindexSucceeded), "Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
}

// tasksInto counts the reindex tasks writing into dest.
func tasksInto(ctx context.Context, dest string) int {
	GinkgoHelper()
	resp, err := sluice.ListTasks(ctx, &sluicev1.ListTasksRequest{})
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, t := range resp.GetTasks() {
		if t.GetReindex().GetDestIndex() == dest {
			n++
		}
	}
	return n
}

func docsCount(ctx context.Context, index string) int64 {
	GinkgoHelper()
	_, err := sluice.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}})
	Expect(err).NotTo(HaveOccurred())
	resp, err := sluice.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index, IncludeStats: true})
	Expect(err).NotTo(HaveOccurred())
	return resp.GetIndex().GetDocsCount()
}

func deleteIndex(ctx context.Context, name string) {
	GinkgoHelper()
	_, err := sluice.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: name})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Reindex", func() {
	It("runs deploy/samples/reindex.yaml to Succeeded, showing progress and taking a rethrottle on the way", func(ctx SpecContext) {
		ix := &v1alpha1.Index{}
		sample("index.yaml", ix, namespace)
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		const n = 2000 // half of them published: the sample copies those
		load(ctx, "products-v1", n)

		rx := &v1alpha1.Reindex{}
		sample("reindex.yaml", rx, namespace)
		slow := int32(250) // about 4 s for the 1,000 published documents
		rx.Spec.RequestsPerSecond = &slow
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		id := expectRunning(ctx, rx)
		Expect(rx.Finalizers).To(ContainElement(reindex.Finalizer))

		// Progress shows while it runs.
		Eventually(func(g Gomega) {
			get(ctx, rx)
			g.Expect(rx.Status.Phase).To(Equal(v1alpha1.ReindexRunning))
			g.Expect(rx.Status.Total).To(BeEquivalentTo(n / 2))
			g.Expect(rx.Status.Created).To(BeNumerically(">", 0))
			g.Expect(rx.Status.Created).To(BeNumerically("<", n/2))
			g.Expect(rx.Status.Progress).NotTo(Equal("0%"))
			g.Expect(rx.Status.Slices).NotTo(BeEmpty())
			g.Expect(rx.Status.StartTime).NotTo(BeNil())
			p := condition(rx.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(p.Reason).To(Equal(conditions.ReasonTaskRunning))
		}).WithContext(ctx).Should(Succeed())

		// Editing requestsPerSecond rethrottles the running task.
		fast := int32(100000)
		update(ctx, rx, func(rx *v1alpha1.Reindex) { rx.Spec.RequestsPerSecond = &fast })
		Eventually(func(g Gomega) {
			t, err := sluice.GetTask(ctx, &sluicev1.GetTaskRequest{Id: id})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.GetTask().GetReindex().GetRequestsPerSecond()).To(BeEquivalentTo(fast))
		}).WithContext(ctx).Should(Succeed())

		expectSucceeded(ctx, rx)
		Expect(rx.Status.TaskID).To(Equal(id))
		Expect(rx.Status.Total).To(BeEquivalentTo(n / 2))
		Expect(rx.Status.Created).To(BeEquivalentTo(n / 2))
		Expect(rx.Status.Failures).To(BeZero())
		Expect(rx.Status.Progress).To(Equal("100%"))
		Expect(rx.Status.CompletionTime).NotTo(BeNil())
		Eventually(func() []string { return get(ctx, rx).GetFinalizers() }).WithContext(ctx).
			ShouldNot(ContainElement(reindex.Finalizer), "a finished Reindex needs no finalizer")
		Expect(docsCount(ctx, "products-v2")).To(BeEquivalentTo(n / 2))
		Expect(aliasesOf(ctx, "products-v2")).To(ConsistOf("products"), "swapAlias moved the alias")
		Expect(aliasesOf(ctx, "products-v1")).To(BeEmpty())
		Expect(tasksInto(ctx, "products-v2")).To(Equal(1))

		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
		Expect(k8s.Delete(ctx, ix)).To(Succeed()) // Retain
		expectGone(ctx, ix)
		deleteIndex(ctx, "products-v1")
		deleteIndex(ctx, "products-v2")
	})

	It("cancels the task when a running Reindex is deleted", func(ctx SpecContext) {
		sourceIndex(ctx, "cancel-src", 2, 1000)
		rx := newReindex("cancel", "cancel-src", "cancel-dst", 20) // 50 s
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		id := expectRunning(ctx, rx)
		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
		t, err := sluice.GetTask(ctx, &sluicev1.GetTaskRequest{Id: id})
		Expect(err).NotTo(HaveOccurred())
		Expect(t.GetTask().GetState()).To(Equal(sluicev1.TaskState_TASK_STATE_CANCELLED))
		deleteIndex(ctx, "cancel-dst")
	})

	// Restarting the operator mid-reindex must follow the same task, both
	// when status kept the task id and when status was lost.
	DescribeTable("survives an operator restart mid-reindex and follows the same task",
		func(ctx SpecContext, name string, loseStatus bool) {
			src, dst := name+"-src", name+"-dst"
			sourceIndex(ctx, src, 2, 600)
			rx := newReindex(name, src, dst, 100) // about 6 s
			Expect(k8s.Create(ctx, rx)).To(Succeed())
			id := expectRunning(ctx, rx)

			operator.stop()
			if loseStatus {
				get(ctx, rx)
				rx.Status = v1alpha1.ReindexStatus{}
				Expect(k8s.Status().Update(ctx, rx)).To(Succeed())
			}
			operator = startOperator(namespace, cluster.Addr())

			expectSucceeded(ctx, rx)
			Expect(rx.Status.TaskID).To(Equal(id))
			Expect(rx.Status.Created).To(BeEquivalentTo(600))
			Expect(tasksInto(ctx, dst)).To(Equal(1), "a second task was started")
			Expect(docsCount(ctx, dst)).To(BeEquivalentTo(600))

			Expect(k8s.Delete(ctx, rx)).To(Succeed())
			expectGone(ctx, rx)
			deleteIndex(ctx, dst)
		},
		Entry("with its status", "restart", false),
		Entry("with its status lost, found again through ListTasks", "lost", true),
	)

	It("starts a new task for a Reindex deleted and applied again, not the old one's", func(ctx SpecContext) {
		sourceIndex(ctx, "again-src", 1, 50)
		rx := newReindex("again", "again-src", "again-dst", 0)
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		expectSucceeded(ctx, rx)
		first := rx.Status.TaskID
		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
		deleteIndex(ctx, "again-dst")

		rx = newReindex("again", "again-src", "again-dst", 0)
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		expectSucceeded(ctx, rx)
		Expect(rx.Status.TaskID).NotTo(Equal(first))
		Expect(rx.Status.Created).To(BeEquivalentTo(50))
		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
		deleteIndex(ctx, "again-dst")
	})

	It("waits for a destination that does not exist yet when it is not to create it", func(ctx SpecContext) {
		sourceIndex(ctx, "wait-src", 1, 100)
		rx := newReindex("wait", "wait-src", "wait-dst", 0)
		rx.Spec.Destination.Create = nil
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		Eventually(func(g Gomega) {
			get(ctx, rx)
			g.Expect(rx.Status.Phase).To(Equal(v1alpha1.ReindexPending))
			g.Expect(condition(rx.Status.Conditions, v1alpha1.ConditionProgressing).Message).To(ContainSubstring("destination index wait-dst does not exist yet"))
		}).WithContext(ctx).Should(Succeed())
		Expect(rx.Status.TaskID).To(BeEmpty())

		dst := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "wait-dst", Namespace: namespace}}
		Expect(k8s.Create(ctx, dst)).To(Succeed())
		expectSucceeded(ctx, rx)
		Expect(rx.Status.Created).To(BeEquivalentTo(100))

		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		Expect(k8s.Delete(ctx, dst)).To(Succeed())
		expectGone(ctx, dst)
	})

	It("reports a cluster without reindex support as Degraded ReindexUnsupported", func(ctx SpecContext) {
		bare := startWithoutReindex(ctx, cluster.Addr())
		op := startOperator(noReindexNamespace, bare)
		DeferCleanup(op.stop)
		c, err := sluiceclient.Dial(ctx, bare)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		_, err = c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "unsupported-src"})
		Expect(err).NotTo(HaveOccurred())
		rx := newReindex("unsupported", "unsupported-src", "unsupported-dst", 0)
		rx.Namespace = noReindexNamespace
		Expect(k8s.Create(ctx, rx)).To(Succeed())
		Eventually(func(g Gomega) {
			get(ctx, rx)
			d := condition(rx.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(conditions.ReasonReindexUnsupported))
			g.Expect(rx.Status.Phase).To(Equal(v1alpha1.ReindexPending))
		}).WithContext(ctx).Should(Succeed())
		Expect(rx.Status.TaskID).To(BeEmpty())
		// No task, nothing to cancel: deletion goes through.
		Expect(k8s.Delete(ctx, rx)).To(Succeed())
		expectGone(ctx, rx)
	})
})
