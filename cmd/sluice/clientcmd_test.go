package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInlineOrFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(p, []byte(`{"match_all":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value, want, err string
	}{
		{value: `{"term":{}}`, want: `{"term":{}}`},
		{value: "@" + p, want: `{"match_all":{}}`},
		{value: "@" + p + ".missing", err: "--query: open"},
	}
	for _, tc := range tests {
		got, err := inlineOrFile("query", tc.value)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want prefix %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v", tc.value, got, err)
		}
	}
}
