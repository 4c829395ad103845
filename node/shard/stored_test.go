package shard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
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

// TestStoredSkipsForeignDirectory: a data dir that is a volume's root
// holds lost+found, which only root may read; a node running as another
// user (the chart's 65532) lists its shards past it, rather than failing
// at every reconcile and so never deleting the data of copies that moved
// away. Run as root, the listing runs in a child process as that user.
func TestStoredSkipsForeignDirectory(t *testing.T) {
	if dir := os.Getenv("SLUICE_TEST_STORED_DIR"); dir != "" { // the child
		h, err := NewHost(HostOptions{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Stored()
		if err != nil {
			t.Fatal(err)
		}
		if want := []ID{{"a", 0}}; !slices.Equal(got, want) {
			t.Fatalf("Stored() = %v, want %v", got, want)
		}
		return
	}
	const user = 65532
	root := os.Geteuid() == 0
	base, err := os.MkdirTemp("", "stored")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "data")
	for _, d := range []string{dir, filepath.Join(dir, "a"), filepath.Join(dir, "a", "0")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if root {
			if err := os.Chown(d, user, user); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(dir, "lost+found")
	if err := os.Mkdir(lost, 0o700); err != nil {
		t.Fatal(err)
	}
	if !root {
		// Not root: a directory of our own we may not read stands in.
		if err := os.Chmod(lost, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(lost, 0o700) })
		t.Setenv("SLUICE_TEST_STORED_DIR", dir)
		TestStoredSkipsForeignDirectory(t)
		return
	}
	// The test binary, where that user may run it.
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "shard.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestStoredSkipsForeignDirectory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_STORED_DIR="+dir, "GOCOVERDIR="+base)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: user, Gid: user}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("listing as user %d: %v\n%s", user, err, out)
	}
}
