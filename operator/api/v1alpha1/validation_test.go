package v1alpha1_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/crdtest"
	samplegen "github.com/sluice-search/sluice/sample"
)

// sample reads one manifest of deploy/samples, the same files users apply.
func sample(name string) *unstructured.Unstructured {
	GinkgoHelper()
	root, err := crdtest.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "deploy", "samples", name))
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
	obj.SetNamespace(namespace)
	return obj
}

// fresh gives obj a unique name so entries do not collide.
func fresh(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetGenerateName(obj.GetName() + "-")
	obj.SetName("")
	return obj
}

// set changes one field; value must be JSON-like (int64, not int).
func set(obj *unstructured.Unstructured, value any, path ...string) {
	GinkgoHelper()
	if value == nil {
		unstructured.RemoveNestedField(obj.Object, path...)
		return
	}
	Expect(unstructured.SetNestedField(obj.Object, value, path...)).To(Succeed())
}

// expectInvalid checks that err is the API server's Invalid error naming
// field, with a message containing msg.
func expectInvalid(err error, field, msg string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server accepted it")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	var status apierrors.APIStatus
	Expect(errors.As(err, &status)).To(BeTrue())
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	Fail("no cause for field " + field + " with message containing '" + msg + "' in: " + err.Error() +
		" (fields: " + strings.Join(fields, ", ") + ")")
}

var _ = Describe("deploy/samples", func() {
	DescribeTable("are accepted as they are",
		func(ctx SpecContext, file string) {
			Expect(k8sClient.Create(ctx, fresh(sample(file)))).To(Succeed())
		},
		Entry(nil, "index.yaml"),
		Entry(nil, "index-minimal.yaml"),
		Entry(nil, "reindex.yaml"),
	)

	It("keep mapping and query as raw JSON in the typed API", func(ctx SpecContext) {
		idx := fresh(sample("index.yaml"))
		Expect(k8sClient.Create(ctx, idx)).To(Succeed())
		var got v1alpha1.Index
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(idx), &got)).To(Succeed())
		Expect(got.Spec.Mapping).NotTo(BeNil())
		// The mapping of `sluice sample products`, so the sample loads into it.
		products, err := samplegen.KindNamed("products")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.Mapping.Raw).To(MatchJSON(products.Mapping))

		rx := fresh(sample("reindex.yaml"))
		Expect(k8sClient.Create(ctx, rx)).To(Succeed())
		var gotRx v1alpha1.Reindex
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rx), &gotRx)).To(Succeed())
		Expect(gotRx.Spec.Source.Query.Raw).To(MatchJSON(`{"term": {"published": true}}`))
	})

	It("get the documented defaults", func(ctx SpecContext) {
		idx := fresh(sample("index-minimal.yaml"))
		Expect(k8sClient.Create(ctx, idx)).To(Succeed())
		var got v1alpha1.Index
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(idx), &got)).To(Succeed())
		Expect(got.Spec.Shards).To(Equal(int32(1)))
		Expect(got.Spec.Replicas).To(Equal(int32(0)))
		Expect(got.Spec.RoutingShards).To(BeNil())
		Expect(got.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyDelete))
		Expect(got.Spec.Settings.RefreshInterval).To(Equal("1s"))
		Expect(got.Spec.Settings.Translog.Durability).To(Equal(v1alpha1.TranslogDurabilityRequest))
		Expect(got.ClusterIndexName()).To(Equal(got.Name))

		rx := fresh(sample("reindex.yaml"))
		for _, f := range []string{"slices", "mode", "conflicts"} {
			set(rx, nil, "spec", f)
		}
		Expect(k8sClient.Create(ctx, rx)).To(Succeed())
		var gotRx v1alpha1.Reindex
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rx), &gotRx)).To(Succeed())
		Expect(gotRx.Spec.Slices.String()).To(Equal("auto"))
		Expect(gotRx.Spec.Mode).To(Equal(v1alpha1.ReindexModeAuto))
		Expect(gotRx.Spec.Conflicts).To(Equal(v1alpha1.ConflictsAbort))
		Expect(gotRx.Spec.Destination.Create.Replicas).To(Equal(int32(0)))
	})
})

