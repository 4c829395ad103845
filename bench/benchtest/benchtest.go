// Package benchtest holds what the benchmarks' smoke tests share.
package benchtest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sluice builds the sluice binary into a temporary directory and returns
// its path: the experiments run real processes.
func Sluice(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	build := exec.Command("go", "build", "-o", bin, "github.com/sluice-search/sluice/cmd/sluice")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build sluice: %v", err)
	}
	return bin
}

// Smoke starts a benchmark's smoke test: it skips under -short (the
// experiments build the binary and start real processes), builds the
// binary and returns it with a context that ends after limit.
func Smoke(t *testing.T, limit time.Duration) (string, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts real processes")
	}
	bin := Sluice(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return bin, ctx
}

// Log is a writer for an experiment's log (Options.Log) that logs each
// line to t, so `go test -v` shows what the smoke run measured.
func Log(t *testing.T) io.Writer { return testLog{t} }

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
