package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newClusterCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "cluster",
		Short:   "Show and change cluster-wide settings (disk watermarks)",
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
}

func newClusterSettingsCmd(f *clientFlags) *cobra.Command {
	var asJSON bool
	values := make([]string, len(clusterSettingFlags))
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Show the cluster settings, or change those given as flags",
		Long: `Show the cluster-wide allocation settings (defaults filled in), or change the
ones given as flags; the others keep their values. Disk watermarks are as
Elasticsearch's cluster.routing.allocation.disk.watermark.*: all shares of the
disk used ("85%", "0.85") or all free spaces ("20gb", "500mb"), low ≤ high ≤
flood stage. What each does: docs/operations.md.`,
		Example: `  sluice cluster settings
  sluice cluster settings --disk-watermark-low 80% --disk-watermark-high 85% --disk-watermark-flood-stage 90%
  sluice cluster settings --disk-watermark-low ""   # back to the default`,
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printClusterSettings(out io.Writer, cs *sluicev1.ClusterSettings) error {
	w := table(out)
	fmt.Fprintf(w, "disk watermark low\t%s\n", cs.GetDiskWatermarkLow())
	fmt.Fprintf(w, "disk watermark high\t%s\n", cs.GetDiskWatermarkHigh())
	fmt.Fprintf(w, "disk watermark flood stage\t%s\n", cs.GetDiskWatermarkFloodStage())
	return w.Flush()
}
