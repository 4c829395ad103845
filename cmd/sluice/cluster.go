package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/coordinator/allocator"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newClusterCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "cluster",
		Short:   "Show and change cluster-wide settings (disk watermarks, rebalancing)",
		GroupID: groupClient,
	}
	f.register(cmd, timeoutWhole)
	cmd.AddCommand(newClusterSettingsCmd(&f))
	return cmd
}

// clusterSettingFlags maps flags to ClusterSettings fields.
var clusterSettingFlags = []struct{ flag, field, help string }{
	{"disk-watermark-low", "disk_watermark_low", "past it a node takes no new replicas: a share used (85%) or free space left (20gb); \"\" restores the default"},
	{"disk-watermark-high", "disk_watermark_high", "past it a node takes no copies and its copies are moved away"},
	{"disk-watermark-flood-stage", "disk_watermark_flood_stage", "past it every index with a copy on the node refuses writes until the node is below high again"},
	{"rebalance-enable", "rebalance_enable", "which copies rebalancing may move: all, primaries, replicas or none (drains and full disks move copies whatever it says)"},
}

func newClusterSettingsCmd(f *clientFlags) *cobra.Command {
	var asJSON bool
	var rebalance int32
	values := make([]string, len(clusterSettingFlags))
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Show the cluster settings, or change those given as flags",
		Long: `Show the cluster-wide allocation settings (defaults filled in), or change the
ones given as flags; the others keep their values. Disk watermarks are as
Elasticsearch's cluster.routing.allocation.disk.watermark.*: all shares of the
disk used ("85%", "0.85") or all free spaces ("20gb", "500mb"), low ≤ high ≤
flood stage. --rebalance-enable is Elasticsearch's
cluster.routing.rebalance.enable: which copies the allocator may move to
balance the cluster (all, primaries, replicas, none). What each does:
docs/operations.md.`,
		Example: `  sluice cluster settings
  sluice cluster settings --disk-watermark-low 80% --disk-watermark-high 85% --disk-watermark-flood-stage 90%
  sluice cluster settings --disk-watermark-low ""   # back to the default
  sluice cluster settings --max-concurrent-rebalance 4   # -1: no bound, 0: the default (2)
  sluice cluster settings --rebalance-enable none   # no rebalancing (e.g. during a bulk load)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			update := &sluicev1.ClusterSettings{}
			var mask []string
			for i, s := range clusterSettingFlags {
				if !cmd.Flags().Changed(s.flag) {
					continue
				}
				mask = append(mask, s.field)
				m := update.ProtoReflect()
				m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(s.field)), protoreflect.ValueOfString(values[i]))
			}
			if cmd.Flags().Changed("max-concurrent-rebalance") {
				mask = append(mask, "max_concurrent_rebalance")
				update.MaxConcurrentRebalance = rebalance
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				var cs *sluicev1.ClusterSettings
				if len(mask) == 0 {
					resp, err := c.GetClusterSettings(ctx, &sluicev1.GetClusterSettingsRequest{})
					if err != nil {
						return rpcError(err)
					}
					cs = resp.GetSettings()
				} else {
					resp, err := c.UpdateClusterSettings(ctx, &sluicev1.UpdateClusterSettingsRequest{Settings: update,
						UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
					if err != nil {
						return rpcError(err)
					}
					cs = resp.GetSettings()
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), cs)
				}
				return printClusterSettings(cmd.OutOrStdout(), cs)
			})
		},
	}
	for i, s := range clusterSettingFlags {
		cmd.Flags().StringVar(&values[i], s.flag, "", s.help)
	}
	cmd.Flags().Int32Var(&rebalance, "max-concurrent-rebalance", 0,
		"rebalancing moves under way at once in the cluster (Elasticsearch's cluster_concurrent_rebalance): -1 no bound, 0 the default")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printClusterSettings(out io.Writer, cs *sluicev1.ClusterSettings) error {
	w := table(out)
	fmt.Fprintf(w, "disk watermark low\t%s\n", cs.GetDiskWatermarkLow())
	fmt.Fprintf(w, "disk watermark high\t%s\n", cs.GetDiskWatermarkHigh())
	fmt.Fprintf(w, "disk watermark flood stage\t%s\n", cs.GetDiskWatermarkFloodStage())
	fmt.Fprintf(w, "rebalance enable\t%s\n", cs.GetRebalanceEnable())
	fmt.Fprintf(w, "drained nodes\t%s\n", orDash(strings.Join(cs.GetDrainedNodes(), ",")))
	fmt.Fprintf(w, "max concurrent rebalance\t%s\n", rebalanceBound(cs.GetMaxConcurrentRebalance()))
	return w.Flush()
}

// rebalanceBound is max_concurrent_rebalance in words.
func rebalanceBound(n int32) string {
	switch {
	case n == 0:
		return fmt.Sprintf("%d (default)", allocator.DefaultConcurrentRebalance)
	case n < 0:
		return "no bound"
	}
	return fmt.Sprint(n)
}

func newNodeDrainCmd() *cobra.Command {
	var f clientFlags
	var undo, wait bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain NODE_ID",
		Short: "Drain a data node: place nothing on it and move its shard copies to other nodes",
		Long: `Drain a data node (Elasticsearch's cluster.routing.allocation.exclude._id): the
allocator places no copies on it and moves every copy it holds to other nodes,
a bounded number at a time; each copy's source is dropped only once its new
copy has recovered and is in sync. With --wait the command returns once the
node holds no copies (then it may be taken down), or fails after
--wait-timeout. --undo ends the drain; copies already moved stay where they
are. 'sluice state' shows draining nodes and moves in progress.
docs/operations.md says what works today.`,
		Example: `  sluice node drain node-3 --wait --wait-timeout 30m
  sluice node drain node-3 --undo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wait && f.timeout < waitTimeout+5*time.Second {
				f.timeout = waitTimeout + 5*time.Second
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: args[0], Undrain: undo})
				if err != nil {
					return rpcError(err)
				}
				out := cmd.OutOrStdout()
				if undo {
					fmt.Fprintf(out, "node %s is no longer drained; it holds %d shard copies\n", args[0], resp.Copies)
					return nil
				}
				fmt.Fprintf(out, "draining node %s: %d shard copies to move\n", args[0], resp.Copies)
				if !wait || resp.Copies == 0 {
					return nil
				}
				deadline := time.Now().Add(waitTimeout)
				last := resp.Copies
				for {
					st, err := c.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
					if err != nil {
						return rpcError(err)
					}
					n := copiesOn(st, args[0])
					if n == 0 {
						fmt.Fprintf(out, "node %s holds no shard copies\n", args[0])
						return nil
					}
					if n != last {
						fmt.Fprintf(out, "node %s: %d shard copies left\n", args[0], n)
						last = n
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("node %s still holds %d shard copies after %v (see 'sluice state' for why)", args[0], n, waitTimeout)
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(time.Second):
					}
				}
			})
		},
	}
	f.register(cmd, timeoutWhole)
	cmd.Flags().BoolVar(&undo, "undo", false, "end the drain")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the node holds no shard copies")
	cmd.Flags().DurationVar(&waitTimeout, "wait-timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// copiesOn counts the shard copies assigned to a node in a cluster state.
func copiesOn(st *sluicev1.ClusterStateResponse, node string) int32 {
	var n int32
	for _, x := range st.Indices {
		for _, sh := range x.Shards {
			if sh.NodeId == node {
				n++
			}
		}
	}
	return n
}
