package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// proc is one cluster process.
type proc struct {
	name string
	bin  string
	args []string
	log  string
	// metrics is the URL of its /metrics (--metrics-listen), "" without.
	metrics string
	cmd     *exec.Cmd
	exit    chan struct{}
	// stopping is set by kill: an exit without it is a crash, which
	// died reports.
	stopping atomic.Bool
	waitErr  error // set before exit is closed
}

func (p *proc) start() {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	Expect(p.cmd.Start()).To(Succeed(), "start %s", p.name)
	p.stopping.Store(false)
	p.exit = make(chan struct{})
	started.add(p)
	go func() {
		p.waitErr = p.cmd.Wait()
		f.Close()
		close(p.exit)
	}()
}

// kill sends sig and waits for the process to end.
func (p *proc) kill(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exit:
		return
	default:
	}
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exit:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exit
	}
}

// cluster is etcd, coordinators and data nodes as processes.
type cluster struct {
	dir          string
	sluice, etcd string
	etcdURL      string
	etcdProc     *proc
	coords       map[string]*proc // by coordinator id
	coordAddr    map[string]string
	coordMetrics map[string]string // --metrics-listen, by coordinator id
	nodes        []*proc
}

func build(dir string) (sluice, etcd string) {
	sluice, etcd = filepath.Join(dir, "bin", "sluice"), filepath.Join(dir, "bin", "etcd")
	for _, b := range [][]string{{sluice, "./cmd/sluice"}, {etcd, "go.etcd.io/etcd/server/v3"}} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build %s: %s", b[1], out)
	}
	return sluice, etcd
}

func startCluster(dir string, nodes int) *cluster {
	c := &cluster{dir: dir, coords: map[string]*proc{}, coordAddr: map[string]string{}, coordMetrics: map[string]string{}}
	c.sluice, c.etcd = build(dir)
	c.startEtcd("127.0.0.1")
	c.startCoordinator("coord-a")
	for i := range nodes {
		id := fmt.Sprintf("node-%d", i+1)
		metrics := fmt.Sprintf("127.0.0.1:%d", freePort())
		p := &proc{name: id, bin: c.sluice, log: filepath.Join(dir, id+".log"), metrics: "http://" + metrics + "/metrics", args: []string{"node",
			"--etcd", c.etcdURL, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort()), "--metrics-listen", metrics,
			"--data-dir", filepath.Join(dir, id), "--node-id", id, "--log-level", "info",
			// Scrub every file every few seconds: the fault tests wait for it,
			// and every other test runs with it.
			"--scrub-interval", scrubInterval.String(), "--scrub-bytes-per-sec", "64MiB"}}
		p.start()
		c.nodes = append(c.nodes, p)
	}
	c.waitNodes(nodes)
	return c
}

// startEtcd starts the cluster's etcd on free ports of host and returns
// its client port.
func (c *cluster) startEtcd(host string) int {
	cport, pport := freePortOn(host), freePortOn(host)
	c.etcdURL = fmt.Sprintf("http://%s:%d", host, cport)
	peer := fmt.Sprintf("http://%s:%d", host, pport)
	c.etcdProc = &proc{name: "etcd", bin: c.etcd, log: filepath.Join(c.dir, "etcd.log"), args: []string{
		"--name", "e2e", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e2e=" + peer,
		"--unsafe-no-fsync", "--log-level", "error"}}
	c.etcdProc.start()
	return cport
}

// waitNodes waits for n data nodes registered, as coord-a sees them.
func (c *cluster) waitNodes(n int) {
	Eventually(func() int {
		st, err := c.state("coord-a")
		if err != nil {
			return -1
		}
		return len(st.Nodes)
	}, 60*time.Second, 200*time.Millisecond).Should(Equal(n), "data nodes registered")
	// The nodes share the host's disk, whose fill must not decide where
	// shards go (Elasticsearch's test clusters do the same); the disk
	// suite sets real watermarks for its own node.
	out, err := c.cli("coord-a", "cluster", "settings", "--disk-watermark-low", "1b", "--disk-watermark-high", "1b", "--disk-watermark-flood-stage", "1b")
	Expect(err).NotTo(HaveOccurred(), out)
}

