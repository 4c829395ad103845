// Package benchtest holds what the benchmarks' smoke tests share.
package benchtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
