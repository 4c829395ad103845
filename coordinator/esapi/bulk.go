package esapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// bulkParams are _bulk's URL parameters.
var bulkParams = []string{"refresh", "routing", "timeout", "wait_for_active_shards"}

// writeParams are the single-document writes' URL parameters.
var writeParams = []string{"refresh", "routing", "timeout", "wait_for_active_shards", "if_seq_no", "if_primary_term"}

// bulkMeta is an action line's metadata. The fields after IfPrimaryTerm
// are Elasticsearch's that Sluice lacks: named so that they are refused
// per item with a reason, where an unknown one fails the request.
type bulkMeta struct {
	Index   string `json:"_index"`
	ID      string `json:"_id"`
	Routing string `json:"routing"`
	// Optimistic concurrency: the item applies only to the document with
	// this version (the cluster checks both or neither is set).
	IfSeqNo       json.RawMessage `json:"if_seq_no"`
	IfPrimaryTerm json.RawMessage `json:"if_primary_term"`

	Version          json.RawMessage `json:"version"`
	VersionType      json.RawMessage `json:"version_type"`
	Pipeline         json.RawMessage `json:"pipeline"`
	RequireAlias     json.RawMessage `json:"require_alias"`
	DynamicTemplates json.RawMessage `json:"dynamic_templates"`
	// RetryOnConflict is an option of update items (updateParams).
	RetryOnConflict json.RawMessage `json:"retry_on_conflict"`
	Source          json.RawMessage `json:"_source"`
}

// unsupported names the first metadata Sluice lacks, and why.
func (m *bulkMeta) unsupported() string {
	switch {
	case m.Version != nil || m.VersionType != nil:
		return "external versions (version, version_type) are not supported by Sluice: use if_seq_no and if_primary_term"
	case m.Pipeline != nil:
		return "ingest pipelines are not supported by Sluice"
	case m.RequireAlias != nil:
		return "require_alias is not supported by Sluice"
	case m.DynamicTemplates != nil:
		return "dynamic templates are not supported by Sluice"
	case m.Source != nil:
		return "returning the updated _source is not supported by Sluice"
	}
	return ""
}

type bulkLine struct {
	Index  *bulkMeta `json:"index"`
	Create *bulkMeta `json:"create"`
	Delete *bulkMeta `json:"delete"`
	Update *bulkMeta `json:"update"`
}

// bulkOp is one operation of an NDJSON bulk body: an item for the
// cluster, or one refused here (refused != nil).
type bulkOp struct {
	action  string // index, create, delete, update
	item    *sluicev1.BulkItem
	refused *esError
}

