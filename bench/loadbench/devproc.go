package loadbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DevProcess is a `sluice dev` cluster in a child process, so the load
// generator's own allocations and GC never show up in the server's latency.
type DevProcess struct {
	Addr string
	cmd  *exec.Cmd
}

// StartDev runs `<binary> dev --data-dir dir --listen 127.0.0.1:<free>` and
// waits until the cluster answers ClusterHealth.
func StartDev(ctx context.Context, binary, dir string, logTo *os.File) (*DevProcess, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	// No HTTP API: its default port (9201) may be taken by another dev cluster.
	cmd := exec.Command(binary, "dev", "--data-dir", dir, "--listen", addr, "--http-listen", "")
	cmd.Stdout, cmd.Stderr = logTo, logTo
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sluice dev: %w", err)
	}
	p := &DevProcess{Addr: addr, cmd: cmd}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := ping(ctx, addr); err == nil {
			return p, nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, fmt.Errorf("sluice dev at %s did not become ready: %w", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ping(ctx context.Context, addr string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := client.Dial(cctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.ClusterHealth(cctx, &sluicev1.ClusterHealthRequest{})
	return err
}

// Stop interrupts the cluster (a clean shutdown) and waits for it, killing
// it after 30 s.
func (p *DevProcess) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return <-done
	}
}
