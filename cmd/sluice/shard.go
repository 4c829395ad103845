package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newShardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "shard",
		Short:   "Shard copies: verify their files",
		GroupID: groupClient,
	}
	cmd.AddCommand(newShardVerifyCmd())
	return cmd
}

func newShardVerifyCmd() *cobra.Command {
	var f clientFlags
	var shard int32
	var deep, files, asJSON bool
	var rate byteSize
	cmd := &cobra.Command{
		Use:   "verify INDEX",
		Short: "Check every file of an index's shard copies now; exits non-zero on damage",
		Long: `Check the shard copies of an index (or of every index an alias names) now,
on the nodes that hold them: every file's checksum in full (what each node's
background scrubber does once a day), and with --deep every segment decoded end
to end (postings against their statistics, norms, doc values, every stored
document; Lucene's CheckIndex). Every copy is checked, replicas too. A
damaged file fails its copy — it stops serving and the reason names the file —
as the scrubber would: a primary's shard turns red; a replica leaves the
in-sync set and recovers again from its primary. A copy that has already failed shows its reason without being read
again.

Each node verifies one copy at a time; --max-bytes-per-sec caps the read rate
on each. Exits non-zero when a copy is damaged, failed or could not be
verified.`,
		Example: `  sluice shard verify books
  sluice shard verify books --shard 2 --deep --files
  sluice shard verify logs --max-bytes-per-sec 50MiB --timeout 1h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &sluicev1.VerifyIndexRequest{Index: args[0], Deep: deep, MaxBytesPerSec: int64(rate)}
			if cmd.Flags().Changed("shard") {
				req.Shard = &shard
			}
			if rate < 0 {
				return fmt.Errorf("--max-bytes-per-sec: must not be negative")
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.VerifyIndex(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), resp); err != nil {
						return err
					}
				} else if err := printVerify(cmd.OutOrStdout(), resp, files); err != nil {
					return err
				}
				return verifyOutcome(resp)
			})
		},
	}
	f.register(cmd, timeoutWhole)
	cmd.PersistentFlags().Lookup("timeout").DefValue = "10m0s"
	f.timeout = 10 * time.Minute
	cmd.Flags().Int32Var(&shard, "shard", 0, "verify only this shard (default: every shard)")
	cmd.Flags().BoolVar(&deep, "deep", false, "also decode every segment end to end (CPU-bound, not throttled)")
	cmd.Flags().BoolVar(&files, "files", false, "list every file checked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().Var(&rate, "max-bytes-per-sec", "cap the checksum read rate on each copy, e.g. 50MiB (default: unlimited)")
	cmd.Flags().Lookup("max-bytes-per-sec").DefValue = "0"
	return cmd
}

func printVerify(out io.Writer, resp *sluicev1.VerifyIndexResponse, files bool) error {
	w := table(out)
	fmt.Fprintln(w, "SHARD\tNODE\tSTATUS\tFILES\tBYTES\tTOOK\tPROBLEM")
	for _, sv := range resp.Shards {
		nfiles, bytes, took := "-", "-", "-"
		if sv.Took != nil {
			nfiles, bytes, took = fmt.Sprint(len(sv.Files)), formatBytes(sv.Bytes), sv.Took.AsDuration().Round(time.Microsecond).String()
		}
		fmt.Fprintf(w, "%s[%d]\t%s\t%s\t%s\t%s\t%s\t%s\n", sv.Index, sv.Shard, orDash(sv.NodeId),
			client.EnumName(sv.Status), nfiles, bytes, took, oneLine(sv.Failure))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, sv := range resp.Shards {
		var lines []string
		for _, fv := range sv.Files {
			st := fv.GetStatus()
			if files || st != sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_OK && st != sluicev1.FileVerificationStatus_FILE_VERIFICATION_STATUS_GONE {
				lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%s", fv.GetName(), formatBytes(fv.GetBytes()),
					client.EnumName(st), oneLine(fv.GetError())))
			}
		}
		for _, s := range sv.Segments {
			if files || s.GetError() != "" {
				st := "ok"
				if s.GetError() != "" {
					st = "corrupt"
				}
				lines = append(lines, fmt.Sprintf("  segment %s\t\t%s\t%s", s.GetName(), st, oneLine(s.GetError())))
			}
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s[%d] on %s:\n", sv.Index, sv.Shard, orDash(sv.NodeId))
		w := table(out)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// verifyOutcome is the command's error: nil when every copy checked clean.
func verifyOutcome(resp *sluicev1.VerifyIndexResponse) error {
	var bad, unverified int
	for _, sv := range resp.Shards {
		switch sv.Status {
		case sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_OK:
		case sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_DAMAGED, sluicev1.ShardVerificationStatus_SHARD_VERIFICATION_STATUS_FAILED:
			bad++
		default:
			unverified++
		}
	}
	switch {
	case bad > 0:
		return fmt.Errorf("%d of %d shard copies damaged or failed (and %d not verified)", bad, len(resp.Shards), unverified)
	case unverified > 0:
		return fmt.Errorf("%d of %d shard copies could not be verified", unverified, len(resp.Shards))
	}
	return nil
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
