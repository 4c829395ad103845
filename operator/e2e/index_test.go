package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/conditions"
	"github.com/sluice-search/sluice/operator/controllers/index"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// unreachableNamespace is watched by an operator whose coordinator address
// has nothing behind it.
const unreachableNamespace = "unreachable"

// expectReady waits until ix is Ready for its current generation.
func expectReady(ctx context.Context, ix *v1alpha1.Index) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ix), ix)).To(Succeed())
		g.Expect(ix.Status.ObservedGeneration).To(Equal(ix.Generation))
		ready := condition(ix.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
	}).WithContext(ctx).Should(Succeed())
}

// expectGone waits until the resource has been deleted for good.
func expectGone(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
}

func aliasesOf(ctx context.Context, name string) []string {
	GinkgoHelper()
	info, err := clusterIndex(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	return info.GetAliases()
}

var _ = Describe("Index", func() {
	It("creates the index of deploy/samples/index.yaml and reports it Ready", func(ctx SpecContext) {
		ix := &v1alpha1.Index{}
		sample("index.yaml", ix, namespace)
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)

		info, err := clusterIndex(ctx, "products-v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(ix.Status.UUID).To(Equal(info.GetUuid()))
		Expect(ix.Status.IndexName).To(Equal("products-v1"))
		Expect(ix.Status.Shards).To(BeEquivalentTo(2))
		Expect(ix.Status.RoutingShards).To(BeEquivalentTo(16))
		Expect(ix.Status.ActiveShards).To(BeEquivalentTo(2))
		Expect(ix.Status.Health).To(Equal(v1alpha1.IndexHealthGreen))
		Expect(ix.Finalizers).To(ContainElement(index.Finalizer))
		Expect(condition(ix.Status.Conditions, v1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		Expect(condition(ix.Status.Conditions, v1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse))

		// The spec reached the cluster.
		Expect(info.GetSettings().GetNumberOfShards()).To(BeEquivalentTo(2))
		Expect(info.GetSettings().GetNumberOfRoutingShards()).To(BeEquivalentTo(16))
		Expect(info.GetSettings().GetMergeMaxMbPerSec()).To(BeEquivalentTo(40))
		Expect(info.GetSettings().GetRefreshInterval().AsDuration()).To(Equal(time.Second))
		Expect(info.GetMapping().GetProperties()).To(HaveKey("sku"))
		Expect(info.GetMapping().GetProperties()["sku"].GetType()).To(Equal(sluicev1.FieldType_FIELD_TYPE_KEYWORD))
		Expect(info.GetMapping().GetProperties()["updated_at"].GetType()).To(Equal(sluicev1.FieldType_FIELD_TYPE_DATE))
		Expect(info.GetAliases()).To(ConsistOf("products"))

		// A second look changes nothing: reconciling is idempotent.
		rv := ix.ResourceVersion
		Consistently(func() string { return get(ctx, ix).GetResourceVersion() }).
			WithTimeout(1500 * time.Millisecond).Should(Equal(rv))

		DeferCleanup(func(ctx SpecContext) {
			// Retain: the index outlives the resource; remove it by hand.
			Expect(k8s.Delete(ctx, ix)).To(Succeed())
			expectGone(ctx, ix)
			_, err := sluice.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "products-v1"})
			Expect(err).NotTo(HaveOccurred())
		})
	})

	It("propagates spec changes: settings, new mapping fields, aliases", func(ctx SpecContext) {
		ix := &v1alpha1.Index{}
		fromYAML(`
apiVersion: sluice.dev/v1alpha1
kind: Index
metadata: {name: changes}
spec:
  mapping: {properties: {title: {type: text}}}
  aliases: [changes-read, changes-old]
`, ix)
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		Expect(aliasesOf(ctx, "changes")).To(ConsistOf("changes-read", "changes-old"))

		update(ctx, ix, func(ix *v1alpha1.Index) {
			ix.Spec.Replicas = 1
			ix.Spec.Settings.RefreshInterval = "5s"
			ix.Spec.Settings.Translog = v1alpha1.TranslogSettings{Durability: v1alpha1.TranslogDurabilityAsync, SyncInterval: "2s"}
			ix.Spec.Mapping.Raw = []byte(`{"properties": {"title": {"type": "text"}, "tags": {"type": "keyword"}}}`)
			ix.Spec.Aliases = []v1alpha1.IndexName{"changes-read", "changes-new"}
		})

		Eventually(func(g Gomega) {
			info, err := clusterIndex(ctx, "changes")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.GetSettings().GetRefreshInterval().AsDuration()).To(Equal(5 * time.Second))
			g.Expect(info.GetSettings().GetNumberOfReplicas()).To(Equal(int32(1)))
			g.Expect(info.GetShards()).To(HaveLen(2), "a primary and a replica copy")
			g.Expect(info.GetSettings().GetTranslogDurability()).To(Equal(sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC))
			g.Expect(info.GetSettings().GetTranslogSyncInterval().AsDuration()).To(Equal(2 * time.Second))
			g.Expect(info.GetMapping().GetProperties()).To(HaveKey("tags"))
			g.Expect(info.GetMapping().GetProperties()["tags"].GetType()).To(Equal(sluicev1.FieldType_FIELD_TYPE_KEYWORD))
			g.Expect(info.GetAliases()).To(ConsistOf("changes-read", "changes-new"))
		}).WithContext(ctx).Should(Succeed())
		expectReady(ctx, ix)
		Expect(ix.Status.Aliases).To(ConsistOf("changes-read", "changes-new"))

		// An alias moved to another index by someone else (a Reindex's
		// alias swap) is not taken back.
		_, err := sluice.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "changes-v2"})
		Expect(err).NotTo(HaveOccurred())
		_, err = sluice.UpdateAliases(ctx, &sluicev1.UpdateAliasesRequest{Actions: []*sluicev1.AliasAction{
			{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE, Alias: "changes-read", Index: "changes"},
			{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "changes-read", Index: "changes-v2"},
		}})
		Expect(err).NotTo(HaveOccurred())
		update(ctx, ix, func(ix *v1alpha1.Index) {
			ix.Spec.Settings.RefreshInterval = "-1" // trigger a reconcile
			ix.Spec.Replicas = 0                    // a zero value is sent too
		})
		expectReady(ctx, ix)
		Eventually(func(g Gomega) {
			info, err := clusterIndex(ctx, "changes")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.GetSettings().GetNumberOfReplicas()).To(BeZero())
			g.Expect(info.GetShards()).To(HaveLen(1))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func() []string { return aliasesOf(ctx, "changes") }).
			WithTimeout(time.Second).Should(ConsistOf("changes-new"))

		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
		_, err = sluice.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "changes-v2"})
		Expect(err).NotTo(HaveOccurred())
	})

	It("reports a mapping field whose type changed as an invalid spec, and recovers when it is put back", func(ctx SpecContext) {
		ix := &v1alpha1.Index{}
		fromYAML(`
apiVersion: sluice.dev/v1alpha1
kind: Index
metadata: {name: retype}
spec:
  mapping: {properties: {price: {type: double}}}
`, ix)
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)

		update(ctx, ix, func(ix *v1alpha1.Index) {
			ix.Spec.Mapping.Raw = []byte(`{"properties": {"price": {"type": "keyword"}}}`)
		})
		Eventually(func(g Gomega) {
			get(ctx, ix)
			g.Expect(ix.Status.ObservedGeneration).To(Equal(ix.Generation))
			d := condition(ix.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(conditions.ReasonInvalidSpec))
			g.Expect(d.Message).To(ContainSubstring("price (double in the cluster, keyword in the spec)"))
			g.Expect(condition(ix.Status.Conditions, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		}).WithContext(ctx).Should(Succeed())

		update(ctx, ix, func(ix *v1alpha1.Index) {
			ix.Spec.Mapping.Raw = []byte(`{"properties": {"price": {"type": "double"}}}`)
		})
		expectReady(ctx, ix)
		Expect(condition(ix.Status.Conditions, v1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))

		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
	})

	It("adopts an index that already exists", func(ctx SpecContext) {
		created, err := sluice.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "adopted", Aliases: []string{"adopted-a"}})
		Expect(err).NotTo(HaveOccurred())
		ix := &v1alpha1.Index{}
		fromYAML(`
apiVersion: sluice.dev/v1alpha1
kind: Index
metadata: {name: adopted}
spec:
  aliases: [adopted-a, adopted-b]
`, ix)
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		Expect(ix.Status.UUID).To(Equal(created.GetIndex().GetUuid()))
		Expect(aliasesOf(ctx, "adopted")).To(ConsistOf("adopted-a", "adopted-b"))
		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
	})

	DescribeTable("honours the deletion policy",
		func(ctx SpecContext, policy v1alpha1.DeletionPolicy, name string, kept bool) {
			ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
				Spec: v1alpha1.IndexSpec{DeletionPolicy: policy}}
			Expect(k8s.Create(ctx, ix)).To(Succeed())
			expectReady(ctx, ix)
			uuid := ix.Status.UUID

			Expect(k8s.Delete(ctx, ix)).To(Succeed())
			expectGone(ctx, ix)
			info, err := clusterIndex(ctx, name)
			if kept {
				Expect(err).NotTo(HaveOccurred())
				Expect(info.GetUuid()).To(Equal(uuid))
				_, err = sluice.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: name})
				Expect(err).NotTo(HaveOccurred())
			} else {
				Expect(status.Code(err)).To(Equal(codes.NotFound), "GetIndex: %v", err)
			}
		},
		Entry("Delete removes the index", v1alpha1.DeletionPolicyDelete, "policy-delete", false),
		Entry("Retain keeps it", v1alpha1.DeletionPolicyRetain, "policy-retain", true),
	)

	It("creates an index deleted behind its back again, with a new uuid", func(ctx SpecContext) {
		ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "recreated", Namespace: namespace}}
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		old := ix.Status.UUID
		_, err := sluice.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "recreated"})
		Expect(err).NotTo(HaveOccurred())
		// The periodic resync notices; don't wait 30 s for it: touch it.
		update(ctx, ix, func(ix *v1alpha1.Index) { ix.Annotations = map[string]string{"touch": "1"} })
		Eventually(func(g Gomega) {
			info, err := clusterIndex(ctx, "recreated")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.GetUuid()).NotTo(Equal(old))
			g.Expect(get(ctx, ix).(*v1alpha1.Index).Status.UUID).To(Equal(info.GetUuid()))
		}).WithContext(ctx).Should(Succeed())
		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
	})

	It("reports an unreachable cluster in its conditions and keeps retrying", func(ctx SpecContext) {
		op := startOperator(unreachableNamespace, deadAddress())
		DeferCleanup(op.stop)
		ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "nowhere", Namespace: unreachableNamespace}}
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		Eventually(func(g Gomega) {
			get(ctx, ix)
			d := condition(ix.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(conditions.ReasonClusterUnreachable))
			r := condition(ix.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(conditions.ReasonClusterUnreachable))
			p := condition(ix.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(p.Reason).To(Equal(conditions.ReasonCreating))
		}).WithContext(ctx).Should(Succeed())
		Expect(ix.Status.UUID).To(BeEmpty())

		// Nothing was created, so deletion needs no cluster.
		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
	})
})
