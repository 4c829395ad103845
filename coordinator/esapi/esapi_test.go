package esapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestRouterPrefersLiteralSegments(t *testing.T) {
	a := New(Config{})
	for _, tt := range []struct{ path, want string }{
		{"/", ""},
		{"/books", "{index}"},
		{"/_all", "{index}"},
		{"/_tasks/abc", "_tasks/{id}"},
		{"/_alias/x", "_alias/{name}"},
		{"/books/_alias", "{index}/_alias"},
		{"/books/_search", "{index}/_search"},
		{"/_search/scroll", "_search/scroll"},
		{"/_search", "_search"},
		{"/books/_doc/a%2Fb", "{index}/_doc/{id}"},
		{"/_cat/indices/books", "_cat/indices/{index}"},
		{"/_foo", "-"}, // no index starts with _
		{"/a/b/c/d", "-"},
	} {
		rt, vars := a.router.match(tt.path)
		got := "-"
		if rt != nil {
			got = strings.Join(rt.segs, "/")
		}
		if got != tt.want {
			t.Errorf("%s: route %q, want %q", tt.path, got, tt.want)
		}
		if tt.path == "/books/_doc/a%2Fb" && vars["id"] != "a/b" {
			t.Errorf("id = %q, want it unescaped", vars["id"])
		}
	}
}

