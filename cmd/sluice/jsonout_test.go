package main

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestPrintJSON(t *testing.T) {
	info := &sluicev1.IndexInfo{
		Name: "logs", Uuid: "u-1",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4, RefreshInterval: durationpb.New(-time.Second),
			TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC, TranslogSyncInterval: durationpb.New(5 * time.Second)},
		Mapping: &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"msg": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT, Index: new(true), DocValues: new(false)},
			"n":   {Type: sluicev1.FieldType_FIELD_TYPE_LONG, DocValues: new(false)},
		}},
		State:        sluicev1.IndexState_INDEX_STATE_OPEN,
		CreationTime: timestamppb.New(time.Date(2026, 5, 1, 12, 0, 0, 500, time.UTC)),
		Health:       sluicev1.HealthStatus_HEALTH_STATUS_YELLOW,
		DocsCount:    9007199254740993, // above 2^53: a number, not a string, and exact
		Shards: []*sluicev1.ShardRouting{
			{Shard: 0, NodeId: "n1", Primary: true, State: sluicev1.ShardState_SHARD_STATE_STARTED, PrimaryTerm: 1, InSync: true},
			{Shard: 1, State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED, Reason: "no node"},
		},
	}
	want := `{
  "name": "logs",
  "uuid": "u-1",
  "settings": {
    "number_of_shards": 2,
    "number_of_routing_shards": 4,
    "number_of_replicas": 0,
    "refresh_interval": "-1",
    "translog_durability": "async",
    "translog_sync_interval": "5s",
    "merge_max_mb_per_sec": 0,
    "indexing_buffer_bytes": 0,
    "mapping_total_fields_limit": 0,
    "mapping_depth_limit": 0,
    "mapping_field_name_length_limit": 0
  },
  "mapping": {
    "properties": {
      "msg": {
        "type": "text"
      },
      "n": {
        "type": "long",
        "doc_values": false
      }
    }
  },
  "state": "open",
  "creation_time": "2026-05-01T12:00:00.0000005Z",
  "health": "yellow",
  "docs_count": 9007199254740993,
  "store_size_bytes": 0,
  "shards": [
    {
      "shard": 0,
      "node_id": "n1",
      "primary": true,
      "state": "started",
      "primary_term": 1,
      "in_sync": true
    },
    {
      "shard": 1,
      "primary": false,
      "state": "unassigned",
      "reason": "no node",
      "primary_term": 0,
      "in_sync": false
    }
  ]
}
`
	var out bytes.Buffer
	if err := printJSON(&out, info); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// Documents are the JSON they are; a measured duration reads in ms.
	resp := &sluicev1.SearchResponse{Hits: []*sluicev1.Hit{{Index: "logs", Id: "a", Score: 0.5, Source: []byte(`{"msg": "hi"}`)}},
		Took: durationpb.New(1234567 * time.Nanosecond)}
	out.Reset()
	if err := printJSON(&out, resp); err != nil {
		t.Fatal(err)
	}
	want = `{
  "hits": [
    {
      "index": "logs",
      "id": "a",
      "score": 0.5,
      "source": {
        "msg": "hi"
      },
      "shard": 0
    }
  ],
  "max_score": 0,
  "timed_out": false,
  "took": "1.234567ms"
}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
