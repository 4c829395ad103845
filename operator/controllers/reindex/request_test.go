package reindex

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func ptr[T any](v T) *T { return &v }

func TestRequest(t *testing.T) {
	base := func() *v1alpha1.Reindex {
		return &v1alpha1.Reindex{Spec: v1alpha1.ReindexSpec{
			Source:      v1alpha1.ReindexSource{Index: "a"},
			Destination: v1alpha1.ReindexDestination{Index: "b"},
		}}
	}
	full := base()
	full.Spec.Source.Query = &runtime.RawExtension{Raw: []byte(`{"term": {"published": true}}`)}
	full.Spec.Destination.Create = &v1alpha1.IndexParameters{Shards: 4}
	full.Spec.Slices = ptr(intstr.FromInt32(8))
	full.Spec.RequestsPerSecond = ptr[int32](500)
	full.Spec.Mode = v1alpha1.ReindexModeLocal
	full.Spec.CopyMethod = v1alpha1.ReindexCopyDocuments
	full.Spec.Conflicts = v1alpha1.ConflictsProceed
	full.Spec.MaxDocs = ptr[int64](10)
	full.Spec.SwapAlias = ptr[v1alpha1.IndexName]("live")
	full.Spec.Destination.Routing = "=tenant-7"
	auto := base()
	auto.Spec.Slices = ptr(intstr.FromString("auto"))

	tests := []struct {
		name string
		in   *v1alpha1.Reindex
		want *sluicev1.ReindexRequest
	}{
		{"defaults", base(), &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "a"}, Dest: &sluicev1.ReindexDestination{Index: "b"},
			Mode: sluicev1.ReindexMode_REINDEX_MODE_AUTO, Conflicts: sluicev1.ConflictPolicy_CONFLICT_POLICY_ABORT,
			CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_AUTO}},
		{"slices auto is 0", auto, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "a"}, Dest: &sluicev1.ReindexDestination{Index: "b"},
			Mode: sluicev1.ReindexMode_REINDEX_MODE_AUTO, Conflicts: sluicev1.ConflictPolicy_CONFLICT_POLICY_ABORT,
			CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_AUTO}},
		{"everything", full, &sluicev1.ReindexRequest{
			Source: &sluicev1.ReindexSource{Index: "a", Query: &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "published",
				Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: true}}}}}},
			Dest:   &sluicev1.ReindexDestination{Index: "b", Settings: &sluicev1.IndexSettings{NumberOfShards: 4}, Routing: "=tenant-7"},
			Slices: 8, RequestsPerSecond: 500, Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL,
			CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS,
			Conflicts:  sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED, MaxDocs: 10, SwapAlias: "live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Request(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}

	bad := base()
	bad.Spec.Source.Query = &runtime.RawExtension{Raw: []byte(`{"fuzzy": {"a": "x"}}`)}
	if _, err := Request(bad); err == nil || !strings.HasPrefix(err.Error(), "source.query: invalid query: fuzzy: unknown query [fuzzy]") {
		t.Errorf("bad query: err = %v, want one naming source.query and the query's path", err)
	}
	bad = base()
	bad.Spec.Destination.Create = &v1alpha1.IndexParameters{Mapping: &runtime.RawExtension{Raw: []byte(`{"properties": {"a": {"type": "text", "fields": {}}}}`)}}
	if _, err := Request(bad); err == nil || !strings.HasPrefix(err.Error(), "destination.create: mapping: invalid mapping: properties.a.fields: unknown parameter [fields]") {
		t.Errorf("bad mapping: err = %v, want one naming destination.create.mapping and the field", err)
	}
	// A wrong word is said as the CLI says it for --mode (client.ParseEnum).
	bad = base()
	bad.Spec.Mode = "fast"
	if _, err := Request(bad); err == nil || err.Error() != `mode must be auto, local, remote or baseline, got "fast"` {
		t.Errorf("bad mode: err = %v", err)
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		phase v1alpha1.ReindexPhase
		c     v1alpha1.ReindexCounts
		want  string
	}{
		{v1alpha1.ReindexPending, v1alpha1.ReindexCounts{}, "0%"},
		{v1alpha1.ReindexRunning, v1alpha1.ReindexCounts{Total: 200, Created: 50, Updated: 10, VersionConflicts: 4, Failures: 2}, "33%"},
		{v1alpha1.ReindexRunning, v1alpha1.ReindexCounts{Total: 10, Created: 12}, "100%"},
		{v1alpha1.ReindexSucceeded, v1alpha1.ReindexCounts{}, "100%"},
	}
	for _, tt := range tests {
		if got := progress(tt.phase, tt.c); got != tt.want {
			t.Errorf("progress(%s, %+v) = %s, want %s", tt.phase, tt.c, got, tt.want)
		}
	}
}
