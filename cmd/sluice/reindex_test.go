package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name        string
		task        *sluicev1.Task
		line, phase string
	}{
		{"no counts yet", &sluicev1.Task{State: sluicev1.TaskState_TASK_STATE_RUNNING, Reindex: &sluicev1.ReindexStatus{
			Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL, CopyMethod: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS,
			Slices: []*sluicev1.SliceStatus{{}, {}}}},
			"running: 2 slices (local mode, segments), no counts reported yet", "starting"},
		{"copying", &sluicev1.Task{State: sluicev1.TaskState_TASK_STATE_RUNNING, StartTime: timestamppb.Now(), Reindex: &sluicev1.ReindexStatus{
			Total: 200, DocsPerSecond: 50, Slices: []*sluicev1.SliceStatus{{Copied: 30}, {Copied: 20}}}},
			"[=======>                      ]  25.0%  50/200 docs  50 docs/s  ETA -  running", "running"},
		{"an empty source succeeded", &sluicev1.Task{State: sluicev1.TaskState_TASK_STATE_SUCCEEDED, Reindex: &sluicev1.ReindexStatus{}},
			"[==============================] 100.0%  0/0 docs  0 docs/s  ETA -  succeeded", "succeeded"},
	} {
		line, phase := progressLine(tc.task)
		if strings.TrimRight(line, " ") != tc.line || phase != tc.phase {
			t.Errorf("%s: %q (%s), want %q (%s)", tc.name, line, phase, tc.line, tc.phase)
		}
	}
}

// TestReindexIntoAnExistingIndex runs sluice reindex against `sluice dev`:
// a destination that holds documents is refused unless --dest-exists says
// what to do; the task id is printed before the progress.
func TestReindexIntoAnExistingIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addr := startDev(t)
	cli, must := devCLI(t, addr)
	docs := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(docs, []byte("{\"id\": \"1\", \"t\": \"a\"}\n{\"id\": \"2\", \"t\": \"b\"}\n{\"id\": \"3\", \"t\": \"c\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must("index", "create", "src", "--shards", "2", "--wait")
	must("bulk", docs, "--index", "src", "--refresh", "wait_for")
	out := must("reindex", "--source", "src", "--dest", "v1", "--swap-alias", "current", "--wait")
	if !regexp.MustCompile(`(?ms)^task (\S+) started \(.*\n.*^(\S+): succeeded in`).MatchString(out) {
		t.Errorf("the task id is not printed first:\n%s", out)
	}
	must("refresh", "v1")

	uuid := func(name string) string {
		t.Helper()
		m := regexp.MustCompile(`"uuid": "([^"]+)"`).FindStringSubmatch(must("index", "get", name))
		if m == nil {
			t.Fatalf("no uuid for %s", name)
		}
		return m[1]
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dest", "v1"}, "destination index v1 (which alias current points to) already holds 3 documents; say what to do with them: --dest-exists append"},
		{[]string{"--dest", "current"}, "destination current is an alias of index v1; a reindex writes into an index: --dest v1"},
		{[]string{"--dest", "v1", "--dest-exists", "replace"}, "--dest-exists replace would delete index v1 (which alias current points to) and leave readers"},
		{[]string{"--dest", "v1", "--dest-exists", "merge"}, `--dest-exists must be append or replace, got "merge"`},
	} {
		if out, err := cli(append([]string{"reindex", "--source", "src"}, tc.args...)...); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
	before := uuid("v1")
	out = must("reindex", "--source", "src", "--dest", "v1", "--dest-exists", "append", "--wait")
	if !strings.Contains(out, "created 0, updated 3") || uuid("v1") != before {
		t.Errorf("append:\n%s", out)
	}

	// replace: an index no alias points to is deleted and created again.
	must("reindex", "--source", "src", "--dest", "v2", "--wait")
	must("refresh", "v2")
	before = uuid("v2")
	out = must("reindex", "--source", "src", "--dest", "v2", "--dest-exists", "replace", "--wait")
	if !strings.Contains(out, "deleted index v2 (3 documents, uuid "+before+")") || !strings.Contains(out, "created 3, updated 0") || uuid("v2") == before {
		t.Errorf("replace:\n%s", out)
	}
	if _, err := cli("reindex", "--source", "v2", "--dest", "v2", "--dest-exists", "replace"); err == nil ||
		err.Error() != "--dest-exists replace would delete the source, index v2" {
		t.Errorf("replace the source: %v", err)
	}
	// An empty existing index is used as it is.
	must("index", "create", "empty")
	out = must("reindex", "--source", "src", "--dest", "empty", "--wait")
	if !strings.Contains(out, "created 3") {
		t.Errorf("into an empty index:\n%s", out)
	}
}
