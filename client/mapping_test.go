package client

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestParseMapping(t *testing.T) {
	no := false
	tests := []struct {
		in   string
		want *sluicev1.Mapping
		err  string
	}{
		{`{"properties":{"title":{"type":"text","analyzer":"cjk"},"user":{"properties":{"id":{"type":"keyword","doc_values":false}}}}}`,
			&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
				"title":   {Type: sluicev1.FieldType_FIELD_TYPE_TEXT, Analyzer: "cjk"},
				"user.id": {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD, DocValues: &no}}}, ""},
		{`{"dynamic":"strict"}`, &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT, Properties: map[string]*sluicev1.FieldMapping{}}, ""},
		{`{"dynamic":false}`, &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE, Properties: map[string]*sluicev1.FieldMapping{}}, ""},
		{`{"properties":{"x":{"type":"geo_point"}}}`, nil, "field [x]: unknown type [geo_point]"},
		{`{"properties":{"x":{}}}`, nil, "field [x]: unknown type"},
		{`{"properties":{"x":{"type":"long","boost":2}}}`, nil, "field [x]"},
		{`{"dynamic":"maybe"}`, nil, "dynamic"},
		{`[`, nil, "mapping"},
	}
	for _, tt := range tests {
		got, err := ParseMapping([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseMapping(%s) = %v, want error %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMapping(%s): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got, protocmp.Transform()); d != "" {
			t.Errorf("ParseMapping(%s) (-want +got):\n%s", tt.in, d)
		}
	}
}

func FuzzParseMapping(f *testing.F) {
	f.Add([]byte(`{"properties":{"a":{"properties":{"b":{"type":"long"}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMapping(b)
		if err == nil && m == nil {
			t.Fatal("nil mapping without error")
		}
	})
}
