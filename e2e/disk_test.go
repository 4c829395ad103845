package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The disk suite gives a 4th data node a real, small file system (a 64 MiB
// tmpfs the test mounts, so it needs root, as CI has) and fills it: past
// the flood stage every index with a copy on the node refuses writes with
// RESOURCE_EXHAUSTED naming the node and its disk; with the space freed
// below the high watermark the block goes by itself and writes succeed.
var _ = Describe("disk watermarks on a real file system", Ordered, func() {
	ctx := context.Background()
	var mnt string
	var n *proc
	const nodeID = "node-disk"

	BeforeAll(func() {
		if os.Geteuid() != 0 {
			Skip("the disk watermark e2e mounts a tmpfs and needs root (CI runs as root); run it as root to include it")
		}
		mnt = filepath.Join(c.dir, "tmpfs")
		Expect(os.MkdirAll(mnt, 0o755)).To(Succeed())
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m"); err != nil {
			Skip(fmt.Sprintf("cannot mount a tmpfs at %s (%v): the disk watermark e2e needs root with CAP_SYS_ADMIN", mnt, err))
		}
		DeferCleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
		// The default watermarks for this suite (the cluster starts with
		// watermarks no disk passes), put back after it.
		out, err := c.cli(coord, "cluster", "settings", "--disk-watermark-low", "", "--disk-watermark-high", "", "--disk-watermark-flood-stage", "")
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() {
			out, err := c.cli(coord, "cluster", "settings", "--disk-watermark-low", "1b", "--disk-watermark-high", "1b", "--disk-watermark-flood-stage", "1b")
			Expect(err).NotTo(HaveOccurred(), out)
		})
		n = &proc{name: nodeID, bin: c.sluice, log: filepath.Join(c.dir, nodeID+".log"), args: []string{"node",
			"--etcd", c.etcdURL, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort()),
			"--data-dir", filepath.Join(mnt, "data"), "--node-id", nodeID, "--log-level", "info",
			"--disk-check-interval", "100ms"}}
		n.start()
		// node-disk joins the suite's cluster, so the allocator may move
		// other specs' copies onto it — primaries of replicas=0 indices
		// among them. It leaves as an operator removes a node: drained
		// first, so nothing is left red behind it.
		DeferCleanup(func() {
			out, err := c.cli(coord, "node", "drain", nodeID, "--wait", "--wait-timeout", "2m")
			Expect(err).NotTo(HaveOccurred(), out)
			n.kill(syscall.SIGTERM)
			out, err = c.cli(coord, "node", "drain", nodeID, "--undo")
			Expect(err).NotTo(HaveOccurred(), out)
		})
		Eventually(func() bool {
			st, err := c.state(coord)
			return err == nil && slices.ContainsFunc(st.Nodes, func(n *sluicev1.NodeInfo) bool { return n.Id == nodeID })
		}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "node-disk registered")
	})

	It("refuses writes past the flood stage, naming node and disk, and takes them again once space returns", func() {
		// A copy on every data node, so node-disk's copy has nowhere to
		// move: past the high watermark the allocator moves copies off a
		// node, and once none is left there the flood-stage block is
		// lifted (no node holding a copy is past high), as Elasticsearch
		// releases read_only_allow_delete. A copy that could move would
		// leave within milliseconds of the flood stage, taking the block
		// with it before a bulk sees it.
		st, err := c.state(coord)
		Expect(err).NotTo(HaveOccurred())
		live := int32(0)
		for _, dn := range st.Nodes {
			if dn.Live {
				live++
			}
		}
		_, err = cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "disk", WaitForActiveShards: true,
			Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: live - 1}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = cl.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "disk"}) })
		waitGreen("disk")
		st, err = c.state(coord)
		Expect(err).NotTo(HaveOccurred())
		Expect(shardNodes(st, "disk")).To(ContainElement(nodeID))
		bulk := func(from int) (*sluicev1.BulkResponse, error) {
			var items []*sluicev1.BulkItem
			for i := from; i < from+20; i++ {
				items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprint("d", i), Source: []byte(`{"n":1}`)})
			}
			return cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "disk", Items: items})
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
		Expect(msg).To(ContainSubstring("past the flood-stage disk watermark [95%]"))
		h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"disk"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Indices[0].WriteBlock).To(ContainSubstring("node-disk"))
		out, err := c.cli(coord, "health", "disk")
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
		h, err = cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"disk"}})
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
