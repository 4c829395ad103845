package reindex

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-search/sluice/client"
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
	// The same words, read the same way, as the CLI's --mode, --copy and
	// --proceed-on-conflicts; the API server's enum checks come first.
	var err error
	if req.Mode, err = client.ParseEnum[sluicev1.ReindexMode]("mode", orDefault(string(spec.Mode), "auto")); err != nil {
		return nil, err
	}
	if req.CopyMethod, err = client.ParseEnum[sluicev1.ReindexCopyMethod]("copyMethod", orDefault(string(spec.CopyMethod), "auto")); err != nil {
		return nil, err
	}
	if req.Conflicts, err = client.ParseEnum[sluicev1.ConflictPolicy]("conflicts", orDefault(string(spec.Conflicts), "abort")); err != nil {
		return nil, err
	}
	if spec.MaxDocs != nil {
		req.MaxDocs = *spec.MaxDocs
	}
	if spec.SwapAlias != nil {
		req.SwapAlias = string(*spec.SwapAlias)
	}
	return req, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// requestsPerSecond is the throttle the spec asks for; 0 is unlimited.
func requestsPerSecond(spec *v1alpha1.ReindexSpec) float32 {
	if spec.RequestsPerSecond == nil {
		return 0
	}
	return float32(*spec.RequestsPerSecond)
}
