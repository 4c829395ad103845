package crdtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// AssetsEnv names the directory holding kube-apiserver, etcd and
	// kubectl, as controller-runtime's envtest reads it.
	AssetsEnv = "KUBEBUILDER_ASSETS"
	// SkipEnv, set to 1, skips tests that need the API server.
	SkipEnv = "SLUICE_SKIP_ENVTEST"
)

// ErrNoAssets is returned by Start when KUBEBUILDER_ASSETS is not set.
var ErrNoAssets = errors.New(AssetsEnv + ` is not set: build the test API server with` +
	` eval "$(scripts/k8s-tools.sh)" (cached after the first run), or set ` + SkipEnv + `=1 to skip these tests`)

// Skipped reports whether the user asked to skip API-server tests.
func Skipped() bool {
	return os.Getenv(SkipEnv) == "1"
}

// RepoRoot is the root of the Sluice repository, found from this source
// file's location (so it works from any package's test directory).
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("crdtest: cannot locate the repository from %q (built with -trimpath?)", file)
	}
	return filepath.Join(filepath.Dir(file), "..", ".."), nil
}

// CRDDir is the directory of the generated CRD manifests, deploy/crds.
func CRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "crds"), nil
}

// Start starts kube-apiserver and etcd from KUBEBUILDER_ASSETS and installs
// the CRDs of deploy/crds, waiting until they are served. Call Stop on the
// returned environment when done.
func Start() (*envtest.Environment, *rest.Config, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, nil, ErrNoAssets
	}
	crds, err := CRDDir()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crds},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("crdtest: starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return env, cfg, nil
}