func TestSourceFilter(t *testing.T) {
	src := `{"a":1,"b":{"c":2,"d":{"e":3}},"arr":[{"x":1,"y":2},{"x":3},5],"s":"q\"}"}`
	for _, tt := range []struct {
		name               string
		includes, excludes []string
		want               string
	}{
		{"none", nil, nil, src},
		{"top field", []string{"a"}, nil, `{"a":1}`},
		{"object whole", []string{"b"}, nil, `{"b":{"c":2,"d":{"e":3}}}`},
		{"nested path", []string{"b.d.e"}, nil, `{"b":{"d":{"e":3}}}`},
		{"wildcard", []string{"b.*"}, nil, `{"b":{"c":2,"d":{"e":3}}}`},
		{"objects in arrays", []string{"arr.x"}, nil, `{"arr":[{"x":1},{"x":3}]}`},
		{"exclude", nil, []string{"b", "arr"}, `{"a":1,"s":"q\"}"}`},
		{"exclude below include", []string{"b"}, []string{"b.d"}, `{"b":{"c":2}}`},
		{"escaped string kept", []string{"s"}, nil, `{"s":"q\"}"}`},
		{"nothing matches", []string{"zzz"}, nil, `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newSourceFilter(tt.includes, tt.excludes)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.append(nil, []byte(src))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseBulk(t *testing.T) {
	body := []byte(`{"index":{"_index":"a","_id":"1","routing":"r"}}
{"n":1}

{"delete":{"_id":"2"}}
{"create":{}}
{"n":3}
{"update":{"_id":"4"}}
{"doc":{"n":4}}
{"index":{"_id":"5","version":3}}
{"n":5}
{"index":{"_id":"6","if_seq_no":3,"if_primary_term":2}}
{"n":6}
{"delete":{"_id":"7","if_seq_no":-1,"if_primary_term":2}}
{"update":{"_id":"8","if_seq_no":0,"if_primary_term":"x"}}
{"doc":{"n":8}}
`)
	ops, err := parseBulk(body, "dflt", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action, index, id, routing, source string
		refused                            bool
	}{
		{"index", "a", "1", "r", `{"n":1}`, false},
		{"delete", "dflt", "2", "", "", false},
		{"create", "dflt", "", "", `{"n":3}`, false},
		{"update", "dflt", "4", "", `{"n":4}`, false},
		{"index", "dflt", "5", "", `{"n":5}`, true},
		{"index", "dflt", "6", "", `{"n":6}`, false},
		{"delete", "dflt", "7", "", "", true},
		{"update", "dflt", "8", "", `{"n":8}`, true},
	}
	if len(ops) != len(want) {
		t.Fatalf("%d ops, want %d", len(ops), len(want))
	}
	for i, w := range want {
		op := ops[i]
		if op.action != w.action || op.item.Index != w.index || op.item.Id != w.id || op.item.Routing != w.routing ||
			string(op.item.Source) != w.source || (op.refused != nil) != w.refused {
			t.Errorf("op %d = %s %+v refused=%v, want %+v", i, op.action, op.item, op.refused, w)
		}
	}
	if it := ops[5].item; it.GetIfSeqNo() != 3 || it.GetIfPrimaryTerm() != 2 {
		t.Errorf("if_seq_no %d, if_primary_term %d; want 3 and 2", it.GetIfSeqNo(), it.GetIfPrimaryTerm())
	}
	for i, why := range map[int]string{4: "use if_seq_no and if_primary_term", 6: "if_seq_no must be", 7: "if_primary_term must be"} {
		if r := ops[i].refused; r == nil || !strings.Contains(r.reason, why) {
			t.Errorf("op %d refused %v, want a reason saying %q", i, r, why)
		}
	}
	// Sources are the body's own bytes, not copies.
	if &ops[0].item.Source[0] != &body[strings.Index(string(body), `{"n":1}`)] {
		t.Error("the source was copied")
	}
	for _, tt := range []struct{ name, body, reason string }{
		{"not an action", "{\"oops\":{}}\n", "Malformed action/metadata line [1]"},
		{"two actions", "{\"index\":{},\"delete\":{}}\n", "Malformed action/metadata line [1]"},
		{"unknown parameter", "{\"index\":{\"_idx\":\"a\"}}\n{}\n", `unknown field "_idx"`},
		{"no source", "{\"index\":{}}\n", "has no source line"},
		{"not JSON", "{\"index\":\n", "Malformed action/metadata line [1]"},
	} {
		_, err := parseBulk([]byte(tt.body), "i", "")
		var e *esError
		if !errors.As(err, &e) || e.status != http.StatusBadRequest || !strings.Contains(e.reason, tt.reason) {
			t.Errorf("%s: err = %v, want a 400 saying %q", tt.name, err, tt.reason)
		}
	}
}

func TestParseBulkUpdates(t *testing.T) {
	for _, tt := range []struct {
		name, line  string
		doc, upsert string
		docAsUpsert bool
		refused     string // the item's refusal
		err         string // the request's error
	}{
		{"doc", `{"doc":{"n":1}}`, `{"n":1}`, "", false, "", ""},
		{"doc and upsert", `{"doc":{"n":1},"upsert":{"n":0}}`, `{"n":1}`, `{"n":0}`, false, "", ""},
		{"doc as upsert", `{"doc":{"n":1},"doc_as_upsert":true,"detect_noop":true}`, `{"n":1}`, "", true, "", ""},
		{"script", `{"script":{"source":"ctx._source.n++"}}`, "", "", false, "scripts are not supported", ""},
		{"no doc", `{"upsert":{"n":0}}`, "", "", false, "script or doc is missing", ""},
		{"detect_noop false", `{"doc":{"n":1},"detect_noop":false}`, "", "", false, "detect_noop=false", ""},
		{"_source", `{"doc":{"n":1},"_source":true}`, "", "", false, "updated _source", ""},
		{"unknown key", `{"dco":{"n":1}}`, "", "", false, "", `[UpdateRequest] unknown field "dco"`},
		{"not JSON", `{"doc":`, "", "", false, "", "[UpdateRequest]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := parseBulk([]byte("{\"update\":{\"_id\":\"1\",\"retry_on_conflict\":3}}\n"+tt.line+"\n"), "i", "")
			if tt.err != "" {
				var e *esError
				if !errors.As(err, &e) || e.status != http.StatusBadRequest || !strings.Contains(e.reason, tt.err) || !strings.Contains(e.reason, "line [2]") {
					t.Fatalf("err = %v, want a 400 saying %q on line 2", err, tt.err)
				}
				return
			}
			if err != nil || len(ops) != 1 {
				t.Fatalf("parse: %v %v", ops, err)
			}
			op := ops[0]
			if tt.refused != "" {
				if op.refused == nil || !strings.Contains(op.refused.reason, tt.refused) {
					t.Fatalf("refused = %v, want %q", op.refused, tt.refused)
				}
				return
			}
			it := op.item
			if op.refused != nil || it.Action != sluicev1.BulkAction_BULK_ACTION_UPDATE || string(it.Source) != tt.doc ||
				string(it.Upsert) != tt.upsert || it.DocAsUpsert != tt.docAsUpsert {
				t.Errorf("item %v refused %v", it, op.refused)
			}
		})
	}
	// retry_on_conflict belongs to updates.
	ops, err := parseBulk([]byte("{\"index\":{\"_id\":\"1\",\"retry_on_conflict\":3}}\n{}\n"), "i", "")
	if err != nil || ops[0].refused == nil {
		t.Errorf("retry_on_conflict on an index: %v %v", ops, err)
	}
}

func TestUpdateOutcomes(t *testing.T) {
	upd := sluicev1.BulkAction_BULK_ACTION_UPDATE
	for _, tt := range []struct {
		res  *sluicev1.BulkItemResult
		want string
	}{
		{&sluicev1.BulkItemResult{Action: upd, Index: "i", Id: "1", Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP, SeqNo: 4, PrimaryTerm: 1},
			`{"_index":"i","_id":"1","result":"noop","_shards":{"total":0,"successful":0,"failed":0},"_seq_no":4,"_primary_term":1,"status":200}`},
		{&sluicev1.BulkItemResult{Action: upd, Index: "i", Id: "1", Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED, SeqNo: 7, PrimaryTerm: 2},
			`{"_index":"i","_id":"1","result":"updated","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":7,"_primary_term":2,"status":200}`},
		// A version conflict: 409, as Elasticsearch's.
		{&sluicev1.BulkItemResult{Action: upd, Index: "i", Id: "1", Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, SeqNo: 9, PrimaryTerm: 1,
			Error: &sluicev1.ErrorDetail{Code: int32(codes.Aborted), Reason: "[1]: version conflict, required seqNo [3], primary term [1]. current document has seqNo [9] and primary term [1]"}},
			`{"_index":"i","_id":"1","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[1]: version conflict, required seqNo [3], primary term [1]. current document has seqNo [9] and primary term [1]"}}`},
		{&sluicev1.BulkItemResult{Action: upd, Index: "i", Id: "1", Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR,
			Error: &sluicev1.ErrorDetail{Code: int32(codes.FailedPrecondition), Reason: "engine: document missing: [1] (no upsert given)"}},
			`{"_index":"i","_id":"1","status":404,"error":{"type":"document_missing_exception","reason":"[1]: document missing","index":"i"}}`},
	} {
		if got := string(appendResult(nil, tt.res)); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestStatusTable(t *testing.T) {
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		if s := statusOf(c, false); s.status < 400 || s.typ == "" {
			t.Errorf("%v: %+v", c, s)
		}
	}
	if s := statusOf(codes.AlreadyExists, true); s.status != http.StatusConflict || s.typ != "version_conflict_engine_exception" {
		t.Errorf("document conflict: %+v", s)
	}
	if s := statusOf(codes.AlreadyExists, false); s.status != http.StatusBadRequest || s.typ != "resource_already_exists_exception" {
		t.Errorf("index exists: %+v", s)
	}
	st, _ := status.New(codes.ResourceExhausted, "budget full").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	e := fromStatus(st.Err(), kindGeneral, "")
	if e.status != http.StatusTooManyRequests || e.typ != "es_rejected_execution_exception" || e.retryAfter != 1500*time.Millisecond {
		t.Errorf("overload: %+v", e)
	}
	if h := retryAfterHeader(e.retryAfter); h != "2" {
		t.Errorf("Retry-After %q, want whole seconds rounded up", h)
	}
	if e := fromStatus(status.Error(codes.NotFound, "no such index [x]"), kindIndex, "x"); e.typ != "index_not_found_exception" || e.body().Index != "x" {
		t.Errorf("index not found: %+v", e)
	}
	if e := fromDetail(&sluicev1.ErrorDetail{Code: int32(codes.InvalidArgument), Reason: "bad"}, true); e.status != 400 {
		t.Errorf("item: %+v", e)
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tt := range []struct {
		p, name string
		want    bool
	}{
		{"logs-*", "logs-1", true}, {"logs-*", "log", false}, {"*-prod", "a-prod", true}, {"a*c*e", "abcde", true},
		{"a*c*e", "abde", false}, {"_all", "x", true}, {"x", "x", true}, {"x", "xy", false},
	} {
		if got := matchPattern(tt.p, tt.name); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v", tt.p, tt.name, got)
		}
	}
}

// The compatibility page and the endpoint table agree: every endpoint a
// row marks supported is served, and every served endpoint is on the
// page as supported. (e2e/esapi_test.go checks that the client suites
// call each of them.)
func TestDocumentedEndpointsAreTheServedOnes(t *testing.T) {
	md, err := os.ReadFile("../../docs/elasticsearch-api.md")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := regexp.MustCompile("`((?:GET|HEAD|PUT|POST|DELETE) /[^`]*)`")
	var documented []string
	for line := range strings.SplitSeq(string(md), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.TrimSpace(cells[2]) != "supported" {
			continue
		}
		for _, m := range endpoint.FindAllStringSubmatch(cells[1], -1) {
			documented = append(documented, m[1])
		}
	}
	slices.Sort(documented)
	served := New(Config{}).Endpoints()
	if len(served) < 50 {
		t.Fatalf("only %d endpoints served: %v", len(served), served)
	}
	notServed := slices.DeleteFunc(slices.Clone(documented), func(e string) bool { return slices.Contains(served, e) })
	notListed := slices.DeleteFunc(slices.Clone(served), func(e string) bool { return slices.Contains(documented, e) })
	if len(notServed)+len(notListed) > 0 {
		t.Errorf("docs/elasticsearch-api.md marks supported, the API does not serve: %q\nthe API serves, the page does not list as supported (one `METHOD /path` each): %q", notServed, notListed)
	}
}

// The scanned action lines read as encoding/json reads them, and every
// line the scan declines is left to encoding/json.
func TestFastActionLine(t *testing.T) {
	for _, tt := range []struct {
		line string
		fast bool
	}{
		{`{"index":{"_index":"a","_id":"1"}}`, true},
		{` { "create" : { "_id" : "x y", "routing":"r" } } `, true},
		{`{"delete":{}}`, true},
		{"{\"update\":{\"_id\":\"1\",\"_index\":\"b\"}}\r", true},
		{`{"index":{"_id":"a\"b"}}`, false},    // an escape
		{`{"index":{"_id":"é"}}`, false},       // not ASCII
		{`{"index":{"_id":1}}`, false},         // a number
		{`{"index":{"if_seq_no":"1"}}`, false}, // another key
		{`{"index":{"_idx":"1"}}`, false},      // an unknown key
		{`{"index":{},"delete":{}}`, false},    // two actions
		{`{"index":{}} x`, false},              // trailing text
		{`{"upsert":{}}`, false},               // not an action
		{`{"index":{"_id":"1",}}`, false},      // not JSON
		{`{"index":{"_id":"1"}`, false},        // unterminated
	} {
		last := ""
		action, meta, ok := fastActionLine([]byte(tt.line), &last)
		if ok != tt.fast {
			t.Errorf("%s: scanned %v, want %v", tt.line, ok, tt.fast)
			continue
		}
		if !ok {
			continue
		}
		var l map[string]bulkMeta
		if err := json.Unmarshal([]byte(tt.line), &l); err != nil || len(l) != 1 {
			t.Fatalf("%s: encoding/json: %v", tt.line, err)
		}
		if want, found := l[action]; !found || want.Index != meta.Index || want.ID != meta.ID || want.Routing != meta.Routing {
			t.Errorf("%s: scanned %s %+v, encoding/json %v", tt.line, action, *meta, l)
		}
	}
}

func FuzzFastActionLine(f *testing.F) {
	f.Add(`{"index":{"_index":"a","_id":"1"}}`)
	f.Add(`{"delete":{"routing":"x"}}`)
	f.Fuzz(func(t *testing.T, line string) {
		last := ""
		action, meta, ok := fastActionLine([]byte(line), &last)
		if !ok {
			return
		}
		var l map[string]bulkMeta
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%q scanned, but encoding/json says %v", line, err)
		}
		if want := l[action]; want.Index != meta.Index || want.ID != meta.ID || want.Routing != meta.Routing {
			t.Fatalf("%q: scanned %+v, encoding/json %+v", line, *meta, want)
		}
	})
}

// retry_on_conflict on a bulk update line reaches the item; a value that
// is not a whole number refuses that item only.
func TestBulkRetryOnConflict(t *testing.T) {
	body := []byte(`{"update":{"_index":"i","_id":"1","retry_on_conflict":3}}
{"doc":{"a":1}}
{"update":{"_index":"i","_id":"2","retry_on_conflict":"x"}}
{"doc":{"a":1}}
`)
	ops, err := parseBulk(body, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 {
		t.Fatalf("%d ops, want 2", len(ops))
	}
	if ops[0].refused != nil || ops[0].item.GetRetryOnConflict() != 3 {
		t.Errorf("op 0: refused %v, retry_on_conflict %d; want 3", ops[0].refused, ops[0].item.GetRetryOnConflict())
	}
	if ops[1].refused == nil {
		t.Errorf("op 1: retry_on_conflict \"x\" accepted")
	}
}

// An update-by-query's counts have no "created", in its answer and in its
// task's status and response, as Elasticsearch's; a reindex's have.
func TestTaskCountsCreated(t *testing.T) {
	for typ, want := range map[string]bool{"reindex": true, "update_by_query": false} {
		task := &sluicev1.Task{Type: typ, State: sluicev1.TaskState_TASK_STATE_SUCCEEDED, Reindex: &sluicev1.ReindexStatus{Updated: 3}}
		tj := taskJSON(task)
		answer, _ := reindexResponse(task)
		for what, counts := range map[string]map[string]any{
			"answer":        answer,
			"task status":   tj["task"].(map[string]any)["status"].(map[string]any),
			"task response": tj["response"].(map[string]any),
		} {
			if _, got := counts["created"]; got != want {
				t.Errorf("%s %s: created present %v, want %v", typ, what, got, want)
			}
			if counts["updated"] != int64(3) {
				t.Errorf("%s %s: updated %v, want 3", typ, what, counts["updated"])
			}
		}
	}
}