// parseBulk reads an NDJSON bulk body. Sources pass through as the bytes
// of their lines (the body's own memory; never decoded here). A line that
// is not an action, or an action without its source, fails the whole
// request, as in Elasticsearch; metadata Sluice lacks fails its item.
func parseBulk(body []byte, defaultIndex, defaultRouting string) ([]bulkOp, error) {
	// Two lines an operation, mostly.
	ops := make([]bulkOp, 0, bytes.Count(body, []byte{'\n'})/2+1)
	lineNo := 0
	lastIndex := ""
	next := func() ([]byte, bool) {
		for len(body) > 0 {
			lineNo++
			line := body
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				line, body = body[:i], body[i+1:]
			} else {
				body = nil
			}
			if len(bytes.TrimSpace(line)) > 0 {
				return line, true
			}
		}
		return nil, false
	}
	for {
		line, ok := next()
		if !ok {
			return ops, nil
		}
		actionLine := lineNo
		action, meta, err := readActionLine(line, actionLine, &lastIndex)
		if err != nil {
			return nil, err
		}
		op := bulkOp{action: action}
		index := meta.Index
		if index == "" {
			index = defaultIndex
		}
		routing := meta.Routing
		if routing == "" {
			routing = defaultRouting
		}
		item := &sluicev1.BulkItem{Index: index, Id: meta.ID, Routing: routing}
		switch op.action {
		case "index":
			item.Action = sluicev1.BulkAction_BULK_ACTION_INDEX
		case "create":
			item.Action = sluicev1.BulkAction_BULK_ACTION_CREATE
		case "delete":
			item.Action = sluicev1.BulkAction_BULK_ACTION_DELETE
		}
		if op.action != "delete" {
			src, ok := next()
			if !ok {
				return nil, badRequest("The bulk request must be terminated by a newline [\\n]: action/metadata line [%d] has no source line", actionLine)
			}
			item.Source = bytes.TrimSpace(src)
		}
		if op.action == "update" {
			refused, err := parseUpdate(item.Source, item)
			if err != nil {
				e := err.(*esError)
				e.reason = fmt.Sprintf("line [%d]: %s", lineNo, e.reason)
				return nil, e
			}
			op.refused = refused
			if refused == nil && meta.RetryOnConflict != nil {
				op.refused = retryOnConflict(item, string(meta.RetryOnConflict))
			}
		}
		op.item = item
		switch {
		case index == "":
			op.refused = validationError("index is missing")
		case op.refused != nil:
		case meta.IfSeqNo != nil || meta.IfPrimaryTerm != nil:
			op.refused = ifSeqNo(item, string(meta.IfSeqNo), meta.IfSeqNo != nil, string(meta.IfPrimaryTerm), meta.IfPrimaryTerm != nil)
		}
		switch {
		case op.refused != nil:
		case meta.RetryOnConflict != nil && op.action != "update":
			op.refused = badRequest("retry_on_conflict is an option of updates")
		case meta.unsupported() != "":
			op.refused = badRequest("%s", meta.unsupported())
		}
		ops = append(ops, op)
	}
}

func bulkLineError(line int, text []byte, err error) *esError {
	if len(text) > 200 {
		text = append(text[:200:200], "..."...)
	}
	return &esError{status: http.StatusBadRequest, typ: "illegal_argument_exception",
		reason: fmt.Sprintf("Malformed action/metadata line [%d]: %v: %s", line, err, text)}
}

// refreshPolicy reads the refresh parameter of writes.
func refreshPolicy(r *request) (sluicev1.RefreshPolicy, error) {
	if !r.has("refresh") {
		return sluicev1.RefreshPolicy_REFRESH_POLICY_NONE, nil
	}
	switch v := r.param("refresh"); v {
	case "", "true":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE, nil
	case "wait_for":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR, nil
	case "false":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_NONE, nil
	default:
		return 0, badRequest("Unknown value for refresh: [%s].", v)
	}
}

// writeRequest reads the parameters shared by bulk and single-document
// writes into a BulkRequest.
func writeRequest(r *request) (*sluicev1.BulkRequest, error) {
	refresh, err := refreshPolicy(r)
	if err != nil {
		return nil, err
	}
	req := &sluicev1.BulkRequest{Index: r.PathValue("index"), Refresh: refresh}
	if d, ok, err := r.durationParam("timeout"); err != nil {
		return nil, err
	} else if ok {
		req.Timeout = durationpb.New(d)
	}
	return req, nil
}

// writeRequestBody is writeRequest and the request's body.
func writeRequestBody(r *request) (*sluicev1.BulkRequest, []byte, error) {
	req, err := writeRequest(r)
	if err != nil {
		return nil, nil, err
	}
	b, err := r.body()
	return req, b, err
}

func (a *API) bulk(r *request) (int, any, error) {
	start := time.Now()
	ctx := r.Context()
	if a.cfg.AdmitBulk != nil {
		// Room in the bulk budget before the body is read; the
		// reservation travels with ctx to the Bulk call.
		var err error
		if ctx, err = a.cfg.AdmitBulk(ctx); err != nil {
			return 0, nil, fromStatus(err, kindGeneral, "")
		}
	}
	req, b, err := writeRequestBody(r)
	if err != nil {
		return 0, nil, err
	}
	ops, err := parseBulk(b, req.Index, r.param("routing"))
	if err != nil {
		return 0, nil, err
	}
	if len(ops) == 0 {
		return 0, nil, validationError("no requests added")
	}
	for _, op := range ops {
		if op.refused == nil {
			req.Items = append(req.Items, op.item)
		}
	}
	var results []*sluicev1.BulkItemResult
	if len(req.Items) > 0 {
		resp, err := a.c.Bulk(ctx, req)
		if err != nil {
			return 0, nil, fromStatus(err, kindDocument, req.Index)
		}
		results = resp.GetItems()
		if len(results) != len(req.Items) {
			return 0, nil, fmt.Errorf("bulk: %d results for %d items", len(results), len(req.Items))
		}
	}
	out := appendBulkResponse(make([]byte, 0, 64+len(ops)*160), ops, results, time.Since(start))
	return http.StatusOK, out, nil
}

