package shard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStored lists the <index-uuid>/<shard>/ directories of the data dir
// and nothing else found there.
func TestStored(t *testing.T) {
	dir := t.TempDir()
	h, err := NewHost(HostOptions{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/0", "a/2", "b/1", "c", "a/x", "a/-1", "a/01"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"node.id", "b/3"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.Stored()
	if err != nil {
		t.Fatal(err)
	}
	want := []ID{{"a", 0}, {"a", 2}, {"b", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("Stored() = %v, want %v", got, want)
	}
}
