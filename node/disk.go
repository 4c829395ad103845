package node

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// DefaultDiskCheckInterval is how often a node measures its data path's
// disk. Measuring is one statfs; the registration is rewritten only when
// the figures moved (diskMonitor), so a short interval costs etcd nothing
// while the disk is quiet.
const DefaultDiskCheckInterval = 5 * time.Second

// diskMonitor keeps the node's disk figures, which its registration
// carries (nodes/<id>: disk_free_bytes, disk_total_bytes): the allocator
// compares them with the cluster's disk watermarks (cluster/watermark).
// It measures every interval and asks for the registration to be
// rewritten (refresh) when free space moved by at least reportStep of the
// disk since the figures last registered, so a disk filling up is seen
// within an interval — Elasticsearch polls every 30 s
// (cluster.info.update.interval) — without a write per measurement.
type diskMonitor struct {
	dir      string
	statfs   func(dir string) (free, total int64, err error)
	interval time.Duration
	refresh  func()

	mu          sync.Mutex
	free, total int64 // last measured
	reported    int64 // free bytes when last registered
}

// reportStep is the share of the disk free space must move by before the
// registration is rewritten.
const reportStep = 0.005

func newDiskMonitor(dir string, interval time.Duration, statfs func(string) (int64, int64, error), refresh func()) *diskMonitor {
	if interval <= 0 {
		interval = DefaultDiskCheckInterval
	}
	if statfs == nil {
		statfs = diskUsage
	}
	m := &diskMonitor{dir: dir, statfs: statfs, interval: interval, refresh: refresh}
	m.measure()
	return m
}

// usage returns the figures to register, and notes them as reported.
func (m *diskMonitor) usage() (free, total int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reported = m.free
	return m.free, m.total
}

// measure reads the disk once and reports whether the registration
// should be rewritten.
func (m *diskMonitor) measure() bool {
	free, total, err := m.statfs(m.dir)
	if err != nil {
		return false // keep the last figures
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.free, m.total = free, total
	d := free - m.reported
	return float64(max(d, -d)) >= reportStep*float64(total)
}

func (m *diskMonitor) run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if m.measure() {
				m.refresh()
			}
		}
	}
}

// diskUsage returns free and total bytes of the file system holding dir
// (free as an unprivileged process may use it, as df shows).
func diskUsage(dir string) (free, total int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
