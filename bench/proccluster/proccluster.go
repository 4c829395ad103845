// Package proccluster starts a multi-process Sluice cluster on loopback for
// the benchmarks that need one: `sluice dev --nodes 0` (embedded etcd and a
// coordinator) plus one `sluice node` process per data node, so each node
// has its own heap, GC and scheduler as in production, and can be killed.
//
// Options.Secure starts the cluster as `sluice dev --secure` does: TLS on
// every connection (mutual TLS between coordinator and data nodes, etcd's
// client certificates), every public call authenticated with the admin API
// key the dev cluster makes; the nodes get its cluster certificate.
package proccluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/client/bulkindexer"
	"github.com/sluice-search/sluice/devcluster"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// Cluster is the running processes.
type Cluster struct {
	Addr    string         // the coordinator's gRPC address
	EtcdURL string         // the embedded etcd's client URL
	Nodes   []*Node        // the data nodes, in start order
	Client  *client.Client // connected to the coordinator; Stop closes it
	// DialOptions connect to the coordinator as Client does: none when
	// plaintext; TLS with the cluster CA (sessions resumed) and the admin
	// API key when secure.
	DialOptions []grpc.DialOption
	coord       *exec.Cmd
}

// Node is one data node process; its node id is its Name.
type Node struct {
	Name string
	Addr string // gRPC address
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Options say what to start.
type Options struct {
	Binary string // the sluice binary
	Dir    string // data directories and logs (<name>.log)
	Nodes  int    // data node processes
	// NodeArgs are extra flags for every `sluice node`; NodeArgsFor, when
	// set, adds flags for node i (a metrics address, say).
	NodeArgs    []string
	NodeArgsFor func(i int) []string
	// Secure runs `sluice dev --secure` and gives the nodes its cluster
	// certificate (package doc).
	Secure bool
}

// FreeAddr returns a loopback address nobody listens on right now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start starts the processes and waits until every data node is live.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	etcdAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	scheme, devDir := "http://", filepath.Join(o.Dir, "dev")
	devArgs := []string{"dev", "--nodes", "0", "--data-dir", devDir, "--listen", addr, "--http-listen", ""} // no HTTP API: 9201 may be taken
	if o.Secure {
		scheme, devArgs = "https://", append(devArgs, "--secure")
	}
	c := &Cluster{Addr: addr, EtcdURL: scheme + etcdAddr}
	if c.coord, err = spawn(o.Binary, o.Dir, "coordinator", append(devArgs, "--etcd-listen", c.EtcdURL)...); err != nil {
		return nil, err
	}
	var nodeTLS, cliCreds []string
	if o.Secure {
		tlsDir := filepath.Join(devDir, "tls")
		key, err := adminKey(ctx, tlsDir)
		if err != nil {
			c.Stop()
			return nil, err
		}
		ca := filepath.Join(tlsDir, devcluster.CAFile)
		src, err := tlsconf.Load(tlsconf.Files{TrustedCAFile: ca}, false, nil)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.DialOptions = append(src.DialOptions(), client.WithAPIKey(key))
		nodeTLS = []string{"--cert-file", filepath.Join(tlsDir, devcluster.ClusterCert),
			"--key-file", filepath.Join(tlsDir, devcluster.ClusterKey), "--trusted-ca-file", ca}
		cliCreds = []string{"--cacert", ca, "--api-key", key}
	}
	if err := WaitHealth(ctx, addr, 0, c.DialOptions...); err != nil {
		c.Stop()
		return nil, err
	}
	// The nodes share this machine's disk, whose fill must not decide
	// where copies go (as in the e2e and Elasticsearch's test clusters).
	settings := append([]string{"cluster", "settings", "--addr", addr,
		"--disk-watermark-low", "1b", "--disk-watermark-high", "1b", "--disk-watermark-flood-stage", "1b"}, cliCreds...)
	if out, err := exec.CommandContext(ctx, o.Binary, settings...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("disk watermarks: %w: %s", err, out)
	}
	for i := 0; i < o.Nodes; i++ {
		nodeAddr, err := FreeAddr()
		if err != nil {
			c.Stop()
			return nil, err
		}
		n := &Node{Name: fmt.Sprintf("node-%d", i), Addr: nodeAddr, done: make(chan struct{})}
		args := []string{"node", "--etcd", c.EtcdURL, "--listen", nodeAddr, "--node-id", n.Name,
			"--data-dir", filepath.Join(o.Dir, n.Name), "--log-level", "warn"}
		args = append(append(args, nodeTLS...), o.NodeArgs...)
		if o.NodeArgsFor != nil {
			args = append(args, o.NodeArgsFor(i)...)
		}
		if n.cmd, err = spawn(o.Binary, o.Dir, n.Name, args...); err != nil {
			c.Stop()
			return nil, err
		}
		go func() { _ = n.cmd.Wait(); close(n.done) }()
		c.Nodes = append(c.Nodes, n)
	}
	if err := WaitHealth(ctx, addr, o.Nodes, c.DialOptions...); err != nil {
		c.Stop()
		return nil, err
	}
	if c.Client, err = client.Dial(ctx, addr, c.DialOptions...); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// adminKey waits for `sluice dev --secure` to write its admin API key in
// tlsDir and returns it.
func adminKey(ctx context.Context, tlsDir string) (string, error) {
	file := filepath.Join(tlsDir, devcluster.AdminKeyFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(file)
		key := strings.TrimSpace(string(b))
		if err == nil {
			// A key read while being written does not parse: read again.
			if _, err = auth.ParseAuthorization("ApiKey " + key); err == nil {
				return key, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("sluice dev --secure wrote no admin key in %s: %w", file, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func spawn(binary, dir, name string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

// Node returns the data node with node id name, nil if none.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Kill sends SIGKILL to the node's process and waits until it is gone.
func (n *Node) Kill() error {
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-n.done
	return nil
}

// WaitHealth waits until the coordinator answers and sees nodes data
// nodes; opts connect to it (TLS and a key, for a secure one).
func WaitHealth(ctx context.Context, addr string, nodes int, opts ...grpc.DialOption) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		cl, err := client.Dial(cctx, addr, opts...)
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

// Stop interrupts every process (nodes first, coordinator last) and waits;
// a process that does not stop within 30 s is killed.
func (c *Cluster) Stop() {
	if c.Client != nil {
		c.Client.Close()
	}
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		n := c.Nodes[i]
		stop(n.cmd, n.done)
	}
	if c.coord != nil {
		done := make(chan struct{})
		go func() { _ = c.coord.Wait(); close(done) }()
		stop(c.coord, done)
	}
}

func stop(cmd *exec.Cmd, done chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// BulkLoad indexes docs into index through the coordinator (workers
// concurrent bulks of the client's bulk indexer; <= 0: 4) and returns the
// first item that failed for good, if any.
func BulkLoad(ctx context.Context, c *client.Client, index string, docs []corpus.Doc, workers int) error {
	var mu sync.Mutex // OnError runs on the indexer's workers
	var failed error
	ix, err := bulkindexer.New(bulkindexer.Config{Client: c, Index: index, Workers: workers,
		OnError: func(item *sluicev1.BulkItem, res *sluicev1.BulkItemResult) {
			mu.Lock()
			defer mu.Unlock()
			if failed == nil {
				failed = fmt.Errorf("item %s: %s", item.Id, res.GetError().GetReason())
			}
		}})
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := ix.Add(ctx, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: d.ID, Source: d.Source}); err != nil {
			return err
		}
	}
	if err := ix.Close(ctx); err != nil {
		return err
	}
	return failed
}

// CPU is the CPU time the cluster's processes (the coordinator with its
// embedded etcd, and the data nodes still running) have used so far, user
// and system, every thread's: /proc/<pid>/stat, Linux only, in clock ticks
// (USER_HZ, 100 a second on Linux).
func (c *Cluster) CPU() (time.Duration, error) {
	cmds := []*exec.Cmd{c.coord}
	for _, n := range c.Nodes {
		select {
		case <-n.done:
		default:
			cmds = append(cmds, n.cmd)
		}
	}
	var sum time.Duration
	for _, cmd := range cmds {
		d, err := processCPU(cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// CPU is the CPU time the node's process has used so far, as Cluster.CPU
// counts it.
func (n *Node) CPU() (time.Duration, error) { return processCPU(n.cmd.Process.Pid) }

func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces, in
	// parentheses): state is the 3rd field, utime and stime the
	// 14th and 15th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// userHZ is the unit of /proc's CPU times on Linux.
const userHZ = 100
