package esjson

import "testing"

// FuzzQuery checks that no input panics, that every error is an *Error of
// ErrInvalidQuery, and that what parses is stable through MarshalQuery.
//
//	go test ./esjson -run '^$' -fuzz FuzzQuery -fuzztime 60s
func FuzzQuery(f *testing.F) {
	for _, tt := range queryCases {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"bool":{"must":[{"bool":{"should":{"term":{"a":{"value":1e-7,"boost":"3"}}}}}]}}`))
	f.Add([]byte(`{"match_all":{"boost":-0.0}}`))
	f.Add([]byte(`{"terms":{"boost":[-0.0,9223372036854775808,"\u00e9"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStable(t, data, ErrInvalidQuery, ParseQuery, MarshalQuery)
	})
}

// FuzzMapping is FuzzQuery for mappings.
//
//	go test ./esjson -run '^$' -fuzz FuzzMapping -fuzztime 60s
func FuzzMapping(f *testing.F) {
	for _, tt := range mappingCases {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"properties":{"a":{"type":"long"},"a.b":{"properties":{"c.d":{"type":"text","analyzer":"x"}}},"":{"type":"date"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStable(t, data, ErrInvalidMapping, ParseMapping, MarshalMapping)
	})
}
