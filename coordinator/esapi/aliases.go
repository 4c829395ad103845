package esapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// aliasMap is every index's aliases as Elasticsearch writes them:
// index -> alias -> {} or {"is_write_index": true}.
func (a *API) aliasMap(ctx context.Context) (map[string]map[string]any, error) {
	resp, err := a.c.ListAliases(ctx, &sluicev1.ListAliasesRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, al := range resp.GetAliases() {
		for _, idx := range al.GetIndices() {
			if out[idx] == nil {
				out[idx] = map[string]any{}
			}
			opts := map[string]any{}
			if al.GetWriteIndex() == idx {
				opts["is_write_index"] = true
			}
			out[idx][al.GetAlias()] = opts
		}
	}
	return out, nil
}

// aliasAction is one action of POST /_aliases: add or remove, with one
// index or several ("indices") and one alias or several ("aliases").
type aliasAction struct {
	Index        string   `json:"index"`
	Indices      []string `json:"indices"`
	Alias        string   `json:"alias"`
	Aliases      []string `json:"aliases"`
	IsWriteIndex *bool    `json:"is_write_index"`
	MustExist    *bool    `json:"must_exist"`
}

func (a *API) updateAliases(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Actions []map[string]json.RawMessage `json:"actions"`
	}
	if err := decodeStrict(b, &body, "aliases body"); err != nil {
		return 0, nil, err
	}
	var actions []*sluicev1.AliasAction
	for i, act := range body.Actions {
		if len(act) != 1 {
			return 0, nil, badRequest("actions[%d]: an action is one of add or remove", i)
		}
		for name, raw := range act {
			var typ sluicev1.AliasActionType
			switch name {
			case "add":
				typ = sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD
			case "remove":
				typ = sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE
			case "remove_index":
				return 0, nil, badRequest("actions[%d]: [remove_index] is not supported by Sluice: delete the index with DELETE /{index}", i)
			default:
				return 0, nil, &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: "[aliases] unknown action [" + name + "]"}
			}
			var aa aliasAction
			if err := decodeStrict(raw, &aa, "actions["+strconv.Itoa(i)+"]."+name+" (Sluice's aliases take index, indices, alias, aliases, is_write_index and must_exist; no filter or routing)"); err != nil {
				return 0, nil, err
			}
			if aa.Index != "" {
				aa.Indices = append(aa.Indices, aa.Index)
			}
			if aa.Alias != "" {
				aa.Aliases = append(aa.Aliases, aa.Alias)
			}
			if len(aa.Indices) == 0 || len(aa.Aliases) == 0 {
				return 0, nil, validationError("actions[" + strconv.Itoa(i) + "]: index and alias are required")
			}
			if aa.MustExist != nil && !*aa.MustExist {
				return 0, nil, badRequest("actions[%d]: must_exist=false is not supported by Sluice: a remove of an alias that does not exist fails", i)
			}
			if aa.IsWriteIndex != nil && typ != sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD {
				return 0, nil, badRequest("actions[%d]: is_write_index goes with add", i)
			}
			for _, idx := range aa.Indices {
				for _, al := range aa.Aliases {
					actions = append(actions, &sluicev1.AliasAction{Type: typ, Index: idx, Alias: al, IsWriteIndex: aa.IsWriteIndex != nil && *aa.IsWriteIndex})
				}
			}
		}
	}
	if len(actions) == 0 {
		return 0, nil, validationError("no actions")
	}
	if _, err := a.c.UpdateAliases(r.Context(), &sluicev1.UpdateAliasesRequest{Actions: actions}); err != nil {
		return 0, nil, fromStatus(err, kindIndex, "")
	}
	return http.StatusOK, acknowledged, nil
}

func (a *API) getAliases(r *request) (int, any, error) {
	ctx := r.Context()
	var indices map[string]bool
	if expr := r.PathValue("index"); expr != "" {
		infos, err := a.indices(ctx, expr)
		if err != nil {
			return 0, nil, err
		}
		indices = map[string]bool{}
		for _, x := range infos {
			indices[x.GetName()] = true
		}
	}
	names := splitNames(r.PathValue("name"))
	all, err := a.aliasMap(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := map[string]any{}
	found := map[string]bool{}
	for idx, als := range all {
		if indices != nil && !indices[idx] {
			continue
		}
		keep := map[string]any{}
		for al, opts := range als {
			if len(names) == 0 || matchAny(names, al) {
				keep[al] = opts
				found[al] = true
			}
		}
		if len(keep) > 0 || len(names) == 0 {
			out[idx] = map[string]any{"aliases": keep}
		}
	}
	// Indices without aliases are listed too when no alias is named.
	if len(names) == 0 {
		for idx := range indices {
			if out[idx] == nil {
				out[idx] = map[string]any{"aliases": map[string]any{}}
			}
		}
	}
	var missing []string
	for _, n := range names {
		if !isPattern(n) && !found[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if r.Method == http.MethodHead {
		if len(missing) > 0 || len(out) == 0 {
			return http.StatusNotFound, nil, nil
		}
		return http.StatusOK, nil, nil
	}
	if len(missing) > 0 {
		// As Elasticsearch: 404, with what was found.
		out["error"] = "alias [" + strings.Join(missing, ",") + "] missing"
		out["status"] = http.StatusNotFound
		return http.StatusNotFound, out, nil
	}
	return http.StatusOK, out, nil
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if matchPattern(p, name) {
			return true
		}
	}
	return false
}

func (a *API) putAlias(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var opts aliasAction
	if len(b) > 0 {
		if err := decodeStrict(b, &opts, "alias body (Sluice's aliases take is_write_index only; no filter or routing)"); err != nil {
			return 0, nil, err
		}
	}
	var actions []*sluicev1.AliasAction
	for _, idx := range splitNames(r.PathValue("index")) {
		for _, al := range splitNames(r.PathValue("name")) {
			actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Index: idx, Alias: al,
				IsWriteIndex: opts.IsWriteIndex != nil && *opts.IsWriteIndex})
		}
	}
	if _, err := a.c.UpdateAliases(r.Context(), &sluicev1.UpdateAliasesRequest{Actions: actions}); err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	return http.StatusOK, acknowledged, nil
}

func (a *API) deleteAlias(r *request) (int, any, error) {
	var actions []*sluicev1.AliasAction
	for _, idx := range splitNames(r.PathValue("index")) {
		for _, al := range splitNames(r.PathValue("name")) {
			actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE, Index: idx, Alias: al})
		}
	}
	if _, err := a.c.UpdateAliases(r.Context(), &sluicev1.UpdateAliasesRequest{Actions: actions}); err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	return http.StatusOK, acknowledged, nil
}
