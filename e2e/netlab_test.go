package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// netLab puts each data node on a host of its own: a network namespace
// joined by a veth pair to a bridge in the root namespace, which holds
// etcd, the coordinator and the test. A cut is a blackhole rule in the
// node's namespace (iproute2 only: no iptables or nft needed): the node's
// packets to the cut addresses are dropped, so no TCP exchange with them
// completes in either direction.
type netLab struct {
	tag      string
	bridge   string
	subnet   string // the first three octets of the lab's /24
	hostIP   string // the root namespace's address on the bridge
	ns       map[string]string
	ip       map[string]string
	etcdPort int
	cut      map[string]bool // nodes with a cut in place
}

// netLabUnavailable says why the lab cannot run here, "" when it can.
func netLabUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root (CI runs the e2e suite as root)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "the ip command (Debian: iproute2) is missing"
	}
	probe := fmt.Sprintf("slprobe%d", os.Getpid())
	if err := ipcmd("netns", "add", probe); err != nil {
		return fmt.Sprintf("cannot make a network namespace: %v", err)
	}
	_ = ipcmd("netns", "del", probe)
	return ""
}

func ipcmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetLab makes a namespace per node id. Names and the subnet carry the
// process id, so two suites on one machine do not meet.
func newNetLab(nodes []string) *netLab {
	pid := os.Getpid()
	l := &netLab{tag: fmt.Sprint(pid % 100000), subnet: fmt.Sprintf("10.213.%d", 20+pid%200),
		ns: map[string]string{}, ip: map[string]string{}, cut: map[string]bool{}}
	l.bridge, l.hostIP = "slbr"+l.tag, l.subnet+".1"
	DeferCleanup(l.destroy)
	Expect(ipcmd("link", "add", l.bridge, "type", "bridge")).To(Succeed())
	Expect(ipcmd("addr", "add", l.hostIP+"/24", "dev", l.bridge)).To(Succeed())
	Expect(ipcmd("link", "set", l.bridge, "up")).To(Succeed())
	for i, id := range nodes {
		ns, host, peer := fmt.Sprintf("sl%s-%s", l.tag, id), fmt.Sprintf("slh%s%d", l.tag, i), fmt.Sprintf("sln%s%d", l.tag, i)
		ip := fmt.Sprintf("%s.%d", l.subnet, 10+i)
		l.ns[id], l.ip[id] = ns, ip
		for _, args := range [][]string{
			{"netns", "add", ns},
			{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns},
			{"link", "set", host, "master", l.bridge, "up"},
			{"-n", ns, "addr", "add", ip + "/24", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			Expect(ipcmd(args...)).To(Succeed())
		}
	}
	return l
}

// destroy removes every namespace (and with it its veth pair) and the
// bridge; it runs even when a spec failed, after the processes stopped.
func (l *netLab) destroy() {
	for _, ns := range l.ns {
		if err := ipcmd("netns", "del", ns); err != nil {
			GinkgoWriter.Printf("netlab: %v\n", err)
		}
	}
	if err := ipcmd("link", "del", l.bridge); err != nil {
		GinkgoWriter.Printf("netlab: %v\n", err)
	}
}

// cutRule is the preference of the lab's blackhole rules, before the
// main table.
const cutRule = "100"

// isolate cuts node id from everyone: etcd, the coordinator, other nodes.
func (l *netLab) isolate(id string) {
	l.addCut(id, []string{"to", l.subnet + ".0/24"})
}

// cutFromEtcd cuts node id from etcd only.
func (l *netLab) cutFromEtcd(id string) {
	l.addCut(id, []string{"to", l.hostIP, "ipproto", "tcp", "dport", fmt.Sprint(l.etcdPort)})
}

// cutFromNodes cuts node id from every other data node.
func (l *netLab) cutFromNodes(id string) {
	var rules [][]string
	for other, ip := range l.ip {
		if other != id {
			rules = append(rules, []string{"to", ip})
		}
	}
	l.addCut(id, rules...)
}

func (l *netLab) addCut(id string, rules ...[]string) {
	for _, r := range rules {
		Expect(ipcmd(append(append([]string{"-n", l.ns[id], "rule", "add", "pref", cutRule}, r...), "blackhole")...)).To(Succeed())
	}
	l.cut[id] = true
	GinkgoWriter.Printf("%s netlab: cut %s: %v\n", time.Now().Format("15:04:05.000"), id, rules)
}

// heal removes every cut of node id.
func (l *netLab) heal(id string) {
	for ipcmd("-n", l.ns[id], "rule", "del", "pref", cutRule) == nil {
	}
	delete(l.cut, id)
	GinkgoWriter.Printf("%s netlab: healed %s\n", time.Now().Format("15:04:05.000"), id)
}

// healAll removes every cut.
func (l *netLab) healAll() {
	for id := range l.cut {
		l.heal(id)
	}
}

// dialNode connects to a node's internal services from inside the node's
// own namespace, so a node cut from everyone can still be asked directly.
func (l *netLab) dialNode(id, addr string) *grpc.ClientConn {
	ns := l.ns[id]
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialInNetns(ctx, ns, addr) }))
	Expect(err).NotTo(HaveOccurred())
	return conn
}

// dialInNetns makes the socket on a thread moved into namespace ns: a
// socket stays in the namespace it was made in.
func dialInNetns(ctx context.Context, ns, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer home.Close()
	target, err := os.Open(filepath.Join("/var/run/netns", ns))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setns %s: %w", ns, err)
	}
	conn, derr := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace: leaving it locked makes
		// the runtime end it with this goroutine.
		return nil, errors.Join(derr, fmt.Errorf("setns back: %w", err))
	}
	runtime.UnlockOSThread()
	return conn, derr
}

// labCluster is etcd, a coordinator and data nodes, each node in its own
// namespace of lab (or, with lab nil, all on loopback). The nodes fail a
// replica that does not answer within replTimeout, so a cut costs writes
// seconds rather than the default 30. nodeArgs are added to every node's
// flags.
func labCluster(dir string, lab *netLab, nodes []string, nodeArgs ...string) *cluster {
	const replTimeout = "5s"
	lc := &cluster{dir: dir, sluice: c.sluice, etcd: c.etcd, coords: map[string]*proc{}, coordAddr: map[string]string{}, coordMetrics: map[string]string{}}
	host := "127.0.0.1"
	if lab != nil {
		host = lab.hostIP
	}
	cport := lc.startEtcd(host)
	if lab != nil {
		lab.etcdPort = cport
	}
	DeferCleanup(lc.stop)
	lc.startCoordinator("coord-a")
	for _, id := range nodes {
		listen := fmt.Sprintf("127.0.0.1:%d", freePort())
		if lab != nil {
			listen = lab.ip[id] + ":9300" // a host of its own: any port is free
		}
		args := []string{"node", "--etcd", lc.etcdURL, "--listen", listen, "--data-dir", filepath.Join(dir, id),
			"--node-id", id, "--log-level", "info", "--replication-timeout", replTimeout}
		args = append(args, nodeArgs...)
		p := &proc{name: id, bin: lc.sluice, log: filepath.Join(dir, id+".log"), args: args}
		if lab != nil {
			p.bin, p.args = "ip", append([]string{"netns", "exec", lab.ns[id], lc.sluice}, args...)
		}
		p.start()
		lc.nodes = append(lc.nodes, p)
	}
	lc.waitNodes(len(nodes))
	return lc
}

// running says whether a process runs (started and not exited).
func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exit:
		return false
	default:
		return true
	}
}
