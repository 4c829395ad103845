package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/sluice-search/sluice/cluster/dirlock"
)

// Ports for processes that must be told theirs before they start (etcd,
// and nodes and coordinators that restart on the same address); a process
// that binds port 0 and reports the port (`sluice dev`, startDev) needs
// none.
//
// A port found by binding :0 and closing lies in the kernel's ephemeral
// range (net.ipv4.ip_local_port_range), and until the process binds it
// the kernel may hand it out again: to any process's :0 listener, or as
// the local port of any outgoing connection — the cluster's own, a
// parallel test run's. The process then fails "address already in use".
// So ports come from outside that range, where the kernel places nothing
// by itself; within a run none is handed out twice, and across runs on
// the machine (other checkouts, parallel Ginkgo processes) each is
// claimed by a lock file (cluster/dirlock: flock, released by the kernel
// when this process ends), and one something already listens on is
// skipped.
var ports struct {
	sync.Mutex
	lo, hi, next int
	given        map[int]bool
	locks        []*dirlock.Lock // held until the process exits
}

// minFixedPorts is the fewest ports outside the ephemeral range the suite
// will work with (it uses some hundred).
const minFixedPorts = 1000

// freePort is a loopback port for a process to listen on.
func freePort() int {
	GinkgoHelper()
	return freePortOn("127.0.0.1")
}

// freePortOn is a port for a process to listen on at host (an address of
// this machine).
func freePortOn(host string) int {
	GinkgoHelper()
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		lo, hi, err := fixedPortRange()
		Expect(err).NotTo(HaveOccurred())
		// Runs start at different ports, so concurrent ones seldom try
		// the same locks.
		ports.lo, ports.hi, ports.next, ports.given = lo, hi, lo+rand.IntN(hi-lo+1), map[int]bool{}
	}
	dir := filepath.Join(os.TempDir(), "sluice-e2e-ports")
	for range ports.hi - ports.lo + 1 {
		p := ports.next
		if ports.next++; ports.next > ports.hi {
			ports.next = ports.lo
		}
		if ports.given[p] {
			continue
		}
		lock, err := dirlock.Acquire(dir, strconv.Itoa(p)+".lock")
		if errors.Is(err, dirlock.ErrLocked) {
			continue // another run's
		}
		Expect(err).NotTo(HaveOccurred())
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			_ = lock.Release() // a service of the machine listens there
			continue
		}
		_ = l.Close()
		ports.given[p] = true
		ports.locks = append(ports.locks, lock)
		return p
	}
	Fail(fmt.Sprintf("no free port left in %d-%d, outside the kernel's ephemeral range", ports.lo, ports.hi))
	return 0
}

// fixedPortRange is the ports above the kernel's ephemeral range
// (61000-65535 by default), or below it (not under 1024) if that leaves
// too few.
func fixedPortRange() (lo, hi int, err error) {
	const path = "/proc/sys/net/ipv4/ip_local_port_range"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("the e2e suite takes its ports outside the kernel's ephemeral range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%s: %q is not two ports", path, b)
	}
	elo, err1 := strconv.Atoi(f[0])
	ehi, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case 65535-ehi >= minFixedPorts:
		return ehi + 1, 65535, nil
	case elo-1024 >= minFixedPorts:
		return 1024, elo - 1, nil
	}
	return 0, 0, fmt.Errorf("the kernel's ephemeral port range %d-%d leaves fewer than %d ports outside it for the e2e suite's processes; narrow it (sysctl net.ipv4.ip_local_port_range)", elo, ehi, minFixedPorts)
}

var _ = Describe("ports for the suite's processes", func() {
	It("lie outside the kernel's ephemeral range and are never handed out twice", func() {
		b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		Expect(err).NotTo(HaveOccurred())
		var elo, ehi int
		_, err = fmt.Sscan(string(b), &elo, &ehi)
		Expect(err).NotTo(HaveOccurred())
		seen := map[int]bool{}
		for range 50 {
			p := freePort()
			Expect(p < elo || p > ehi).To(BeTrue(), "port %d is in the ephemeral range %d-%d", p, elo, ehi)
			Expect(seen[p]).To(BeFalse(), "port %d handed out twice", p)
			seen[p] = true
		}
	})
})
