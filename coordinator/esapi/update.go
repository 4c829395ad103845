package esapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// updateParams are _update's URL parameters: the writes', and
// retry_on_conflict: how often the primary re-reads and retries a partial
// update that a concurrent write of the id overtook (BulkItem's).
var updateParams = append([]string{"retry_on_conflict"}, writeParams...)

// updateBody is the body of an update (an update line of a bulk, or
// _update's): Elasticsearch's partial update, without scripts. The fields
// after DocAsUpsert are Elasticsearch's that Sluice lacks, named so they
// are refused with a reason.
type updateBody struct {
	Doc         json.RawMessage `json:"doc"`
	Upsert      json.RawMessage `json:"upsert"`
	DocAsUpsert *bool           `json:"doc_as_upsert"`
	// DetectNoop: Sluice always detects no-ops; false is refused.
	DetectNoop *bool `json:"detect_noop"`

	Script         json.RawMessage `json:"script"`
	ScriptedUpsert json.RawMessage `json:"scripted_upsert"`
	Source         json.RawMessage `json:"_source"`
	IfSeqNo        json.RawMessage `json:"if_seq_no"`
	IfPrimaryTerm  json.RawMessage `json:"if_primary_term"`
}

// parseUpdate reads an update body into item (an UPDATE). A body that
// does not parse, or has a key Elasticsearch does not know, is an error
// (of the whole bulk, as in Elasticsearch); one asking for what Sluice
// lacks is refused (refused: of its item only).
func parseUpdate(src []byte, item *sluicev1.BulkItem) (refused *esError, err error) {
	var u updateBody
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, &esError{status: http.StatusBadRequest, typ: "x_content_parse_exception", reason: "[UpdateRequest] " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	switch {
	case u.Script != nil || u.ScriptedUpsert != nil:
		return badRequest("scripts are not supported by Sluice: send a partial document as doc"), nil
	case u.DetectNoop != nil && !*u.DetectNoop:
		return badRequest("detect_noop=false is not supported by Sluice: an update that changes nothing always writes nothing (result noop)"), nil
	case u.Source != nil:
		return badRequest("returning the updated _source is not supported by Sluice: get the document after the update"), nil
	case u.IfSeqNo != nil || u.IfPrimaryTerm != nil:
		return badRequest("if_seq_no and if_primary_term are not keys of an update's body: pass them as URL parameters of _update, or in a bulk update's action line"), nil
	case isNull(u.Doc):
		return validationError("script or doc is missing"), nil
	}
	item.Action = sluicev1.BulkAction_BULK_ACTION_UPDATE
	item.Source = u.Doc
	if !isNull(u.Upsert) {
		item.Upsert = u.Upsert
	}
	item.DocAsUpsert = u.DocAsUpsert != nil && *u.DocAsUpsert
	return nil, nil
}

func isNull(raw json.RawMessage) bool { return raw == nil || string(raw) == "null" }

// ifSeqNo sets item's if_seq_no and if_primary_term from their texts (URL
// parameters, or a bulk line's JSON numbers) when given; the cluster
// checks that both or neither are, and what actions take them.
func ifSeqNo(item *sluicev1.BulkItem, seq string, hasSeq bool, term string, hasTerm bool) *esError {
	if hasSeq {
		n, err := strconv.ParseInt(strings.TrimSpace(seq), 10, 64)
		if err != nil || n < 0 {
			return badRequest("if_seq_no must be a non-negative whole number, got [%s]", seq)
		}
		item.IfSeqNo = &n
	}
	if hasTerm {
		n, err := strconv.ParseInt(strings.TrimSpace(term), 10, 64)
		if err != nil || n < 1 {
			return badRequest("if_primary_term must be a positive whole number, got [%s]", term)
		}
		item.IfPrimaryTerm = &n
	}
	return nil
}

// ifSeqNoParams reads if_seq_no and if_primary_term of a document write's
// URL into item.
func ifSeqNoParams(r *request, item *sluicev1.BulkItem) *esError {
	return ifSeqNo(item, r.param("if_seq_no"), r.has("if_seq_no"), r.param("if_primary_term"), r.has("if_primary_term"))
}

// retryOnConflict sets item's retry_on_conflict from its text (a URL
// parameter, or a bulk line's JSON number); the cluster checks the range.
func retryOnConflict(item *sluicev1.BulkItem, text string) *esError {
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 32)
	if err != nil {
		return badRequest("retry_on_conflict must be a whole number, got [%s]", text)
	}
	item.RetryOnConflict = int32(n)
	return nil
}

// update is POST /{index}/_update/{id}: a bulk of one UPDATE item,
// answered as Elasticsearch answers the update API.
func (a *API) update(r *request) (int, any, error) {
	req, body, err := writeRequestBody(r)
	if err != nil {
		return 0, nil, err
	}
	item := &sluicev1.BulkItem{Id: r.PathValue("id"), Routing: r.param("routing")}
	refused, err := parseUpdate(body, item)
	if err != nil {
		return 0, nil, err
	}
	if refused != nil {
		return 0, nil, refused
	}
	if r.has("retry_on_conflict") {
		if e := retryOnConflict(item, r.param("retry_on_conflict")); e != nil {
			return 0, nil, e
		}
	}
	if e := ifSeqNoParams(r, item); e != nil {
		return 0, nil, e
	}
	req.Items = []*sluicev1.BulkItem{item}
	return a.writeItem(r, req)
}

// documentMissing reports an update of an id with no document (and no
// upsert) as Elasticsearch does: 404 document_missing_exception. The
// cluster says FAILED_PRECONDITION (docs/updates.md).
func documentMissing(res *sluicev1.BulkItemResult) (*esError, bool) {
	d := res.GetError()
	if res.GetAction() != sluicev1.BulkAction_BULK_ACTION_UPDATE || codes.Code(d.GetCode()) != codes.FailedPrecondition ||
		!strings.Contains(d.GetReason(), "document missing") {
		return nil, false
	}
	return &esError{status: http.StatusNotFound, typ: "document_missing_exception", reason: "[" + res.GetId() + "]: document missing", index: res.GetIndex()}, true
}
