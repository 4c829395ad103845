package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil || !strings.HasPrefix(out, "sluice dev (commit ") {
		t.Fatalf("version: %q, %v", out, err)
	}
	out, err = run(t, "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(out), &info); err != nil || info["Version"] != "dev" {
		t.Fatalf("version --json: %q, %v", out, err)
	}
	if _, err := run(t, "version", "extra"); err == nil {
		t.Fatal("version accepted an argument")
	}
}

func TestHelpListsGroups(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Tools:", "version", "completion"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
}