var _ = Describe("creating", func() {
	// Each entry breaks one rule of a valid sample; the API server must
	// refuse it and name the offending field.
	DescribeTable("an invalid resource is refused, naming the field",
		func(ctx SpecContext, file string, field, msg string, value any, path ...string) {
			obj := fresh(sample(file))
			set(obj, value, path...)
			expectInvalid(k8sClient.Create(ctx, obj), field, msg)
		},
		Entry("index name with upper case", "index.yaml", "spec.indexName", "lowercase", "Products", "spec", "indexName"),
		Entry("index name with non-ASCII upper case", "index.yaml", "spec.indexName", "lowercase", "produits-été-À", "spec", "indexName"),
		Entry("index name starting with _", "index.yaml", "spec.indexName", "must not start", "_products", "spec", "indexName"),
		Entry("index name starting with -", "index.yaml", "spec.indexName", "must not start", "-products", "spec", "indexName"),
		Entry("index name starting with +", "index.yaml", "spec.indexName", "must not start", "+products", "spec", "indexName"),
		Entry("index name with *", "index.yaml", "spec.indexName", "must not contain", "prod*", "spec", "indexName"),
		Entry("index name with a space", "index.yaml", "spec.indexName", "must not contain", "my products", "spec", "indexName"),
		Entry("index name with a backslash", "index.yaml", "spec.indexName", "must not contain", `a\b`, "spec", "indexName"),
		Entry("index name with a colon", "index.yaml", "spec.indexName", "must not contain", "cluster:products", "spec", "indexName"),
		Entry("index name with a double quote", "index.yaml", "spec.indexName", "must not contain", `a"b`, "spec", "indexName"),
		Entry("index name .", "index.yaml", "spec.indexName", "must not be", ".", "spec", "indexName"),
		Entry("index name ..", "index.yaml", "spec.indexName", "must not be", "..", "spec", "indexName"),
		Entry("index name of 256 characters", "index.yaml", "spec.indexName", "Too long", strings.Repeat("a", 256), "spec", "indexName"),
		Entry("index name of 255 characters but 510 bytes", "index.yaml", "spec.indexName", "255 bytes", strings.Repeat("é", 255), "spec", "indexName"),
		Entry("empty index name", "index.yaml", "spec.indexName", "at least 1", "", "spec", "indexName"),
		Entry("bad alias", "index.yaml", "spec.aliases[0]", "lowercase", []any{"Products"}, "spec", "aliases"),
		Entry("duplicate alias", "index.yaml", "spec.aliases[1]", "Duplicate", []any{"a", "a"}, "spec", "aliases"),
		Entry("zero shards", "index.yaml", "spec.shards", "greater than or equal to 1", int64(0), "spec", "shards"),
		Entry("too many shards", "index.yaml", "spec.shards", "less than or equal to 1024", int64(1025), "spec", "shards"),
		Entry("routing shards not a multiple of shards", "index.yaml", "spec.routingShards", "multiple of shards", int64(17), "spec", "routingShards"),
		Entry("too many replicas", "index.yaml", "spec.replicas", "less than or equal to 32", int64(33), "spec", "replicas"),
		Entry("negative replicas", "index.yaml", "spec.replicas", "greater than or equal to 0", int64(-1), "spec", "replicas"),
		Entry("bad refresh interval", "index.yaml", "spec.settings.refreshInterval", "should match", "soon", "spec", "settings", "refreshInterval"),
		Entry("zero merge throttle", "index.yaml", "spec.settings.mergeThrottleMBPerSec", "greater than or equal to 1", int64(0), "spec", "settings", "mergeThrottleMBPerSec"),
		Entry("unknown translog durability", "index.yaml", "spec.settings.translog.durability", "Unsupported value", "never", "spec", "settings", "translog", "durability"),
		Entry("sync interval with request durability", "index.yaml", "spec.settings.translog.syncInterval", "durability async", "5s", "spec", "settings", "translog", "syncInterval"),
		Entry("mapping that is not an object", "index.yaml", "spec.mapping", "must be of type object", "text", "spec", "mapping"),
		Entry("unknown deletion policy", "index.yaml", "spec.deletionPolicy", "Unsupported value", "Orphan", "spec", "deletionPolicy"),

		Entry("source == destination", "reindex.yaml", "spec.destination.index", "must differ from source.index", "products-v1", "spec", "destination", "index"),
		Entry("no source index", "reindex.yaml", "spec.source.index", "Required value", nil, "spec", "source", "index"),
		Entry("bad source index name", "reindex.yaml", "spec.source.index", "must not contain", "a,b", "spec", "source", "index"),
		Entry("bad destination index name", "reindex.yaml", "spec.destination.index", "lowercase", "Products-V2", "spec", "destination", "index"),
		Entry("query that is not an object", "reindex.yaml", "spec.source.query", "must be of type object", "published:true", "spec", "source", "query"),
		Entry("negative requestsPerSecond", "reindex.yaml", "spec.requestsPerSecond", "greater than or equal to 0", int64(-1), "spec", "requestsPerSecond"),
		Entry("zero slices", "reindex.yaml", "spec.slices", "from 1 to 1024", int64(0), "spec", "slices"),
		Entry("slices neither a number nor auto", "reindex.yaml", "spec.slices", "from 1 to 1024", "many", "spec", "slices"),
		Entry("unknown mode", "reindex.yaml", "spec.mode", "Unsupported value", "fast", "spec", "mode"),
		Entry("unknown conflicts policy", "reindex.yaml", "spec.conflicts", "Unsupported value", "ignore", "spec", "conflicts"),
		Entry("zero maxDocs", "reindex.yaml", "spec.maxDocs", "greater than or equal to 1", int64(0), "spec", "maxDocs"),
		Entry("swapAlias naming the destination", "reindex.yaml", "spec.swapAlias", "must differ", "products-v2", "spec", "swapAlias"),
		Entry("too many replicas in the created destination", "reindex.yaml", "spec.destination.create.replicas", "less than or equal to 32", int64(33), "spec", "destination", "create", "replicas"),
		Entry("created destination's routing shards not a multiple", "reindex.yaml", "spec.destination.create.routingShards", "multiple of shards", int64(6), "spec", "destination", "create", "routingShards"),
		Entry("destination routing not keep, discard or =value", "reindex.yaml", "spec.destination.routing", "keep, discard or =value", "tenant", "spec", "destination", "routing"),
		Entry("destination routing = without a value", "reindex.yaml", "spec.destination.routing", "keep, discard or =value", "=", "spec", "destination", "routing"),
	)
})

