package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The disk suite runs a cluster of its own (etcd, a coordinator, a data
// node) and gives a 2nd data node a real, small file system (a 64 MiB
// tmpfs the test mounts, so it needs root, as CI has) and fills it: past
// the flood stage every index with a copy on the node refuses writes with
// RESOURCE_EXHAUSTED naming the node and its disk; with the space freed
// below the high watermark the block goes by itself and writes succeed.
//
// Its own cluster holds only the suite's index. On the suite's shared
// cluster, the indices other specs leave were rebalanced onto the new,
// empty node while the test filled its disk; past the high watermark the
// allocator moved them off again, and the space they freed took the node
// back below the flood stage while writes were still refused (as they are
// until it is below high): health showed the disk at high beside a block
// set at the flood stage.
var _ = Describe("disk watermarks on a real file system", Ordered, func() {
	ctx := context.Background()
	var (
		mnt string
		lc  *cluster
		lcl *client.Client
	)
	const nodeID = "node-disk"

	BeforeAll(func() {
		if os.Geteuid() != 0 {
			Skip("the disk watermark e2e mounts a tmpfs and needs root (CI runs as root); run it as root to include it")
		}
		dir := filepath.Join(c.dir, "disk")
		mnt = filepath.Join(dir, "tmpfs")
		Expect(os.MkdirAll(mnt, 0o755)).To(Succeed())
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m"); err != nil {
			Skip(fmt.Sprintf("cannot mount a tmpfs at %s (%v): the disk watermark e2e needs root with CAP_SYS_ADMIN", mnt, err))
		}
		// Registered first, so it runs after the cluster stopped.
		DeferCleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
		lc = labCluster(dir, nil, []string{"node-1"})
		lcl = lc.dial("coord-a")
		DeferCleanup(func() { lcl.Close() })
		n := &proc{name: nodeID, bin: lc.sluice, log: filepath.Join(dir, nodeID+".log"), args: []string{"node",
			"--etcd", lc.etcdURL, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort()),
			"--data-dir", filepath.Join(mnt, "data"), "--node-id", nodeID, "--log-level", "info",
			"--disk-check-interval", "100ms"}}
		n.start()
		lc.nodes = append(lc.nodes, n) // stopped with the cluster
		lc.waitNodes(2)
		// The default watermarks' levels on the 64 MiB tmpfs (85, 90 and
		// 95% used), as free space: node-1 shares the host's disk, which
		// a percentage could put past low or high (a CI host's disk often
		// is 85% used) and refuse it its copy; gigabytes free pass none of
		// these.
		out, err := lc.cli("coord-a", "cluster", "settings", "--disk-watermark-low", "9.6mb", "--disk-watermark-high", "6.4mb", "--disk-watermark-flood-stage", "3.2mb")
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("refuses writes past the flood stage, naming node and disk, and takes them again once space returns", func() {
		// A copy on both data nodes, so node-disk's copy has nowhere to
		// move: past the high watermark the allocator moves copies off a
		// node, and once none is left there the flood-stage block is
		// lifted (no node holding a copy is past high), as Elasticsearch
		// releases read_only_allow_delete. A copy that could move would
		// leave within milliseconds of the flood stage, taking the block
		// with it before a bulk sees it.
		labCreateIndex(lcl, "disk", 1, 1)
		st, err := lc.state("coord-a")
		Expect(err).NotTo(HaveOccurred())
		Expect(shardNodes(st, "disk")).To(ConsistOf("node-1", nodeID))
		bulk := func(from int) (*sluicev1.BulkResponse, error) {
			var items []*sluicev1.BulkItem
			for i := from; i < from+20; i++ {
				items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprint("d", i), Source: []byte(`{"n":1}`)})
			}
			return lcl.Bulk(ctx, &sluicev1.BulkRequest{Index: "disk", Items: items})
		}
		resp, err := bulk(0)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Errors).To(BeFalse())

		// Fill the file system past 96% used, 1 MiB at a time (the node
		// writes beside us; running out of space first is fine too).
		filler := filepath.Join(mnt, "filler")
		f, err := os.Create(filler)
		Expect(err).NotTo(HaveOccurred())
		chunk := make([]byte, 1<<20)
		for {
			var fs syscall.Statfs_t
			Expect(syscall.Statfs(mnt, &fs)).To(Succeed())
			if float64(fs.Blocks-fs.Bavail) > 0.96*float64(fs.Blocks) {
				break
			}
			n := min(int64(len(chunk)), int64(fs.Bavail)*int64(fs.Bsize))
			if _, err := f.Write(chunk[:n]); err != nil {
				Expect(err).To(MatchError(syscall.ENOSPC))
				break
			}
		}
		Expect(f.Close()).To(Succeed())

		var msg string
		Eventually(func() codes.Code {
			_, err := bulk(100)
			msg = status.Convert(err).Message()
			return status.Code(err)
		}, 20*time.Second, 100*time.Millisecond).Should(Equal(codes.ResourceExhausted))
		Expect(msg).To(ContainSubstring("index [disk] refuses writes: disk of node [node-disk] at " + filepath.Join(mnt, "data")))
		Expect(msg).To(ContainSubstring("past the flood-stage disk watermark [3.2mb]"))
		h, err := lcl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"disk"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Indices[0].WriteBlock).To(ContainSubstring("node-disk"))
		out, err := lc.cli("coord-a", "health", "disk")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("disk flood_stage: disk of node [node-disk]"))
		Expect(out).To(ContainSubstring("index disk refuses writes"))

		// Free the space: the block goes by itself.
		Expect(os.Remove(filler)).To(Succeed())
		Eventually(func() error {
			resp, err := bulk(200)
			if err == nil && resp.Errors {
				return fmt.Errorf("item errors: %v", resp.Items[0].Error)
			}
			return err
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		h, err = lcl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"disk"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Indices[0].WriteBlock).To(BeEmpty())
		for _, dn := range h.DiskWatermarkNodes {
			Expect(dn.Id).NotTo(Equal(nodeID), "node-disk is below the watermarks again")
		}
	})
})

// shardNodes are the nodes holding copies of index.
func shardNodes(st *sluicev1.ClusterStateResponse, index string) []string {
	var out []string
	for _, x := range st.Indices {
		if x.Name == index {
			for _, sh := range x.Shards {
				out = append(out, sh.NodeId)
			}
		}
	}
	return out
}
