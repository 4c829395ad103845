package reindexbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// procCluster is a multi-process cluster on loopback: `sluice dev --nodes 0`
// (embedded etcd and a coordinator) plus one `sluice node` process per data
// node, so each node has its own heap, GC and scheduler as in production.
type procCluster struct {
	Addr  string
	procs []*exec.Cmd
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startCluster starts the processes from binary under dir, logging to
// dir/*.log, and waits until nodes data nodes are live.
func startCluster(ctx context.Context, binary, dir string, nodes int) (*procCluster, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	etcdAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://" + etcdAddr
	c := &procCluster{Addr: addr}
	if err := c.spawn(binary, dir, "coordinator", "dev", "--nodes", "0", "--data-dir", filepath.Join(dir, "dev"),
		"--listen", addr, "--etcd-listen", etcdURL, "--http-listen", ""); err != nil { // no HTTP API: 9201 may be taken
		return nil, err
	}
	if err := waitHealth(ctx, addr, 0); err != nil {
		c.Stop()
		return nil, err
	}
	for i := 0; i < nodes; i++ {
		nodeAddr, err := freeAddr()
		if err != nil {
			c.Stop()
			return nil, err
		}
		name := fmt.Sprintf("node-%d", i)
		if err := c.spawn(binary, dir, name, "node", "--etcd", etcdURL, "--listen", nodeAddr,
			"--data-dir", filepath.Join(dir, name), "--log-level", "warn"); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := waitHealth(ctx, addr, nodes); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *procCluster) spawn(binary, dir, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// waitHealth waits until the coordinator answers and sees nodes data nodes.
func waitHealth(ctx context.Context, addr string, nodes int) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		cl, err := client.Dial(cctx, addr)
		if err == nil {
			var h *sluicev1.ClusterHealthResponse
			h, err = cl.ClusterHealth(cctx, &sluicev1.ClusterHealthRequest{})
			cl.Close()
			if err == nil && int(h.NumberOfDataNodes) >= nodes {
				cancel()
				return nil
			}
			if err == nil {
				err = fmt.Errorf("%d of %d data nodes live", h.NumberOfDataNodes, nodes)
			}
		}
		cancel()
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Join(errors.New("cluster did not become ready"), last)
}

// Stop interrupts every process (nodes first, coordinator last) and waits.
func (c *procCluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
}
