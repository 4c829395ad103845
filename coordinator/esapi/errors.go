package esapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// httpStatus is how Elasticsearch reports one kind of failure: the HTTP
// status and the exception type of its error JSON.
type httpStatus struct {
	status int
	typ    string
}

// statusTable is the HTTP API's one error table. It does not classify
// errors: the coordinator's error table (coordinator/errors.go) already
// gave every error of the core a gRPC code, and this table says how
// Elasticsearch reports each code. Document operations (bulk items, the
// document APIs) read an existing document id differently from an
// existing index: docStatus overrides those codes.
var statusTable = map[codes.Code]httpStatus{
	codes.InvalidArgument:    {http.StatusBadRequest, "illegal_argument_exception"},
	codes.OutOfRange:         {http.StatusBadRequest, "illegal_argument_exception"},
	codes.NotFound:           {http.StatusNotFound, "resource_not_found_exception"},
	codes.AlreadyExists:      {http.StatusBadRequest, "resource_already_exists_exception"},
	codes.Aborted:            {http.StatusConflict, "concurrent_modification_exception"},
	codes.ResourceExhausted:  {http.StatusTooManyRequests, "es_rejected_execution_exception"},
	codes.Unavailable:        {http.StatusServiceUnavailable, "unavailable_shards_exception"},
	codes.FailedPrecondition: {http.StatusInternalServerError, "illegal_state_exception"},
	codes.DeadlineExceeded:   {http.StatusGatewayTimeout, "timeout_exception"},
	codes.Canceled:           {http.StatusBadRequest, "task_cancelled_exception"},
	codes.Unimplemented:      {http.StatusBadRequest, "illegal_argument_exception"},
	codes.PermissionDenied:   {http.StatusForbidden, "security_exception"},
	codes.Unauthenticated:    {http.StatusUnauthorized, "security_exception"},
}

// docStatus overrides statusTable for document operations: a create of
// an id that exists is a version conflict, and so is a write whose
// if_seq_no / if_primary_term the document does not have (ABORTED).
var docStatus = map[codes.Code]httpStatus{
	codes.AlreadyExists: {http.StatusConflict, "version_conflict_engine_exception"},
	codes.Aborted:       {http.StatusConflict, "version_conflict_engine_exception"},
}

// internalStatus is every other code (INTERNAL, UNKNOWN, DATA_LOSS).
var internalStatus = httpStatus{http.StatusInternalServerError, "exception"}

// statusOf is how Elasticsearch reports code; doc selects the document
// operations' column.
func statusOf(code codes.Code, doc bool) httpStatus {
	if doc {
		if s, ok := docStatus[code]; ok {
			return s
		}
	}
	if s, ok := statusTable[code]; ok {
		return s
	}
	return internalStatus
}

// esError is an error as Elasticsearch reports it:
// {"error": {"root_cause": [...], "type", "reason", ...}, "status"}.
type esError struct {
	status int
	typ    string
	reason string
	// index names the index of an index_not_found_exception (and
	// others about one index), as Elasticsearch's "index" field.
	index string
	// retryAfter, on 429, is the Retry-After the coordinator advertised.
	retryAfter time.Duration
}

func (e *esError) Error() string { return e.typ + ": " + e.reason }

// badRequest is a problem with the request itself: its URL, parameters
// or body.
func badRequest(format string, args ...any) *esError {
	return &esError{status: http.StatusBadRequest, typ: "illegal_argument_exception", reason: fmt.Sprintf(format, args...)}
}

// parsingError is a body that does not parse (esjson's errors, NDJSON
// lines), as Elasticsearch's parsing_exception.
func parsingError(err error) *esError {
	reason := err.Error()
	var je *esjson.Error
	if errors.As(err, &je) {
		// The reason names a top-level key itself; a deeper place is
		// said ("[query.bool.mus] [bool] unknown field [mus]").
		reason = je.Reason
		if strings.ContainsAny(je.Path, ".[") {
			reason = "[" + je.Path + "] " + je.Reason
		}
	}
	return &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: reason}
}

// validationError is Elasticsearch's action_request_validation_exception.
func validationError(what string) *esError {
	return &esError{status: http.StatusBadRequest, typ: "action_request_validation_exception", reason: "Validation Failed: 1: " + what + ";"}
}

// notFoundIndex is Elasticsearch's index_not_found_exception.
func notFoundIndex(name string) *esError {
	return &esError{status: http.StatusNotFound, typ: "index_not_found_exception", reason: "no such index [" + name + "]", index: name}
}

// kind refines how an error from the public API is reported where the
// handler knows what a NOT_FOUND is about.
type kind uint8

const (
	kindGeneral  kind = iota
	kindIndex         // NOT_FOUND: an index or alias in the request
	kindDocument      // document writes (ALREADY_EXISTS: a version conflict), and NOT_FOUND an index
	kindContext       // NOT_FOUND: a point-in-time or scroll that expired
)

// fromStatus reports an error of the public API (a gRPC status, from the
// coordinator's error table) as Elasticsearch does; index names the index
// of the request, if one.
func fromStatus(err error, k kind, index string) *esError {
	var ee *esError
	if errors.As(err, &ee) {
		return ee
	}
	s, ok := status.FromError(err)
	if !ok {
		s = status.New(codes.Unknown, err.Error())
	}
	hs := statusOf(s.Code(), k == kindDocument)
	e := &esError{status: hs.status, typ: hs.typ, reason: s.Message()}
	if s.Code() == codes.NotFound {
		switch k {
		case kindIndex, kindDocument:
			e.typ, e.index = "index_not_found_exception", index
		case kindContext:
			e.typ = "search_context_missing_exception"
		}
	}
	for _, d := range s.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			e.retryAfter = ri.GetRetryDelay().AsDuration()
		}
	}
	return e
}

// fromDetail reports a per-item or per-shard failure (ErrorDetail: its
// code is the coordinator's, or a data node's, gRPC code).
func fromDetail(d *sluicev1.ErrorDetail, doc bool) *esError {
	code := codes.Code(d.GetCode())
	hs := statusOf(code, doc)
	e := &esError{status: hs.status, typ: hs.typ, reason: d.GetReason()}
	if doc && code == codes.NotFound {
		e.typ = "index_not_found_exception"
	}
	return e
}

// body is the error's JSON object (the value of "error", or of a bulk
// item's "error"; root_cause is added by writeError).
func (e *esError) body() errorObj {
	o := errorObj{Type: e.typ, Reason: e.reason, Index: e.index}
	if e.status == http.StatusUnauthorized {
		o.Header = map[string]string{"WWW-Authenticate": authScheme}
	}
	if e.typ == "index_not_found_exception" && e.index != "" {
		o.ResourceType, o.ResourceID, o.IndexUUID = "index_or_alias", e.index, "_na_"
	}
	return o
}

// errorObj is an error object in Elasticsearch's order.
type errorObj struct {
	Type         string `json:"type"`
	Reason       string `json:"reason"`
	ResourceType string `json:"resource.type,omitempty"`
	ResourceID   string `json:"resource.id,omitempty"`
	IndexUUID    string `json:"index_uuid,omitempty"`
	Index        string `json:"index,omitempty"`
	// Header, on a 401, repeats the WWW-Authenticate header, as
	// Elasticsearch's security_exception does.
	Header map[string]string `json:"header,omitempty"`
}

// authScheme is the one authentication scheme the HTTP API takes
// (Authorization: ApiKey <base64 of id:secret>); client certificates
// need no header.
const authScheme = "ApiKey"

// retryAfterHeader is a Retry-After in whole seconds, at least 1.
func retryAfterHeader(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
