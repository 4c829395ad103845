package esapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DefaultMaxRequestBytes is Elasticsearch's http.max_content_length.
const DefaultMaxRequestBytes = 100 << 20

// Config configures the HTTP API.
type Config struct {
	// Client is the public API the HTTP API translates to: the
	// coordinator's own service, in-process (rpc.Server.Local), so every
	// call goes through its interceptors and its one error table.
	Client sluicev1.SluiceClient
	// AdmitBulk, if set, runs before a bulk body is read: it reserves room
	// in the coordinator's bulk budget (the returned context carries the
	// reservation to the Bulk call) or refuses with a RESOURCE_EXHAUSTED
	// status, so an overloaded coordinator answers 429 without reading
	// the body.
	AdmitBulk func(context.Context) (context.Context, error)
	// MaxRequestBytes bounds a request body, after gzip. Default
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Auth, if set, is the coordinator's Auth service, in-process: every
	// request is authenticated by it before it is routed (auth.go). Set
	// it when the coordinator guards its API (Client then refuses calls
	// without the credentials each request forwards).
	Auth sluicev1.AuthClient
	// Metrics, if set, times every request (NewMetrics).
	Metrics *Metrics
	Logger  *slog.Logger
}

// API serves Elasticsearch's HTTP API (the subset docs/elasticsearch-api.md
// lists) over the public Sluice API. It is an http.Handler.
type API struct {
	cfg     Config
	c       sluicev1.SluiceClient
	router  router
	scrolls *scrolls
	log     *slog.Logger
}

// New returns the API.
func New(cfg Config) *API {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &API{cfg: cfg, c: cfg.Client, log: cfg.Logger}
	a.scrolls = newScrolls(a)
	a.routes()
	return a
}

// Endpoints are the endpoints the API serves, "METHOD /path pattern"
// ("GET /{index}/_search"), sorted: the ones docs/elasticsearch-api.md
// marks supported (a test holds the two equal).
func (a *API) Endpoints() []string {
	var out []string
	for _, rt := range a.router.routes {
		for _, m := range rt.allowed() {
			out = append(out, m+" "+rt.path)
		}
	}
	slices.Sort(out)
	return out
}

// Close ends the scrolls this API keeps open between requests.
func (a *API) Close() { a.scrolls.close() }

// handler is an endpoint: it answers with a value written as JSON (nil:
// the handler wrote the response itself) and a status, or an error.
type handler func(r *request) (int, any, error)

// route registers a handler for "METHOD /path" patterns; params are the
// URL parameters it reads (every other one is refused, as Elasticsearch
// does, so none is silently ignored).
func (a *API) route(patterns []string, params []string, h handler) {
	allowed := map[string]bool{}
	for _, p := range append(params, commonParams...) {
		allowed[p] = true
	}
	serve := func(r *request) {
		for name := range r.URL.Query() {
			if !allowed[name] {
				a.writeError(r, badRequest("request [%s] contains unrecognized parameter: [%s]", r.URL.Path, name))
				return
			}
			if def, ok := defaultOnly[name]; ok && !allowed[name+"!"] && r.param(name) != def {
				a.writeError(r, badRequest("%s=%s is not supported by Sluice (only %s, the default)", name, r.param(name), def))
				return
			}
		}
		code, v, err := h(r)
		if err != nil {
			a.writeError(r, err)
			return
		}
		if v != nil || code != 0 {
			a.writeJSON(r, code, v)
		}
	}
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		a.router.add(method, path, serve)
	}
}

// defaultOnly are parameters accepted at their default value only: the
// behaviour they select is Sluice's, others are refused. A route that
// implements other values lists the name with a "!" as well.
var defaultOnly = map[string]string{"ignore_unavailable": "false", "allow_no_indices": "true", "expand_wildcards": "open"}

// commonParams are accepted everywhere: pretty indents the JSON,
// error_trace and human change nothing Sluice writes.
var commonParams = []string{"pretty", "error_trace", "human"}

