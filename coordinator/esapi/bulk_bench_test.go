package esapi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// BenchmarkBulkBody is the HTTP API's own work on a bulk of 1,000
// documents as the official Python client's helpers send it (action lines
// {"index":{"_index":..,"_id":..}}, ~1 KB sources): parsing the NDJSON and
// writing the response. The cluster's work (the Bulk call) is not in it.
func BenchmarkBulkBody(b *testing.B) {
	var body bytes.Buffer
	text := strings.Repeat("word and more words ", 50)
	for i := range 1000 {
		fmt.Fprintf(&body, "{\"index\":{\"_index\":\"py-bulk\",\"_id\":\"%d-0\"}}\n{\"id\":\"%d-0\",\"title\":\"Title %d\",\"body\":%q}\n", i, i, i, text)
	}
	results := make([]*sluicev1.BulkItemResult, 1000)
	for i := range results {
		results[i] = &sluicev1.BulkItemResult{Index: "py-bulk", Id: fmt.Sprintf("%d-0", i), Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED, SeqNo: int64(i)}
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		ops, err := parseBulk(body.Bytes(), "", "")
		if err != nil || len(ops) != 1000 {
			b.Fatal(err)
		}
		_ = appendBulkResponse(make([]byte, 0, 64+len(ops)*160), ops, results, time.Millisecond)
	}
}