// appendBulkResponse writes Elasticsearch's bulk response: took, errors
// and one item per operation, in order, keyed by its action.
func appendBulkResponse(b []byte, ops []bulkOp, results []*sluicev1.BulkItemResult, took time.Duration) []byte {
	errs := false
	for _, op := range ops {
		if op.refused != nil {
			errs = true
		}
	}
	for _, res := range results {
		if res.GetStatus() == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR {
			errs = true
		}
	}
	b = append(b, `{"took":`...)
	b = strconv.AppendInt(b, took.Milliseconds(), 10)
	b = append(b, `,"errors":`...)
	b = strconv.AppendBool(b, errs)
	b = append(b, `,"items":[`...)
	j := 0
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"`...)
		b = append(b, op.action...)
		b = append(b, `":`...)
		if op.refused != nil {
			b = appendItem(b, op.item.GetIndex(), op.item.GetId(), op.refused.status, "", -1, 0, op.refused)
		} else {
			res := results[j]
			j++
			b = appendResult(b, res)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// itemOutcome is how Elasticsearch reports a bulk item's outcome: its
// status and result word, or its error.
func itemOutcome(res *sluicev1.BulkItemResult) (int, string, *esError) {
	switch res.GetStatus() {
	case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED:
		return http.StatusCreated, "created", nil
	case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED:
		return http.StatusOK, "updated", nil
	case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED:
		return http.StatusOK, "deleted", nil
	case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND:
		return http.StatusNotFound, "not_found", nil
	case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP:
		return http.StatusOK, "noop", nil
	}
	if e, ok := documentMissing(res); ok {
		return e.status, "", e
	}
	e := fromDetail(res.GetError(), true)
	if e.typ == "index_not_found_exception" {
		e.index = res.GetIndex()
	}
	return e.status, "", e
}

func appendResult(b []byte, res *sluicev1.BulkItemResult) []byte {
	st, result, e := itemOutcome(res)
	seq, term := res.GetSeqNo(), res.GetPrimaryTerm()
	if e != nil {
		seq = -1
	}
	return appendItem(b, res.GetIndex(), res.GetId(), st, result, seq, term, e)
}

// appendItem writes one item's object: _seq_no and _primary_term are the
// document's new version (a noop's, its unchanged one). Sluice has no
// _version counter: it is left out rather than made up.
func appendItem(b []byte, index, id string, st int, result string, seq, term int64, e *esError) []byte {
	b = append(b, `{"_index":`...)
	b = appendString(b, index)
	if id != "" {
		b = append(b, `,"_id":`...)
		b = appendString(b, id)
	}
	if e != nil {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(st), 10)
		eb, _ := json.Marshal(e.body())
		b = append(b, `,"error":`...)
		b = append(b, eb...)
		return append(b, '}')
	}
	b = append(b, `,"result":"`...)
	b = append(b, result...)
	if result == "noop" {
		// Nothing was written: no shard copy took part, no seqNo was
		// taken; the version is the document's, unchanged.
		b = append(b, `","_shards":{"total":0,"successful":0,"failed":0}`...)
	} else {
		b = append(b, `","_shards":{"total":1,"successful":1,"failed":0}`...)
	}
	if seq >= 0 && term > 0 {
		b = append(b, `,"_seq_no":`...)
		b = strconv.AppendInt(b, seq, 10)
		b = append(b, `,"_primary_term":`...)
		b = strconv.AppendInt(b, term, 10)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(st), 10)
	return append(b, '}')
}

// appendString writes s as a JSON string.
func appendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}
