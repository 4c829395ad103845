package reindex

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine/mapping"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// UpdateByQuery validates an update-by-query and stores it as a task that
// the task runner runs like a LOCAL document reindex of the index into
// itself — the same slices, throttle, cancel, checkpoints and progress —
// except that each slice sets the fields in place on the matching
// documents of its own shard (node/reindex) instead of copying them, with
// no round trip per document. Verification only refreshes the index.
func (m *Manager) UpdateByQuery(ctx context.Context, req *sluicev1.UpdateByQueryRequest) (*sluicev1.Task, error) {
	switch {
	case req.GetIndex() == "":
		return nil, state.InvalidFieldf("index", "index is required")
	case len(req.GetDocValues()) == 0:
		return nil, state.InvalidFieldf("doc_values", "doc_values (the fields to set) is required")
	case req.GetSlices() < 0 || req.GetSlices() > MaxSlices:
		return nil, state.InvalidFieldf("slices", "slices must be between 0 (auto) and %d, got %d", MaxSlices, req.GetSlices())
	case req.GetMaxDocs() < 0:
		return nil, state.InvalidFieldf("max_docs", "max_docs must be >= 0, got %d", req.GetMaxDocs())
	}
	if err := checkRate(req.GetRequestsPerSecond()); err != nil {
		return nil, err
	}
	st, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	x, err := st.ResolveOne(req.GetIndex())
	if err != nil {
		return nil, err
	}
	// The query and the fields are checked against the mapping now rather
	// than failing the task on its first slice.
	mm, err := querydsl.MappingFromProto(x.Meta.GetMapping())
	if err != nil {
		return nil, err
	}
	if q := req.GetQuery(); q != nil {
		if _, err := (querydsl.Compiler{Mapping: mm, Strict: true}).Compile(q); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
	}
	p, err := mapping.NewParser(mm)
	if err != nil {
		return nil, err
	}
	if _, err := p.ParseDocValuesUpdate(req.GetDocValues()); err != nil {
		return nil, state.InvalidFieldf("doc_values", "doc_values: %v", err)
	}
	rreq := &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: x.Name(), Query: req.GetQuery()},
		Dest: &sluicev1.ReindexDestination{Index: x.Name()}, Slices: req.GetSlices(), RequestsPerSecond: req.GetRequestsPerSecond(),
		Conflicts: req.GetConflicts(), MaxDocs: req.GetMaxDocs(), Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL,
		WaitForCompletion: req.GetWaitForCompletion()}
	plan := &statev1.ReindexPlan{SourceIndex: x.Name(), SourceUuid: x.UUID(), DestIndex: x.Name(), DestUuid: x.UUID(),
		Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL, Colocatable: true, DestDocsAtStart: -1,
		CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS, UpdateDocValues: req.GetDocValues()}
	plan.Slices = planSlices(paramsOf(x.Meta.GetSettings()).Shards, int(req.GetSlices()), req.GetMaxDocs())
	return m.accept(ctx, uuid.NewString(), rreq, plan, "update_by_query", fmt.Sprintf("update-by-query [%s] set %s", x.Name(), req.GetDocValues()))
}
