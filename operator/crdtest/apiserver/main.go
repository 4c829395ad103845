// Command apiserver runs a test Kubernetes API server with Sluice's CRDs
// installed until it is interrupted, and writes an admin kubeconfig for it.
// scripts/check-chart.sh uses it to validate manifests with
// `kubectl apply --dry-run=server`. There is no scheduler or kubelet: objects
// are stored and validated, pods never run.
//
//	go run ./operator/crdtest/apiserver --write-kubeconfig /tmp/kubeconfig
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sluice-search/sluice/operator/crdtest"
)

func main() {
	// Not --kubeconfig: controller-runtime registers that flag globally.
	kubeconfig := flag.String("write-kubeconfig", "", "write an admin kubeconfig for the server to this `file` (required)")
	flag.Parse()
	if *kubeconfig == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*kubeconfig); err != nil {
		slog.Error("test apiserver failed", "err", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env, _, err := crdtest.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			slog.Error("stopping test apiserver", "err", err)
		}
	}()

	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding admin user: %w", err)
	}
	cfg, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("building kubeconfig: %w", err)
	}
	// Written last, so that the file appearing means the server is ready.
	tmp := kubeconfig + ".tmp"
	if err := os.WriteFile(tmp, cfg, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, kubeconfig); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	slog.Info("test apiserver ready", "kubeconfig", kubeconfig, "host", env.Config.Host)
	<-ctx.Done()
	return nil
}
