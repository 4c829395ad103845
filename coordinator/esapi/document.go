package esapi

import (
	"net/http"
	"strconv"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// getParams are the document reads' URL parameters.
var getParams = []string{"routing", "realtime", "refresh", "preference", "_source"}

func (a *API) indexDoc(r *request) (int, any, error) {
	action := sluicev1.BulkAction_BULK_ACTION_INDEX
	switch op := r.param("op_type"); op {
	case "", "index":
	case "create":
		action = sluicev1.BulkAction_BULK_ACTION_CREATE
	default:
		return 0, nil, badRequest("opType must be 'create' or 'index', found: [%s]", op)
	}
	return a.writeDoc(r, action)
}

func (a *API) createDoc(r *request) (int, any, error) {
	return a.writeDoc(r, sluicev1.BulkAction_BULK_ACTION_CREATE)
}

func (a *API) deleteDoc(r *request) (int, any, error) {
	return a.writeDoc(r, sluicev1.BulkAction_BULK_ACTION_DELETE)
}

// writeDoc is a single-document write: a bulk of one item, answered as
// Elasticsearch answers the document APIs.
func (a *API) writeDoc(r *request, action sluicev1.BulkAction) (int, any, error) {
	req, err := writeRequest(r)
	if err != nil {
		return 0, nil, err
	}
	item := &sluicev1.BulkItem{Action: action, Id: r.PathValue("id"), Routing: r.param("routing")}
	if e := ifSeqNoParams(r, item); e != nil {
		return 0, nil, e
	}
	if action != sluicev1.BulkAction_BULK_ACTION_DELETE {
		if item.Source, err = r.body(); err != nil {
			return 0, nil, err
		}
		if len(item.Source) == 0 {
			return 0, nil, validationError("source is missing")
		}
	}
	req.Items = []*sluicev1.BulkItem{item}
	return a.writeItem(r, req)
}

// writeItem sends a bulk of one item and answers with the item's object,
// as the document APIs answer.
func (a *API) writeItem(r *request, req *sluicev1.BulkRequest) (int, any, error) {
	resp, err := a.c.Bulk(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindDocument, req.Index)
	}
	res := resp.GetItems()[0]
	st, _, e := itemOutcome(res)
	if e != nil {
		return 0, nil, e
	}
	// The item's object is the document API's answer.
	return st, appendResult(nil, res), nil
}

// getRequest reads a document read's parameters. realtime (the default in
// Elasticsearch) reads the latest write: Sluice refreshes the shard first,
// as its Get cannot read unrefreshed writes otherwise; realtime=false reads
// the latest refresh, at no cost.
func getRequest(r *request) (*sluicev1.GetRequest, bool, error) {
	realtime, err := r.boolParam("realtime", true)
	if err != nil {
		return nil, false, err
	}
	refresh, err := r.boolParam("refresh", false)
	if err != nil {
		return nil, false, err
	}
	source, err := r.boolParam("_source", true)
	if err != nil {
		return nil, false, badRequest("_source: Sluice takes true or false (no includes or excludes on document reads)")
	}
	return &sluicev1.GetRequest{Index: r.PathValue("index"), Id: r.PathValue("id"), Routing: r.param("routing"),
		Refresh: realtime || refresh}, source, nil
}

func (a *API) getDoc(r *request) (int, any, error) {
	req, source, err := getRequest(r)
	if err != nil {
		return 0, nil, err
	}
	resp, err := a.c.Get(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, req.Index)
	}
	index := resp.GetIndex()
	if index == "" {
		index = req.Index
	}
	b := append([]byte(`{"_index":`), appendString(nil, index)...)
	b = append(b, `,"_id":`...)
	b = appendString(b, req.Id)
	if !resp.GetFound() {
		return http.StatusNotFound, append(b, `,"found":false}`...), nil
	}
	// A document of a segment written before versions were stored has
	// none (seq_no -2): left out rather than answered as unassigned,
	// which Elasticsearch only says of a missing document.
	if seq := resp.GetSeqNo(); seq >= 0 && resp.GetPrimaryTerm() > 0 {
		b = append(b, `,"_seq_no":`...)
		b = strconv.AppendInt(b, seq, 10)
		b = append(b, `,"_primary_term":`...)
		b = strconv.AppendInt(b, resp.GetPrimaryTerm(), 10)
	}
	if rt := resp.GetRouting(); rt != "" {
		b = append(b, `,"_routing":`...)
		b = appendString(b, rt)
	}
	b = append(b, `,"found":true`...)
	if source {
		b = append(b, `,"_source":`...)
		b = append(b, resp.GetSource()...)
	}
	return http.StatusOK, append(b, '}'), nil
}

func (a *API) getSource(r *request) (int, any, error) {
	req, source, err := getRequest(r)
	if err != nil {
		return 0, nil, err
	}
	if !source {
		return 0, nil, validationError("fetching source can not be disabled")
	}
	resp, err := a.c.Get(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, req.Index)
	}
	if !resp.GetFound() {
		return 0, nil, &esError{status: http.StatusNotFound, typ: "resource_not_found_exception",
			reason: "Document not found [" + req.Index + "]/[" + req.Id + "]"}
	}
	return http.StatusOK, resp.GetSource(), nil
}
