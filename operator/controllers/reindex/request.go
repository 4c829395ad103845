package reindex

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-search/sluice/esjson"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/indexspec"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Request builds the ReindexRequest a Reindex resource asks for.
func Request(rx *v1alpha1.Reindex) (*sluicev1.ReindexRequest, error) {
	spec := &rx.Spec
	req := &sluicev1.ReindexRequest{
		Source:            &sluicev1.ReindexSource{Index: string(spec.Source.Index)},
		Dest:              &sluicev1.ReindexDestination{Index: string(spec.Destination.Index), Routing: spec.Destination.Routing},
		RequestsPerSecond: requestsPerSecond(spec),
	}
	if spec.Source.Query != nil {
		q, err := esjson.ParseQuery(spec.Source.Query.Raw)
		if err != nil {
			return nil, fmt.Errorf("source.query: %w", err)
		}
		req.Source.Query = q
	}
	if c := spec.Destination.Create; c != nil {
		s, err := indexspec.Settings(c)
		if err != nil {
			return nil, fmt.Errorf("destination.create: %w", err)
		}
		m, err := indexspec.Mapping(c)
		if err != nil {
			return nil, fmt.Errorf("destination.create: %w", err)
		}
		req.Dest.Settings, req.Dest.Mapping = s, m
	}
	if sl := spec.Slices; sl != nil {
		switch {
		case sl.Type == intstr.Int:
			req.Slices = sl.IntVal
		case sl.StrVal != "auto":
			return nil, fmt.Errorf("slices: want a number or \"auto\", got %q", sl.StrVal)
		}
	}
	switch spec.Mode {
	case v1alpha1.ReindexModeAuto, "":
		req.Mode = sluicev1.ReindexMode_REINDEX_MODE_AUTO
	case v1alpha1.ReindexModeLocal:
		req.Mode = sluicev1.ReindexMode_REINDEX_MODE_LOCAL
	case v1alpha1.ReindexModeRemote:
		req.Mode = sluicev1.ReindexMode_REINDEX_MODE_REMOTE
	case v1alpha1.ReindexModeBaseline:
		req.Mode = sluicev1.ReindexMode_REINDEX_MODE_BASELINE
	default:
		return nil, fmt.Errorf("mode: unknown value %q", spec.Mode)
	}
	switch spec.CopyMethod {
	case v1alpha1.ReindexCopyAuto, "":
		req.CopyMethod = sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_AUTO
	case v1alpha1.ReindexCopySegments:
		req.CopyMethod = sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS
	case v1alpha1.ReindexCopyDocuments:
		req.CopyMethod = sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS
	default:
		return nil, fmt.Errorf("copyMethod: unknown value %q", spec.CopyMethod)
	}
	switch spec.Conflicts {
	case v1alpha1.ConflictsAbort, "":
		req.Conflicts = sluicev1.ConflictPolicy_CONFLICT_POLICY_ABORT
	case v1alpha1.ConflictsProceed:
		req.Conflicts = sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED
	default:
		return nil, fmt.Errorf("conflicts: unknown value %q", spec.Conflicts)
	}
	if spec.MaxDocs != nil {
		req.MaxDocs = *spec.MaxDocs
	}
	if spec.SwapAlias != nil {
		req.SwapAlias = string(*spec.SwapAlias)
	}
	return req, nil
}

// requestsPerSecond is the throttle the spec asks for; 0 is unlimited.
func requestsPerSecond(spec *v1alpha1.ReindexSpec) float32 {
	if spec.RequestsPerSecond == nil {
		return 0
	}
	return float32(*spec.RequestsPerSecond)
}
