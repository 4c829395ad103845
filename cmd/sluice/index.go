package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newIndexCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "index",
		Short:   "Create, delete, inspect and list indices",
		GroupID: groupClient,
	}
	f.register(cmd, timeoutWhole)
	cmd.AddCommand(newIndexCreateCmd(&f), newIndexDeleteCmd(&f), newIndexGetCmd(&f), newIndexListCmd(&f), newIndexSetReplicasCmd(&f))
	return cmd
}

func newIndexCreateCmd(f *clientFlags) *cobra.Command {
	var shards, routingShards, replicas int32
	var mappingArg, settingsArg string
	var aliases []string
	var wait bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an index",
		Long: `Create an index. Names follow Elasticsearch's rules (lowercase, no spaces or
\ / * ? " < > | , # :). The routing shard count fixes how documents hash to
shards; make it a multiple of --shards (e.g. 4 shards, 16 routing shards) to be
able to reindex locally into 8 or 16 shards later.

The mapping is Elasticsearch's mapping JSON, given inline or as @file; objects
may nest and flatten to dotted field names. Types: text, keyword, long, double,
date, boolean. Text analyzers: standard (default), cjk, keyword, whitespace,
simple.

--settings takes Elasticsearch's index settings JSON, nested or flat:
number_of_shards, number_of_routing_shards, number_of_replicas,
refresh_interval ("30s", at least "100ms"; "-1" for refresh on demand only),
translog.durability (request or async), translog.sync_interval (at least
100ms), mapping.total_fields.limit (default 1000), mapping.depth.limit (20),
mapping.field_name_length.limit (256 bytes of a field's dotted path), and
Sluice's merge_max_mb_per_sec and indexing_buffer_bytes. --shards,
--routing-shards and --replicas may be given instead, not as well. The
limits every setting and request is held to: docs/limits.md.`,
		Example: `  sluice index create books --shards 3
  sluice index create logs-2026 --shards 4 --routing-shards 16 --alias logs --wait
  sluice index create orders --shards 2 --replicas 1
  sluice index create books --mapping '{"properties":{"title":{"type":"text"},"year":{"type":"long"}}}'
  sluice index create books --mapping @mapping.json
  sluice index create logs --settings '{"index": {"number_of_shards": 4, "refresh_interval": "30s", "translog": {"durability": "async"}}}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			settings := &sluicev1.IndexSettings{}
			if settingsArg != "" {
				data, err := inlineOrFile("settings", settingsArg)
				if err != nil {
					return err
				}
				if settings, err = esjson.ParseSettings(data); err != nil {
					return fmt.Errorf("--settings: %w", err)
				}
				if settings == nil {
					settings = &sluicev1.IndexSettings{}
				}
			}
			for _, fl := range []struct {
				name  string
				value int32
				dst   *int32
			}{{"shards", shards, &settings.NumberOfShards}, {"routing-shards", routingShards, &settings.NumberOfRoutingShards},
				{"replicas", replicas, &settings.NumberOfReplicas}} {
				switch {
				case !cmd.Flags().Changed(fl.name):
					if *fl.dst == 0 {
						*fl.dst = fl.value // the flag's default
					}
				case *fl.dst != 0:
					return fmt.Errorf("--%s and --settings both set it: give one", fl.name)
				default:
					*fl.dst = fl.value
				}
			}
			req := &sluicev1.CreateIndexRequest{Name: args[0], Aliases: aliases, WaitForActiveShards: wait, Settings: settings}
			if mappingArg != "" {
				data, err := inlineOrFile("mapping", mappingArg)
				if err != nil {
					return err
				}
				m, err := esjson.ParseMapping(data)
				if err != nil {
					return fmt.Errorf("--mapping: %w", err)
				}
				req.Mapping = m
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.CreateIndex(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created index %s (uuid %s, %d shards)\n", resp.Index.Name, resp.Index.Uuid, len(resp.Index.Shards))
				if wait && !resp.ShardsAcknowledged {
					fmt.Fprintln(cmd.OutOrStdout(), "warning: not every shard started in time; see `sluice health`")
				}
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&shards, "shards", 1, "number of primary shards (1..1024)")
	cmd.Flags().Int32Var(&routingShards, "routing-shards", 0, "number of routing shards, a multiple of --shards (default: --shards)")
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "number of replica copies of each shard, 0..32 (docs/replication.md)")
	cmd.Flags().StringVar(&mappingArg, "mapping", "", "mapping as Elasticsearch JSON, or @file")
	cmd.Flags().StringVar(&settingsArg, "settings", "", "index settings as Elasticsearch JSON, or @file")
	cmd.Flags().StringSliceVar(&aliases, "alias", nil, "aliases to point at the new index (repeatable)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every shard is started")
	return cmd
}

func newIndexSetReplicasCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "set-replicas INDEX N",
		Short: "Change an index's number of replicas (0..32) on the live index",
		Long: `Change number_of_replicas of a live index (or of the one index an alias points
at). The allocator adds or removes replica copies to follow it: new copies
recover from their primary, each on a node without another copy of the shard;
copies that find no node stay unassigned and the index yellow. 0 drops every
replica. How copies, primary terms and the in-sync set work: docs/replication.md.`,
		Example: `  sluice index set-replicas orders 2
  sluice index set-replicas orders 0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil {
				return fmt.Errorf("number of replicas: want a whole number, got %q", args[1])
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				// The mask sends the value even when it is 0.
				resp, err := c.UpdateIndexSettings(ctx, &sluicev1.UpdateIndexSettingsRequest{Name: args[0],
					Settings:   &sluicev1.IndexSettings{NumberOfReplicas: int32(n)},
					UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"number_of_replicas"}}})
				if err != nil {
					return rpcError(err)
				}
				x := resp.GetIndex()
				fmt.Fprintf(cmd.OutOrStdout(), "index %s: number_of_replicas %d (health %s; see `sluice state` for every copy)\n",
					x.GetName(), x.GetSettings().GetNumberOfReplicas(), client.EnumName(x.GetHealth()))
				return nil
			})
		},
	}
}

func newIndexDeleteCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete an index, its aliases and its data",
		Example: `  sluice index delete books`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: args[0]})
				if err != nil {
					return rpcError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted index %s (uuid %s)\n", args[0], resp.Uuid)
				return nil
			})
		},
	}
}

func newIndexGetCmd(f *clientFlags) *cobra.Command {
	var stats, mappingOnly bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an index's settings, mapping, aliases and routing as JSON",
		Long: `Show an index's settings, mapping, aliases and routing as JSON (the
fields of sluice.v1.IndexInfo, the mapping as Elasticsearch mapping JSON).
--mapping prints only the mapping, which "index create --mapping" takes back.`,
		Example: `  sluice index get books
  sluice index get logs            # an alias pointing at one index works too
  sluice index get books --mapping > mapping.json && sluice index create books-v2 --mapping @mapping.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: args[0], IncludeStats: stats})
				if err != nil {
					return rpcError(err)
				}
				if mappingOnly {
					return printMapping(cmd.OutOrStdout(), resp.Index.GetMapping())
				}
				return printJSON(cmd.OutOrStdout(), resp.Index)
			})
		},
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "include document counts and sizes")
	cmd.Flags().BoolVar(&mappingOnly, "mapping", false, "print only the mapping, as Elasticsearch mapping JSON")
	return cmd
}

// printMapping writes m as indented Elasticsearch mapping JSON.
func printMapping(w io.Writer, m *sluicev1.Mapping) error {
	b, err := esjson.MarshalMapping(readableMapping(m))
	if err != nil {
		return err
	}
	return printIndented(w, b)
}

// readableMapping is m without the index and doc_values flags the
// cluster fills in at their defaults (true; doc_values false on text), so
// it reads as a person writes it.
func readableMapping(m *sluicev1.Mapping) *sluicev1.Mapping {
	m = proto.CloneOf(m)
	for _, f := range m.GetProperties() {
		if f.GetIndex() {
			f.Index = nil
		}
		if f.DocValues != nil && f.GetDocValues() == (f.GetType() != sluicev1.FieldType_FIELD_TYPE_TEXT) {
			f.DocValues = nil
		}
	}
	return m
}

func newIndexListCmd(f *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [PREFIX]",
		Short: "List indices",
		Example: `  sluice index list
  sluice index list logs-`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				req := &sluicev1.ListIndicesRequest{}
				if len(args) == 1 {
					req.Prefix = args[0]
				}
				resp, err := c.ListIndices(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), resp)
				}
				w := table(cmd.OutOrStdout())
				fmt.Fprintln(w, "NAME\tHEALTH\tSHARDS\tREPLICAS\tROUTING SHARDS\tALIASES\tUUID")
				for _, x := range resp.Indices {
					fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", x.Name, client.EnumName(x.Health),
						x.Settings.GetNumberOfShards(), x.Settings.GetNumberOfReplicas(), x.Settings.GetNumberOfRoutingShards(), strings.Join(x.Aliases, ","), x.Uuid)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
