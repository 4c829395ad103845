package esapi

import (
	"encoding/json"
	"net/http"
	"time"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// updateByQueryParams are _update_by_query's URL parameters. refresh is
// accepted and has nothing to do: the task refreshes the index before it
// succeeds.
var updateByQueryParams = []string{"wait_for_completion", "requests_per_second", "slices", "max_docs", "conflicts", "refresh"}

// updateByQueryBody is _update_by_query's body. doc_values is Sluice's:
// Elasticsearch's update-by-query re-indexes each document through a
// script, which Sluice lacks; Sluice's sets doc-value fields in place
// (the UpdateByQuery RPC). script is named to be refused with that
// reason.
type updateByQueryBody struct {
	Query     rawJSON         `json:"query"`
	DocValues json.RawMessage `json:"doc_values"`
	MaxDocs   *int64          `json:"max_docs"`
	Conflicts string          `json:"conflicts"`
	Script    json.RawMessage `json:"script"`
}

// updateByQuery is POST /{index}/_update_by_query: an UpdateByQuery task,
// answered when it ends (wait_for_completion, the default) as
// Elasticsearch answers, or at once with its id.
func (a *API) updateByQuery(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var body updateByQueryBody
	if len(b) > 0 {
		if err := decodeStrict(b, &body, "update-by-query body (Sluice's takes query, doc_values, max_docs and conflicts)"); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case body.Script != nil:
		return 0, nil, badRequest(`scripts are not supported by Sluice: _update_by_query sets doc-value fields in place, given as "doc_values": {"field": value, ...} (fields mapped "index": false, "doc_values": true)`)
	case isNull(body.DocValues):
		return 0, nil, validationError(`doc_values is missing: Sluice's _update_by_query sets doc-value fields in place, given as "doc_values": {"field": value, ...}`)
	}
	req := &sluicev1.UpdateByQueryRequest{Index: r.PathValue("index"), DocValues: body.DocValues}
	if len(body.Query) > 0 {
		if req.Query, err = parseQueryJSON(body.Query); err != nil {
			return 0, nil, err
		}
	}
	if req.Conflicts, req.MaxDocs, req.RequestsPerSecond, req.Slices, err = taskOptions(r, body.Conflicts, body.MaxDocs); err != nil {
		return 0, nil, err
	}
	if req.WaitForCompletion, err = r.boolParam("wait_for_completion", true); err != nil {
		return 0, nil, err
	}
	if _, err := r.boolParam("refresh", false); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	resp, err := a.c.UpdateByQuery(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, req.Index)
	}
	t := resp.GetTask()
	if !req.WaitForCompletion {
		return http.StatusOK, map[string]any{"task": t.GetId()}, nil
	}
	out, code := reindexResponse(t)
	out["took"] = time.Since(start).Milliseconds()
	return code, out, nil
}
