package auth

import (
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// resolveMode says how a need's names become the indices checked.
type resolveMode int

const (
	// resolveRead: an alias means every index it points to; no names
	// mean every index.
	resolveRead resolveMode = iota
	// resolveWrite: an alias means the index writes to it go to.
	resolveWrite
	// literal: the names as given (indices and aliases being created, the
	// alias of an alias action, the cluster-wide "*").
	literal
)

// need is one privilege a call needs on some names.
type need struct {
	priv  sluicev1.Privilege
	names []string
	mode  resolveMode
}

// access is the rule of one RPC.
type access struct {
	// open: served without authentication when the guard is configured
	// so (health, reflection).
	open func(Config) bool
	// admin: needs the admin privilege.
	admin bool
	// needs returns the privileges a request (each message of a client
	// stream) needs; nil needs only authentication.
	needs func(proto.Message) []need
}

var (
	read    = sluicev1.Privilege_PRIVILEGE_READ
	write   = sluicev1.Privilege_PRIVILEGE_WRITE
	manage  = sluicev1.Privilege_PRIVILEGE_MANAGE
	monitor = sluicev1.Privilege_PRIVILEGE_MONITOR
)

// on is a need of one request type.
func on[T proto.Message](f func(T) []need) func(proto.Message) []need {
	return func(m proto.Message) []need {
		t, ok := m.(T)
		if !ok {
			return []need{{priv: manage, names: []string{"*"}, mode: literal}}
		}
		return f(t)
	}
}

// cluster is a cluster-wide need of p.
func cluster(p sluicev1.Privilege) func(proto.Message) []need {
	return func(proto.Message) []need { return []need{{priv: p, names: []string{"*"}, mode: literal}} }
}

func one(p sluicev1.Privilege, mode resolveMode, names ...string) []need {
	return []need{{priv: p, names: names, mode: mode}}
}

// bulkNeeds: write on the request's index and each item's.
func bulkNeeds(index string, items []*sluicev1.BulkItem) []need {
	names := []string{}
	if index != "" {
		names = append(names, index)
	}
	for _, it := range items {
		if it.GetIndex() != "" && it.GetIndex() != index {
			names = append(names, it.GetIndex())
		}
	}
	if len(names) == 0 {
		return nil // nothing is written; the data path refuses it
	}
	return one(write, resolveWrite, names...)
}

// Reflection's full method names (v1 and v1alpha).
const (
	reflectionV1      = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
	reflectionV1Alpha = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
)

// rules maps every RPC a coordinator serves to what it needs. A method
// missing here is refused (PERMISSION_DENIED): the table fails closed,
// and a test walks the services so none is forgotten.
var rules = map[string]access{
	sluicev1.Sluice_CreateIndex_FullMethodName: {needs: on(func(r *sluicev1.CreateIndexRequest) []need {
		return one(manage, literal, append([]string{r.GetName()}, r.GetAliases()...)...)
	})},
	sluicev1.Sluice_DeleteIndex_FullMethodName: {needs: on(func(r *sluicev1.DeleteIndexRequest) []need {
		return one(manage, resolveRead, r.GetName())
	})},
	sluicev1.Sluice_GetIndex_FullMethodName: {needs: on(func(r *sluicev1.GetIndexRequest) []need {
		return one(monitor, resolveRead, r.GetName())
	})},
	// The answer is filtered to the indices the caller may monitor.
	sluicev1.Sluice_ListIndices_FullMethodName: {},
	sluicev1.Sluice_UpdateIndexSettings_FullMethodName: {needs: on(func(r *sluicev1.UpdateIndexSettingsRequest) []need {
		return one(manage, resolveRead, r.GetName())
	})},
	sluicev1.Sluice_PutMapping_FullMethodName: {needs: on(func(r *sluicev1.PutMappingRequest) []need {
		return one(manage, resolveRead, r.GetName())
	})},
	sluicev1.Sluice_UpdateAliases_FullMethodName: {needs: on(func(r *sluicev1.UpdateAliasesRequest) []need {
		var indices, aliases []string
		for _, a := range r.GetActions() {
			indices, aliases = append(indices, a.GetIndex()), append(aliases, a.GetAlias())
		}
		return []need{{priv: manage, names: indices, mode: resolveRead}, {priv: manage, names: aliases, mode: literal}}
	})},
	// The answer is filtered to the aliases whose indices the caller may monitor.
	sluicev1.Sluice_ListAliases_FullMethodName: {},
	sluicev1.Sluice_Bulk_FullMethodName: {needs: on(func(r *sluicev1.BulkRequest) []need {
		return bulkNeeds(r.GetIndex(), r.GetItems())
	})},
	sluicev1.Sluice_BulkStream_FullMethodName: {needs: on(func(r *sluicev1.BulkStreamRequest) []need {
		return bulkNeeds(r.GetIndex(), r.GetItems())
	})},
	sluicev1.Sluice_Get_FullMethodName: {needs: on(func(r *sluicev1.GetRequest) []need {
		return one(read, resolveRead, r.GetIndex())
	})},
	// A point-in-time is bound to its creator (the guard checks its id),
	// who held read on its indices when opening it.
	sluicev1.Sluice_Search_FullMethodName: {needs: on(func(r *sluicev1.SearchRequest) []need {
		if r.GetPit().GetId() != "" {
			return nil
		}
		return one(read, resolveRead, r.GetIndices()...)
	})},
	sluicev1.Sluice_OpenPointInTime_FullMethodName: {needs: on(func(r *sluicev1.OpenPointInTimeRequest) []need {
		return one(read, resolveRead, r.GetIndices()...)
	})},
	sluicev1.Sluice_ClosePointInTime_FullMethodName: {},
	sluicev1.Sluice_Scroll_FullMethodName: {needs: on(func(r *sluicev1.ScrollRequest) []need {
		if r.GetPit().GetId() != "" {
			return nil
		}
		return one(read, resolveRead, r.GetIndices()...)
	})},
	sluicev1.Sluice_Refresh_FullMethodName: {needs: on(func(r *sluicev1.RefreshRequest) []need {
		return one(write, resolveRead, r.GetIndices()...)
	})},
	// Read the source, write the destination; creating or mapping the
	// destination is managing it.
	sluicev1.Sluice_Reindex_FullMethodName: {needs: on(func(r *sluicev1.ReindexRequest) []need {
		ns := []need{{priv: read, names: []string{r.GetSource().GetIndex()}, mode: resolveRead},
			{priv: write, names: []string{r.GetDest().GetIndex()}, mode: resolveWrite}}
		if r.GetDest().GetSettings() != nil || r.GetDest().GetMapping() != nil {
			ns = append(ns, need{priv: manage, names: []string{r.GetDest().GetIndex()}, mode: literal})
		}
		return ns
	})},
	// Reads the matching documents and writes them (Elasticsearch asks
	// read and index on the index).
	sluicev1.Sluice_UpdateByQuery_FullMethodName: {needs: on(func(r *sluicev1.UpdateByQueryRequest) []need {
		return []need{{priv: read, names: []string{r.GetIndex()}, mode: resolveRead},
			{priv: write, names: []string{r.GetIndex()}, mode: resolveWrite}}
	})},
	sluicev1.Sluice_GetTask_FullMethodName:        {needs: cluster(monitor)},
	sluicev1.Sluice_ListTasks_FullMethodName:      {needs: cluster(monitor)},
	sluicev1.Sluice_CancelTask_FullMethodName:     {needs: cluster(manage)},
	sluicev1.Sluice_RethrottleTask_FullMethodName: {needs: cluster(manage)},
	sluicev1.Sluice_ClusterHealth_FullMethodName: {needs: on(func(r *sluicev1.ClusterHealthRequest) []need {
		if len(r.GetIndices()) == 0 {
			return cluster(monitor)(r)
		}
		return one(monitor, resolveRead, r.GetIndices()...)
	})},
	sluicev1.Sluice_ClusterState_FullMethodName:          {needs: cluster(monitor)},
	sluicev1.Sluice_GetClusterSettings_FullMethodName:    {needs: cluster(monitor)},
	sluicev1.Sluice_UpdateClusterSettings_FullMethodName: {needs: cluster(manage)},
	sluicev1.Sluice_DrainNode_FullMethodName:             {needs: cluster(manage)},
	sluicev1.Sluice_VerifyIndex_FullMethodName: {needs: on(func(r *sluicev1.VerifyIndexRequest) []need {
		return one(manage, resolveRead, r.GetIndex())
	})},

	sluicev1.Auth_Authenticate_FullMethodName: {},
	sluicev1.Auth_CreateApiKey_FullMethodName: {admin: true},
	sluicev1.Auth_ListApiKeys_FullMethodName:  {admin: true},
	sluicev1.Auth_RevokeApiKey_FullMethodName: {admin: true},
	sluicev1.Auth_PutRole_FullMethodName:      {admin: true},
	sluicev1.Auth_DeleteRole_FullMethodName:   {admin: true},
	sluicev1.Auth_ListRoles_FullMethodName:    {admin: true},

	healthpb.Health_Check_FullMethodName: {open: func(c Config) bool { return c.OpenHealth }},
	healthpb.Health_Watch_FullMethodName: {open: func(c Config) bool { return c.OpenHealth }},
	healthpb.Health_List_FullMethodName:  {open: func(c Config) bool { return c.OpenHealth }},
	reflectionV1:                         {open: func(c Config) bool { return c.OpenReflection }},
	reflectionV1Alpha:                    {open: func(c Config) bool { return c.OpenReflection }},
}
