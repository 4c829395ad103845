package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newHealthCmd() *cobra.Command {
	var f clientFlags
	var asJSON bool
	var waitFor string
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:     "health [INDEX...]",
		Short:   "Show cluster health: green / yellow / red per index, with reasons for shards not started",
		GroupID: groupClient,
		Example: `  sluice health
  sluice health books --json
  sluice health --wait-for green --wait-timeout 1m   # exits non-zero if not reached`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &sluicev1.ClusterHealthRequest{Indices: args}
			if waitFor != "" {
				v, err := client.ParseEnum[sluicev1.HealthStatus]("--wait-for", waitFor)
				if err != nil {
					return err
				}
				req.WaitForStatus = v
				req.Timeout = durationpb.New(waitTimeout)
				if f.timeout < waitTimeout+5*time.Second {
					f.timeout = waitTimeout + 5*time.Second
				}
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				h, err := c.ClusterHealth(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				if asJSON {
					err = printJSON(cmd.OutOrStdout(), h)
				} else {
					err = printHealth(cmd.OutOrStdout(), h)
				}
				if err == nil && h.TimedOut {
					err = fmt.Errorf("timed out waiting for %s; status is %s", waitFor, client.EnumName(h.Status))
				}
				return err
			})
		},
	}
	f.register(cmd, timeoutWhole)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVar(&waitFor, "wait-for", "", "wait until the status is at least this: green, yellow or red")
	cmd.Flags().DurationVar(&waitTimeout, "wait-timeout", 30*time.Second, "how long --wait-for waits")
	return cmd
}

func printHealth(out io.Writer, h *sluicev1.ClusterHealthResponse) error {
	moving := ""
	if h.RelocatingShards > 0 {
		moving = fmt.Sprintf(", %d copies moving", h.RelocatingShards)
	}
	fmt.Fprintf(out, "cluster %s: %s, %d data nodes, %d indices%s\n", h.ClusterName,
		client.EnumName(h.Status), h.NumberOfDataNodes, len(h.Indices), moving)
	for _, n := range h.DiskWatermarkNodes {
		fmt.Fprintf(out, "disk %s: %s\n", client.EnumName(n.DiskWatermark), n.DiskReason)
	}
	if len(h.Indices) == 0 {
		return nil
	}
	w := table(out)
	fmt.Fprintln(w, "\nINDEX\tSTATUS\tSHARDS\tACTIVE\tNOT STARTED")
	for _, ih := range h.Indices {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\n", ih.Index, client.EnumName(ih.Status),
			len(ih.Shards), ih.ActivePrimaryShards, ih.UnassignedShards)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, ih := range h.Indices {
		if ih.WriteBlock != "" {
			fmt.Fprintf(out, "index %s refuses writes: %s\n", ih.Index, ih.WriteBlock)
		}
	}
	var moves []string
	for _, ih := range h.Indices {
		for _, sh := range ih.Shards {
			if sh.Move != "" {
				moves = append(moves, fmt.Sprintf("%s[%d]\t%s\t%s\t%s", ih.Index, sh.Shard, copyRole(sh), sh.NodeId, sh.Move))
			}
		}
	}
	if len(moves) > 0 {
		w := table(out)
		fmt.Fprintln(w, "\nSHARD\tCOPY\tNODE\tMOVE")
		for _, m := range moves {
			fmt.Fprintln(w, m)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	var problems []string
	for _, ih := range h.Indices {
		for _, sh := range ih.Shards {
			if sh.State != sluicev1.ShardState_SHARD_STATE_STARTED {
				node := sh.NodeId
				if node == "" {
					node = "-"
				}
				problems = append(problems, fmt.Sprintf("%s[%d]\t%s\t%s\t%s\t%s", ih.Index, sh.Shard, copyRole(sh),
					client.EnumName(sh.State), node, sh.Reason))
			}
		}
	}
	if len(problems) > 0 {
		w := table(out)
		fmt.Fprintln(w, "\nSHARD\tCOPY\tSTATE\tNODE\tREASON")
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		return w.Flush()
	}
	return nil
}

func newStateCmd() *cobra.Command {
	var f clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "state",
		Short:   "Show the cluster state: nodes, indices with their routing, aliases, the allocator",
		GroupID: groupClient,
		Example: `  sluice state
  sluice state --json | jq '.indices[].shards'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				st, err := c.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
				if err != nil {
					return rpcError(err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), st)
				}
				return printState(cmd.OutOrStdout(), st)
			})
		},
	}
	f.register(cmd, timeoutWhole)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printState(out io.Writer, st *sluicev1.ClusterStateResponse) error {
	fmt.Fprintf(out, "cluster %s at revision %d; allocator: %s\n\n", st.ClusterName, st.Revision, orDash(st.Allocator))
	w := table(out)
	fmt.Fprintln(w, "NODE\tADDRESS\tZONE\tCOPIES\tDISK FREE\tDISK\tDRAINING\tSHUTTING DOWN\tVERSION")
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", n.Id, n.Address, orDash(n.Zone), n.Copies, diskFree(n),
			client.EnumName(n.DiskWatermark), yesNo(n.Draining), yesNo(n.ShuttingDown), n.Version)
	}
	fmt.Fprintln(w, "\nINDEX\tSHARD\tCOPY\tNODE\tSTATE\tIN SYNC\tTERM\tALLOCATION\tREASON")
	for _, x := range st.Indices {
		for _, sh := range x.Shards {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", x.Name, sh.Shard, copyRole(sh), orDash(sh.NodeId),
				client.EnumName(sh.State), yesNo(sh.InSync), sh.PrimaryTerm, orDash(sh.AllocationId), strings.Join(notes(sh), "; "))
		}
	}
	for _, x := range st.Indices {
		if x.WriteBlock != "" {
			fmt.Fprintf(w, "\nindex %s refuses writes: %s\n", x.Name, x.WriteBlock)
		}
	}
	if len(st.Aliases) > 0 {
		fmt.Fprintln(w, "\nALIAS\tINDICES\tWRITE INDEX")
		for _, a := range st.Aliases {
			fmt.Fprintf(w, "%s\t%s\t%s\n", a.Alias, strings.Join(a.Indices, ","), orDash(a.WriteIndex))
		}
	}
	return w.Flush()
}

// notes are what a person reads about a copy: why it is not started, and
// its move.
func notes(sh *sluicev1.ShardRouting) []string {
	var out []string
	if sh.Reason != "" {
		out = append(out, sh.Reason)
	}
	if sh.RelocatingFromNode != "" && !strings.Contains(sh.Reason, "moving here") {
		out = append(out, "moving here from node ["+sh.RelocatingFromNode+"]")
	}
	if sh.Move != "" {
		out = append(out, "move: "+sh.Move)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func diskFree(n *sluicev1.NodeInfo) string {
	if n.DiskTotalBytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f GiB (%.0f%%)", float64(n.DiskFreeBytes)/(1<<30), 100*float64(n.DiskFreeBytes)/float64(n.DiskTotalBytes))
}

// copyRole names a shard copy's role.
func copyRole(sh *sluicev1.ShardRouting) string {
	if sh.Primary {
		return "primary"
	}
	return "replica"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
