package rpc

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestCheckEnums(t *testing.T) {
	item := func(a sluicev1.BulkAction) *sluicev1.BulkItem { return &sluicev1.BulkItem{Action: a, Id: "x"} }
	index := sluicev1.BulkAction_BULK_ACTION_INDEX
	match := func(op sluicev1.MatchOperator) *sluicev1.Query {
		return &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "f", Operator: op}}}
	}
	for _, tt := range []struct {
		m    proto.Message
		path string
	}{
		{&sluicev1.BulkRequest{Items: []*sluicev1.BulkItem{item(index), item(index), item(9)}}, "items[2].action"},
		{&sluicev1.BulkRequest{Items: []*sluicev1.BulkItem{item(index)}, Refresh: 4}, "refresh"},
		{&sluicev1.BulkRequest{Items: []*sluicev1.BulkItem{item(index)}, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR}, ""},
		{&sluicev1.SearchRequest{Sort: []*sluicev1.SortField{{Field: "a"}, {Field: "b", Order: 5}}}, "sort[1].order"},
		{&sluicev1.SearchRequest{Query: &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: &sluicev1.BoolQuery{
			Must: []*sluicev1.Query{match(sluicev1.MatchOperator_MATCH_OPERATOR_AND)}, Should: []*sluicev1.Query{match(7)}}}}}, "query.bool.should[0].match.operator"},
		{&sluicev1.ListTasksRequest{States: []sluicev1.TaskState{sluicev1.TaskState_TASK_STATE_RUNNING, 99}}, "states[1]"},
		{&sluicev1.CreateIndexRequest{Mapping: &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"ok": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}, "title": {Type: 42}}}}, "mapping.properties[title].type"},
		{&sluicev1.CreateIndexRequest{Settings: &sluicev1.IndexSettings{TranslogDurability: 3}}, "settings.translog_durability"},
		{&sluicev1.ReindexRequest{Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL, Conflicts: 8}, "conflicts"},
		{&sluicev1.ClusterHealthRequest{WaitForStatus: -1}, "wait_for_status"},
		{&sluicev1.UpdateAliasesRequest{Actions: []*sluicev1.AliasAction{{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD}}}, ""},
		{&sluicev1.GetRequest{Id: "x"}, ""},
	} {
		if NewEnumCheck("sluice.v1.BulkItem.action").Check(&sluicev1.BulkRequest{Items: []*sluicev1.BulkItem{item(9)}}) != nil {
			t.Fatal("a skipped field was checked")
		}
		err := NewEnumCheck().Check(tt.m)
		if tt.path == "" {
			if err != nil {
				t.Errorf("%T: %v", tt.m, err)
			}
			continue
		}
		var me *MalformedError
		if !errors.As(err, &me) || me.Field != tt.path || !errors.Is(err, ErrMalformed) {
			t.Errorf("%T: %v, want a bad enum at %s", tt.m, err, tt.path)
		}
	}
}

// BenchmarkCheckEnums: what checking a 10,000-item bulk's enums costs.
func BenchmarkCheckEnums(b *testing.B) {
	req := &sluicev1.BulkRequest{Index: "x"}
	for i := range 10000 {
		req.Items = append(req.Items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprint(i), Source: []byte(`{"a": 1}`)})
	}
	for _, bc := range []struct {
		name  string
		check *EnumCheck
	}{{"all", NewEnumCheck()}, {"items checked elsewhere", NewEnumCheck("sluice.v1.BulkItem.action")}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.check.Check(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