func (c *cluster) startCoordinator(id string) {
	addr := c.coordAddr[id]
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", freePort())
		c.coordAddr[id] = addr
	}
	metrics := c.coordMetrics[id]
	if metrics == "" {
		metrics = fmt.Sprintf("127.0.0.1:%d", freePort())
		c.coordMetrics[id] = metrics
	}
	p := &proc{name: id, bin: c.sluice, log: filepath.Join(c.dir, id+".log"), metrics: "http://" + metrics + "/metrics", args: []string{"coordinator",
		"--etcd", c.etcdURL, "--listen", addr, "--node-id", id, "--log-level", "info", "--metrics-listen", metrics}}
	p.start()
	c.coords[id] = p
	Eventually(func() error {
		_, err := c.state(id)
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "coordinator %s serving", id)
}

// dial connects to a coordinator.
func (c *cluster) dial(id string) *client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, c.coordAddr[id])
	Expect(err).NotTo(HaveOccurred())
	return cl
}

func (c *cluster) state(id string) (*sluicev1.ClusterStateResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, c.coordAddr[id])
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
}

// cli runs the sluice CLI against a coordinator.
func (c *cluster) cli(coord string, args ...string) (string, error) {
	cmd := exec.Command(c.sluice, append(args, "--addr", c.coordAddr[coord])...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// scrubInterval is the data nodes' --scrub-interval.
const scrubInterval = 2 * time.Second

// proc is the process of data node id.
func (c *cluster) proc(id string) *proc {
	for _, p := range c.nodes {
		if p.name == id {
			return p
		}
	}
	Fail("no data node " + id)
	return nil
}

// restartNodes stops the nodes with sig (all at once) and starts them
// again.
func (c *cluster) restartNodes(sig syscall.Signal, nodes ...*proc) {
	var wg sync.WaitGroup
	for _, p := range nodes {
		wg.Go(func() { p.kill(sig) })
	}
	wg.Wait()
	for _, p := range nodes {
		p.start()
	}
}

// logOf is what a process has logged so far (every run of it).
func (c *cluster) logOf(p *proc) string {
	b, err := os.ReadFile(p.log)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// locate returns the node holding shard n's primary of index and the
// shard's directory there.
func (c *cluster) locate(index string, n int32) (nodeID, dir string) {
	return c.locateCopy(index, n, true)
}

// locateCopy returns the node holding shard n's primary (or first
// replica) of index and the shard's directory there.
func (c *cluster) locateCopy(index string, n int32, primary bool) (nodeID, dir string) {
	st, err := c.state(coord)
	Expect(err).NotTo(HaveOccurred())
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			if sh.Shard == n && sh.Primary == primary {
				return sh.NodeId, filepath.Join(c.dir, sh.NodeId, x.Uuid, strconv.Itoa(int(n)))
			}
		}
	}
	Fail(fmt.Sprintf("no copy (primary %v) of shard %d of index %s", primary, n, index))
	return "", ""
}

// shardOn returns the shard of index that node nodeID holds (the first)
// and its directory.
func (c *cluster) shardOn(index, nodeID string) (int32, string) {
	st, err := c.state(coord)
	Expect(err).NotTo(HaveOccurred())
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			if sh.NodeId == nodeID {
				return sh.Shard, filepath.Join(c.dir, nodeID, x.Uuid, strconv.Itoa(int(sh.Shard)))
			}
		}
	}
	Fail(fmt.Sprintf("index %s has no shard on %s", index, nodeID))
	return 0, ""
}

func (c *cluster) stop() {
	for _, p := range c.coords {
		p.kill(syscall.SIGTERM)
	}
	for _, p := range c.nodes {
		p.kill(syscall.SIGTERM)
	}
	if c.etcdProc != nil {
		c.etcdProc.kill(syscall.SIGTERM)
	}
}