func (a *API) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	// The official clients refuse a server without this header (their
	// product check); docs/elasticsearch-api.md says what Sluice claims.
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	r := &request{Request: hr, w: w, api: a}
	rt, vars := a.router.match(hr.URL.EscapedPath())
	start := time.Now()
	defer func() {
		route := ""
		if rt != nil {
			route = rt.path
		}
		code := r.status
		if code == 0 { // nothing written: net/http answers 200
			code = http.StatusOK
		}
		a.cfg.Metrics.observe(start, hr.Method, route, code)
	}()
	ctx := withCaller(hr)
	if a.cfg.Auth != nil {
		var err error
		if ctx, err = a.authenticate(ctx); err != nil {
			a.writeError(r, err)
			return
		}
	}
	r.Request = hr.WithContext(ctx)
	if rt == nil {
		a.writeError(r, badRequest("no handler found for uri [%s] and method [%s] (Sluice serves the subset of Elasticsearch's API in docs/elasticsearch-api.md)", hr.URL.RequestURI(), hr.Method))
		return
	}
	h, ok := rt.methods[hr.Method]
	if !ok {
		a.writeError(r, &esError{status: http.StatusMethodNotAllowed, typ: "illegal_argument_exception",
			reason: fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s], allowed: [%s]", hr.URL.RequestURI(), hr.Method, strings.Join(rt.allowed(), ", "))})
		return
	}
	r.vars = vars
	h(r)
}

// request is one HTTP request being served.
type request struct {
	*http.Request
	w    http.ResponseWriter
	api  *API
	vars map[string]string
	// status is the one the answer was written with (0: none yet).
	status int
}

// PathValue is a {name} part of the route's path, unescaped.
func (r *request) PathValue(name string) string { return r.vars[name] }

// param is a URL parameter ("" when absent).
func (r *request) param(name string) string { return r.URL.Query().Get(name) }

func (r *request) has(name string) bool { return r.URL.Query().Has(name) }

// boolParam reads a boolean parameter: absent is def, "" and "true" are
// true (Elasticsearch's ?pretty), "false" false.
func (r *request) boolParam(name string, def bool) (bool, error) {
	if !r.has(name) {
		return def, nil
	}
	switch v := r.param(name); v {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, badRequest("Failed to parse value [%s] as only [true] or [false] are allowed for [%s]", v, name)
	}
}

// intParam reads a non-negative integer parameter.
func (r *request) intParam(name string) (int64, bool, error) {
	if !r.has(name) {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(r.param(name), 10, 64)
	if err != nil || n < 0 {
		return 0, false, badRequest("Failed to parse int parameter [%s] with value [%s]", name, r.param(name))
	}
	return n, true, nil
}

// durationParam reads a time value parameter ("1m").
func (r *request) durationParam(name string) (time.Duration, bool, error) {
	if !r.has(name) {
		return 0, false, nil
	}
	d, err := parseTime(r.param(name))
	if err != nil {
		return 0, false, badRequest("failed to parse setting [%s] with value [%s] as a time value: %v", name, r.param(name), err)
	}
	return d, true, nil
}

// body reads the request body, gunzipped when it says Content-Encoding:
// gzip, up to MaxRequestBytes.
func (r *request) body() ([]byte, error) {
	var in io.Reader = r.Body
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, badRequest("Content-Encoding gzip: %v", err)
		}
		defer zr.Close()
		in = zr
	default:
		return nil, &esError{status: http.StatusUnsupportedMediaType, typ: "illegal_argument_exception",
			reason: fmt.Sprintf("Content-Encoding [%s] is not supported (gzip is)", enc)}
	}
	limit := r.api.cfg.MaxRequestBytes
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit && in == r.Body {
		// One allocation of the size announced, rather than growing by
		// doubling (a bulk body is megabytes); +1 to see the end.
		buf.Grow(int(n) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(in, limit+1))
	b := buf.Bytes()
	if err != nil {
		return nil, badRequest("reading the request body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, &esError{status: http.StatusRequestEntityTooLarge, typ: "content_too_long_exception",
			reason: fmt.Sprintf("request body is larger than %d bytes (http.max_content_length)", limit)}
	}
	return b, nil
}

