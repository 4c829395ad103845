package esapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// createBody is PUT /{index}'s body.
type createBody struct {
	Settings json.RawMessage            `json:"settings"`
	Mappings json.RawMessage            `json:"mappings"`
	Aliases  map[string]json.RawMessage `json:"aliases"`
}

// decodeStrict decodes a JSON object, refusing unknown keys, as a
// parsing_exception naming them.
func decodeStrict(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: what + ": " + err.Error()}
	}
	if dec.More() {
		return &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: what + ": trailing data after the JSON object"}
	}
	return nil
}

func (a *API) createIndex(r *request) (int, any, error) {
	name := r.PathValue("index")
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	req := &sluicev1.CreateIndexRequest{Name: name, WaitForActiveShards: true}
	if was := r.param("wait_for_active_shards"); was == "0" {
		req.WaitForActiveShards = false
	}
	if len(b) > 0 {
		var body createBody
		if err := decodeStrict(b, &body, "create index body"); err != nil {
			return 0, nil, err
		}
		if req.Settings, err = esjson.ParseSettings(body.Settings); err != nil {
			return 0, nil, parsingError(err)
		}
		if req.Mapping, err = esjson.ParseMapping(body.Mappings); err != nil {
			return 0, nil, parsingError(err)
		}
		for alias, opts := range body.Aliases {
			if err := plainAlias(alias, opts); err != nil {
				return 0, nil, err
			}
			req.Aliases = append(req.Aliases, alias)
		}
		slices.Sort(req.Aliases)
	}
	resp, err := a.c.CreateIndex(r.Context(), req)
	if err != nil {
		e := fromStatus(err, kindGeneral, name)
		if e.typ == "resource_already_exists_exception" {
			e.reason, e.index = "index ["+name+"] already exists", name
		}
		return 0, nil, e
	}
	return http.StatusOK, map[string]any{"acknowledged": true, "shards_acknowledged": resp.GetShardsAcknowledged(), "index": name}, nil
}

// plainAlias accepts an alias of a create index body only without
// options Sluice lacks (filter, routing) and without is_write_index, which
// creation cannot set.
func plainAlias(alias string, opts json.RawMessage) error {
	var o map[string]json.RawMessage
	if len(opts) > 0 {
		if err := json.Unmarshal(opts, &o); err != nil {
			return &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: "aliases." + alias + ": " + err.Error()}
		}
	}
	for k := range o {
		return badRequest("aliases.%s.%s is not supported by Sluice: an alias of a new index takes no options (set is_write_index with POST /_aliases)", alias, k)
	}
	return nil
}

func (a *API) deleteIndex(r *request) (int, any, error) {
	names := splitNames(r.PathValue("index"))
	for _, n := range names {
		if isPattern(n) {
			return 0, nil, badRequest("Wildcard expressions or all indices are not allowed (Sluice deletes indices by name only, as Elasticsearch's action.destructive_requires_name)")
		}
	}
	ignoreMissing, err := r.boolParam("ignore_unavailable", false)
	if err != nil {
		return 0, nil, err
	}
	for _, n := range names {
		if _, err := a.c.DeleteIndex(r.Context(), &sluicev1.DeleteIndexRequest{Name: n}); err != nil {
			if ignoreMissing && status.Code(err) == codes.NotFound {
				continue
			}
			return 0, nil, fromStatus(err, kindIndex, n)
		}
	}
	return http.StatusOK, acknowledged, nil
}

// indices reads the indices an expression names, with their metadata:
// names and aliases exactly, patterns by matching (possibly none).
func (a *API) indices(ctx context.Context, expr string) ([]*sluicev1.IndexInfo, error) {
	names, all, err := a.resolve(ctx, expr)
	if err != nil {
		return nil, err
	}
	if all {
		resp, err := a.c.ListIndices(ctx, &sluicev1.ListIndicesRequest{})
		return resp.GetIndices(), err
	}
	var out []*sluicev1.IndexInfo
	seen := map[string]bool{}
	for _, n := range names {
		var infos []*sluicev1.IndexInfo
		resp, err := a.c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: n})
		switch {
		case err == nil:
			infos = []*sluicev1.IndexInfo{resp.GetIndex()}
		case status.Code(err) == codes.InvalidArgument:
			// An alias of several indices: each of them.
			if infos, err = a.aliasIndices(ctx, n); err != nil {
				return nil, err
			}
		default:
			return nil, fromStatus(err, kindIndex, n)
		}
		for _, x := range infos {
			if !seen[x.GetName()] {
				seen[x.GetName()] = true
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// aliasIndices reads the indices of an alias.
func (a *API) aliasIndices(ctx context.Context, alias string) ([]*sluicev1.IndexInfo, error) {
	resp, err := a.c.ListAliases(ctx, &sluicev1.ListAliasesRequest{Prefix: alias})
	if err != nil {
		return nil, err
	}
	var out []*sluicev1.IndexInfo
	for _, al := range resp.GetAliases() {
		if al.GetAlias() != alias {
			continue
		}
		for _, n := range al.GetIndices() {
			g, err := a.c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: n})
			if err != nil {
				return nil, fromStatus(err, kindIndex, n)
			}
			out = append(out, g.GetIndex())
		}
	}
	if out == nil {
		return nil, notFoundIndex(alias)
	}
	return out, nil
}