var _ = Describe("updating", func() {
	// create stores a valid sample and returns the stored object to edit.
	create := func(ctx SpecContext, file string, edits ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		GinkgoHelper()
		obj := fresh(sample(file))
		for _, e := range edits {
			e(obj)
		}
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		return obj
	}

	DescribeTable("a change to an immutable field is refused, naming the field",
		func(ctx SpecContext, file string, field, msg string, value any, path ...string) {
			obj := create(ctx, file, func(o *unstructured.Unstructured) {
				if o.GetKind() == "Index" {
					set(o, "products-clone", "spec", "indexName")
				}
			})
			set(obj, value, path...)
			expectInvalid(k8sClient.Update(ctx, obj), field, msg)
		},
		Entry("shards", "index.yaml", "spec.shards", "immutable", int64(4), "spec", "shards"),
		Entry("routing shards", "index.yaml", "spec.routingShards", "immutable", int64(32), "spec", "routingShards"),
		Entry("routing shards removed", "index.yaml", "spec.routingShards", "immutable", nil, "spec", "routingShards"),
		Entry("index name", "index.yaml", "spec.indexName", "immutable", "products-other", "spec", "indexName"),
		Entry("index name removed", "index.yaml", "spec.indexName", "immutable", nil, "spec", "indexName"),
		Entry("reindex source", "reindex.yaml", "spec.source", "immutable", "products-v0", "spec", "source", "index"),
		Entry("reindex query", "reindex.yaml", "spec.source", "immutable", false, "spec", "source", "query", "term", "published"),
		Entry("reindex destination", "reindex.yaml", "spec.destination", "immutable", "products-v3", "spec", "destination", "index"),
		Entry("reindex slices", "reindex.yaml", "spec.slices", "immutable", int64(4), "spec", "slices"),
		Entry("reindex mode", "reindex.yaml", "spec.mode", "immutable", "remote", "spec", "mode"),
		Entry("reindex swapAlias", "reindex.yaml", "spec.swapAlias", "immutable", "catalog", "spec", "swapAlias"),
		Entry("reindex swapAlias removed", "reindex.yaml", "spec.swapAlias", "immutable", nil, "spec", "swapAlias"),
		Entry("reindex maxDocs added", "reindex.yaml", "spec.maxDocs", "immutable", int64(10), "spec", "maxDocs"),
	)

	It("adding routing shards to an index that had none is refused", func(ctx SpecContext) {
		obj := create(ctx, "index.yaml", func(o *unstructured.Unstructured) { set(o, nil, "spec", "routingShards") })
		set(obj, int64(16), "spec", "routingShards")
		expectInvalid(k8sClient.Update(ctx, obj), "spec.routingShards", "immutable")
	})

	DescribeTable("a change to a mutable field is accepted",
		func(ctx SpecContext, file string, value any, path ...string) {
			obj := create(ctx, file)
			set(obj, value, path...)
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
		},
		Entry("replicas", "index.yaml", int64(2), "spec", "replicas"),
		Entry("refresh interval", "index.yaml", "-1", "spec", "settings", "refreshInterval"),
		Entry("merge throttle", "index.yaml", int64(200), "spec", "settings", "mergeThrottleMBPerSec"),
		Entry("translog durability", "index.yaml", "async", "spec", "settings", "translog", "durability"),
		Entry("aliases", "index.yaml", []any{"products", "catalog"}, "spec", "aliases"),
		Entry("mapping", "index.yaml", map[string]any{"properties": map[string]any{"color": map[string]any{"type": "keyword"}}}, "spec", "mapping"),
		Entry("deletion policy", "index.yaml", "Delete", "spec", "deletionPolicy"),
		Entry("reindex rethrottle", "reindex.yaml", int64(500), "spec", "requestsPerSecond"),
	)

	It("status is written through the status subresource only", func(ctx SpecContext) {
		obj := create(ctx, "reindex.yaml")
		var rx v1alpha1.Reindex
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		Expect(k8sClient.Get(ctx, key, &rx)).To(Succeed())

		rx.Status = v1alpha1.ReindexStatus{
			ObservedGeneration: rx.Generation,
			Phase:              v1alpha1.ReindexRunning,
			TaskID:             "node-1:42",
			ReindexCounts:      v1alpha1.ReindexCounts{Total: 1000, Created: 420},
			Progress:           "42%",
			DocsPerSecond:      12000,
			Slices: []v1alpha1.ReindexSliceStatus{
				{ID: 0, ReindexCounts: v1alpha1.ReindexCounts{Total: 500, Created: 300}},
				{ID: 1, ReindexCounts: v1alpha1.ReindexCounts{Total: 500, Created: 120}},
			},
		}
		Expect(k8sClient.Status().Update(ctx, &rx)).To(Succeed())

		var got v1alpha1.Reindex
		Expect(k8sClient.Get(ctx, key, &got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal(v1alpha1.ReindexRunning))
		Expect(got.Status.Slices).To(HaveLen(2))
		Expect(got.Status.Created).To(Equal(int64(420)))

		// A main-resource update does not touch status.
		got.Status.Phase = v1alpha1.ReindexSucceeded
		Expect(k8sClient.Update(ctx, &got)).To(Succeed())
		Expect(k8sClient.Get(ctx, key, &got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal(v1alpha1.ReindexRunning))

		// The phase is an enum.
		got.Status.Phase = "Paused"
		expectInvalid(k8sClient.Status().Update(ctx, &got), "status.phase", "Unsupported value")
	})
})