// writeJSON writes v (json.Marshal, or []byte as it is) with the status,
// indented with ?pretty, gzipped when the client accepts it.
func (a *API) writeJSON(r *request, code int, v any) {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case nil:
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			a.log.Error("esapi: encoding a response", "path", r.URL.Path, "err", err)
			code, b = http.StatusInternalServerError, []byte(`{"error":{"type":"exception","reason":"encoding the response failed"},"status":500}`)
		}
	}
	if r.has("pretty") {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			out.WriteByte('\n')
			b = out.Bytes()
		}
	}
	a.write(r, code, "application/json", b)
}

// write sends a response body, gzipped when the client accepts it and the
// body is worth it. HEAD requests get the headers alone.
func (a *API) write(r *request, code int, contentType string, b []byte) {
	r.status = code
	h := r.w.Header()
	if b != nil {
		h.Set("Content-Type", contentType)
	}
	if r.Method == http.MethodHead {
		// The length GET would send, as Elasticsearch answers HEAD:
		// clients that read HEAD like GET stop there.
		h.Set("Content-Length", strconv.Itoa(len(b)))
		r.w.WriteHeader(code)
		return
	}
	if len(b) > 1024 && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		r.w.WriteHeader(code)
		zw, _ := gzip.NewWriterLevel(r.w, gzip.BestSpeed)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	r.w.WriteHeader(code)
	_, _ = r.w.Write(b)
}

func acceptsGzip(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

// writeError writes err as Elasticsearch's error JSON; 429s carry
// Retry-After.
func (a *API) writeError(r *request, err error) {
	var e *esError
	if !errors.As(err, &e) {
		e = fromStatus(err, kindGeneral, "")
	}
	switch e.status {
	case http.StatusTooManyRequests:
		r.w.Header().Set("Retry-After", retryAfterHeader(e.retryAfter))
	case http.StatusUnauthorized:
		r.w.Header().Set("WWW-Authenticate", authScheme)
	}
	if e.status >= 500 {
		a.log.Warn("esapi: request failed", "method", r.Method, "path", r.URL.Path, "status", e.status, "err", e.reason)
	}
	// Elasticsearch's order: the root cause first, then the error.
	b := append([]byte(`{"error":{"root_cause":[`), mustJSON(e.body())...)
	rest := mustJSON(e.body())
	b = append(b, "],"...)
	b = append(b, rest[1:]...)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	a.writeJSON(r, e.status, append(b, '}'))
}

// acknowledged is the answer of metadata changes.
var acknowledged = map[string]any{"acknowledged": true}

// splitNames splits a comma-separated path part ("a,b").
func splitNames(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// isPattern reports an index expression that means several names:
// _all, or one with a * wildcard.
func isPattern(name string) bool { return name == "_all" || strings.Contains(name, "*") }

// matchPattern matches a name against an index expression with *
// wildcards (Elasticsearch's simple match).
func matchPattern(pattern, name string) bool {
	if pattern == "_all" {
		return true
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(name, p)
		}
		j := strings.Index(name, p)
		if j < 0 {
			return false
		}
		name = name[j+len(p):]
	}
	return true
}

// resolve expands an index expression of the URL ("a,b*", "_all", "*")
// into index and alias names for the public API. Names without
// wildcards pass unchanged (the cluster says if one does not exist);
// patterns match indices (not aliases, as Elasticsearch's
// expand_wildcards=open) and may match nothing. all reports an
// expression that means every index.
func (a *API) resolve(ctx context.Context, expr string) (names []string, all bool, err error) {
	parts := splitNames(expr)
	if len(parts) == 0 || (len(parts) == 1 && (parts[0] == "_all" || parts[0] == "*")) {
		return nil, true, nil
	}
	var indices []string
	for _, p := range parts {
		if strings.HasPrefix(p, "-") {
			return nil, false, badRequest("index expression [%s]: exclusions (-name) are not supported", p)
		}
		if !isPattern(p) {
			names = append(names, p)
			continue
		}
		if indices == nil {
			resp, err := a.c.ListIndices(ctx, &sluicev1.ListIndicesRequest{})
			if err != nil {
				return nil, false, err
			}
			indices = []string{}
			for _, x := range resp.GetIndices() {
				indices = append(indices, x.GetName())
			}
		}
		for _, n := range indices {
			if matchPattern(p, n) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names, false, nil
}

// mustJSON encodes a value that always encodes (maps of strings).
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