func (a *API) getIndex(r *request) (int, any, error) {
	infos, err := a.indices(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	if r.Method == http.MethodHead {
		if len(infos) == 0 {
			return http.StatusNotFound, nil, nil
		}
		return http.StatusOK, nil, nil
	}
	aliases, err := a.aliasMap(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := map[string]any{}
	for _, x := range infos {
		mapping, err := mappingJSON(x.GetMapping())
		if err != nil {
			return 0, nil, err
		}
		out[x.GetName()] = map[string]any{"aliases": aliases[x.GetName()], "mappings": mapping, "settings": settingsJSON(x)}
	}
	return http.StatusOK, out, nil
}

// mappingJSON is a mapping as Elasticsearch writes it.
func mappingJSON(m *sluicev1.Mapping) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage(`{}`), nil
	}
	return esjson.MarshalMapping(m)
}

// settingsJSON is an index's settings as GET /{index}/_settings shows
// them: the settings, and what Elasticsearch adds (uuid, creation_date,
// provided_name), as strings.
func settingsJSON(x *sluicev1.IndexInfo) map[string]map[string]any {
	var s map[string]map[string]any
	_ = json.Unmarshal(esjson.MarshalSettings(x.GetSettings()), &s) // valid JSON by construction
	idx := s["index"]
	idx["uuid"] = x.GetUuid()
	idx["provided_name"] = x.GetName()
	if t := x.GetCreationTime(); t != nil {
		idx["creation_date"] = strconv.FormatInt(t.AsTime().UnixMilli(), 10)
	}
	return s
}

func (a *API) getMapping(r *request) (int, any, error) {
	infos, err := a.indices(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	out := map[string]any{}
	for _, x := range infos {
		m, err := mappingJSON(x.GetMapping())
		if err != nil {
			return 0, nil, err
		}
		out[x.GetName()] = map[string]any{"mappings": m}
	}
	return http.StatusOK, out, nil
}

func (a *API) putMapping(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	m, err := esjson.ParseMapping(b)
	if err != nil {
		return 0, nil, parsingError(err)
	}
	if m == nil {
		return 0, nil, validationError("mapping source is empty")
	}
	return eachIndex(r, func(n string) error {
		_, err := a.c.PutMapping(r.Context(), &sluicev1.PutMappingRequest{Name: n, Mapping: m})
		return err
	})
}

// eachIndex applies a change to each index the path names, stopping at
// the first failure; all done is acknowledged.
func eachIndex(r *request, change func(name string) error) (int, any, error) {
	for _, n := range splitNames(r.PathValue("index")) {
		if err := change(n); err != nil {
			return 0, nil, fromStatus(err, kindIndex, n)
		}
	}
	return http.StatusOK, acknowledged, nil
}

func (a *API) getSettings(r *request) (int, any, error) {
	infos, err := a.indices(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	out := map[string]any{}
	for _, x := range infos {
		out[x.GetName()] = map[string]any{"settings": settingsJSON(x)}
	}
	return http.StatusOK, out, nil
}

func (a *API) putSettings(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	// Elasticsearch takes {"index": {...}} or {"settings": {...}}.
	var wrapped struct {
		Settings json.RawMessage `json:"settings"`
	}
	if json.Unmarshal(b, &wrapped) == nil && len(wrapped.Settings) > 0 {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(b, &keys)
		if len(keys) == 1 {
			b = wrapped.Settings
		}
	}
	s, err := esjson.ParseSettings(b)
	if err != nil {
		return 0, nil, parsingError(err)
	}
	if s == nil {
		return 0, nil, validationError("no settings to update")
	}
	return eachIndex(r, func(n string) error {
		_, err := a.c.UpdateIndexSettings(r.Context(), &sluicev1.UpdateIndexSettingsRequest{Name: n, Settings: s})
		return err
	})
}

func (a *API) refresh(r *request) (int, any, error) {
	names, all, err := a.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	if !all && len(names) == 0 {
		return http.StatusOK, map[string]any{"_shards": shardsJSON(&sluicev1.ShardsSummary{})}, nil
	}
	resp, err := a.c.Refresh(r.Context(), &sluicev1.RefreshRequest{Indices: names})
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	return http.StatusOK, map[string]any{"_shards": shardsJSON(resp.GetShards())}, nil
}

// shardsJSON is a _shards object: counts, and failures when there are,
// in Elasticsearch's order.
type shardsObj struct {
	Total      int32 `json:"total"`
	Successful int32 `json:"successful"`
	Skipped    int32 `json:"skipped"`
	Failed     int32 `json:"failed"`
	Failures   []any `json:"failures,omitempty"`
}

func shardsJSON(s *sluicev1.ShardsSummary) shardsObj {
	out := shardsObj{Total: s.GetTotal(), Successful: s.GetSuccessful(), Failed: s.GetFailed()}
	for _, f := range s.GetFailures() {
		e := fromDetail(f.GetError(), false)
		out.Failures = append(out.Failures, map[string]any{"shard": f.GetShard(), "index": f.GetIndex(), "node": f.GetNodeId(),
			"status": http.StatusText(e.status), "reason": e.body()})
	}
	return out
}
