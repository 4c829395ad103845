package esapi

import (
	"github.com/sluice-search/sluice/esjson"
)

var parseTime = esjson.ParseTimeValue

// routes is the endpoint table: every endpoint the HTTP API serves, with
// the URL parameters each reads. docs/elasticsearch-api.md lists the same,
// with what each parameter does.
func (a *API) routes() {
	// Cluster.
	a.route([]string{"GET /", "HEAD /"}, nil, a.info)
	a.route([]string{"GET /_cluster/health", "GET /_cluster/health/{index}"},
		[]string{"wait_for_status", "timeout", "level", "local", "master_timeout", "wait_for_no_initializing_shards", "wait_for_no_relocating_shards"}, a.health)
	a.route([]string{"GET /_cat/health"}, catParams, a.catHealth)
	a.route([]string{"GET /_cat/indices", "GET /_cat/indices/{index}"}, append([]string{"bytes", "health", "pri", "expand_wildcards"}, catParams...), a.catIndices)

	// Indices.
	a.route([]string{"PUT /{index}"}, []string{"wait_for_active_shards", "timeout", "master_timeout"}, a.createIndex)
	a.route([]string{"DELETE /{index}"}, []string{"timeout", "master_timeout", "ignore_unavailable", "ignore_unavailable!", "allow_no_indices", "expand_wildcards"}, a.deleteIndex)
	a.route([]string{"GET /{index}", "HEAD /{index}"}, []string{"ignore_unavailable", "allow_no_indices", "expand_wildcards", "flat_settings", "include_defaults", "local", "master_timeout", "features"}, a.getIndex)
	a.route([]string{"GET /_mapping", "GET /{index}/_mapping"}, []string{"ignore_unavailable", "allow_no_indices", "expand_wildcards", "local", "master_timeout"}, a.getMapping)
	a.route([]string{"PUT /{index}/_mapping", "POST /{index}/_mapping"}, []string{"timeout", "master_timeout", "write_index_only"}, a.putMapping)
	a.route([]string{"GET /_settings", "GET /{index}/_settings"}, []string{"ignore_unavailable", "allow_no_indices", "expand_wildcards", "flat_settings", "include_defaults", "local", "master_timeout"}, a.getSettings)
	a.route([]string{"PUT /{index}/_settings"}, []string{"timeout", "master_timeout", "preserve_existing", "flat_settings"}, a.putSettings)
	a.route([]string{"POST /_refresh", "GET /_refresh", "POST /{index}/_refresh", "GET /{index}/_refresh"},
		[]string{"ignore_unavailable", "allow_no_indices", "expand_wildcards"}, a.refresh)

	// Aliases.
	a.route([]string{"POST /_aliases"}, []string{"timeout", "master_timeout"}, a.updateAliases)
	a.route([]string{"GET /_alias", "GET /_alias/{name}", "GET /{index}/_alias", "GET /{index}/_alias/{name}",
		"HEAD /_alias/{name}", "HEAD /{index}/_alias/{name}"}, []string{"ignore_unavailable", "allow_no_indices", "expand_wildcards", "local"}, a.getAliases)
	a.route([]string{"PUT /{index}/_alias/{name}", "POST /{index}/_alias/{name}", "PUT /{index}/_aliases/{name}", "POST /{index}/_aliases/{name}"},
		[]string{"timeout", "master_timeout"}, a.putAlias)
	a.route([]string{"DELETE /{index}/_alias/{name}", "DELETE /{index}/_aliases/{name}"}, []string{"timeout", "master_timeout"}, a.deleteAlias)

	// Documents.
	a.route([]string{"POST /_bulk", "PUT /_bulk", "POST /{index}/_bulk", "PUT /{index}/_bulk"}, bulkParams, a.bulk)
	a.route([]string{"PUT /{index}/_doc/{id}", "POST /{index}/_doc/{id}", "POST /{index}/_doc"}, append([]string{"op_type"}, writeParams...), a.indexDoc)
	a.route([]string{"PUT /{index}/_create/{id}", "POST /{index}/_create/{id}"}, writeParams, a.createDoc)
	a.route([]string{"GET /{index}/_doc/{id}", "HEAD /{index}/_doc/{id}"}, getParams, a.getDoc)
	a.route([]string{"GET /{index}/_source/{id}", "HEAD /{index}/_source/{id}"}, getParams, a.getSource)
	a.route([]string{"DELETE /{index}/_doc/{id}"}, writeParams, a.deleteDoc)
	a.route([]string{"POST /{index}/_update/{id}"}, updateParams, a.update)
	a.route([]string{"POST /{index}/_update_by_query"}, updateByQueryParams, a.updateByQuery)

	// Search.
	a.route([]string{"GET /_search", "POST /_search", "GET /{index}/_search", "POST /{index}/_search"}, searchParams, a.search)
	a.route([]string{"GET /_count", "POST /_count", "GET /{index}/_count", "POST /{index}/_count"},
		[]string{"routing", "ignore_unavailable", "allow_no_indices", "expand_wildcards", "preference"}, a.count)
	a.route([]string{"POST /{index}/_pit"}, []string{"keep_alive", "routing", "ignore_unavailable", "expand_wildcards", "preference"}, a.openPIT)
	a.route([]string{"DELETE /_pit"}, nil, a.closePIT)
	a.route([]string{"POST /_search/scroll", "GET /_search/scroll"}, []string{"scroll", "scroll_id", "rest_total_hits_as_int"}, a.scroll)
	a.route([]string{"DELETE /_search/scroll"}, []string{"scroll_id"}, a.clearScroll)

	// Reindex and tasks.
	a.route([]string{"POST /_reindex"}, []string{"wait_for_completion", "requests_per_second", "slices", "max_docs", "refresh", "timeout", "wait_for_active_shards", "scroll"}, a.reindex)
	a.route([]string{"GET /_tasks/{id}"}, []string{"wait_for_completion", "timeout"}, a.getTask)
	a.route([]string{"POST /_tasks/{id}/_cancel"}, nil, a.cancelTask)
}
