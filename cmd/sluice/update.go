package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/client/bulkindexer"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newUpdateCmd() *cobra.Command {
	var f clientFlags
	var qf queryFlags
	var ids []string
	var inPlace, wait bool
	var slices int32
	var rps float32
	cmd := &cobra.Command{
		Use:     "update INDEX FIELD=VALUE... (--id ID... | --query Q)",
		Short:   "Update fields of documents by id or by query, re-indexing them or in place",
		GroupID: groupClient,
		Args:    cobra.MinimumNArgs(2),
		Long: `Set fields of the documents given by --id (repeatable) or matching --query.
A VALUE is JSON when it parses as JSON (12.5, true, "text", {"a": 1}),
else a string; a dotted FIELD sets a field inside an object.

By default each document gets a partial update (bulk action UPDATE): its
current source is merged with the fields and re-indexed. With --in-place
the fields are set in the columns without re-indexing (UPDATE_DOC_VALUES):
far cheaper, for numeric and keyword fields mapped "index": false,
"doc_values": true;
_source keeps the document as indexed, and search docvalue_fields returns
the current values.

By query with --in-place, an update-by-query task does the work on the
data nodes (each shard's matching documents set in place, no round trip
per document; --slices, --requests-per-second), and the command says its
id and follows it to its end (past --timeout the task goes on: 'sluice
tasks get ID --wait'): a document written or deleted after the task read
it is a version conflict, counted as failed. A partial update by query reads the matching
documents from one point-in-time and updates each by its id (a document
changed or deleted since is updated as it is then, or reported missing).`,
		Example: `  sluice update books --id b1 --id b2 title="A New Title" tags='["x","y"]'
  sluice update products --in-place --query '{"term": {"brand": "acme"}}' price=12.5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(ids) > 0) == qf.set() {
				return errors.New("give either --id or --query (or --proto-json)")
			}
			fields, err := updateFields(args[1:])
			if err != nil {
				return err
			}
			q, err := qf.parse()
			if err != nil {
				return err
			}
			action := sluicev1.BulkAction_BULK_ACTION_UPDATE
			if inPlace {
				action = sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				var st bulkindexer.Stats
				var err error
				if inPlace && len(ids) == 0 {
					st, err = runUpdateByQuery(ctx, c, &sluicev1.UpdateByQueryRequest{Index: args[0], Query: q, DocValues: fields,
						Slices: slices, RequestsPerSecond: rps, Conflicts: sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED}, f.timeout, cmd.ErrOrStderr())
				} else {
					st, err = runUpdate(ctx, c, args[0], action, fields, ids, q, wait, cmd.ErrOrStderr())
				}
				if err != nil {
					return rpcError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d updated, %d unchanged, %d failed\n", st.Updated, st.Noop, st.Failed)
				if st.Failed > 0 {
					return fmt.Errorf("%d documents not updated", st.Failed)
				}
				return nil
			})
		},
	}
	f.register(cmd, timeoutWhole)
	qf.register(cmd, "update documents")
	cmd.Flags().StringArrayVar(&ids, "id", nil, "id of a document to update (repeatable)")
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "set doc-value-only numeric and keyword fields in place instead of re-indexing")
	cmd.Flags().BoolVar(&wait, "wait", false, "return once the updates are visible to search (always so for --in-place --query)")
	cmd.Flags().Int32Var(&slices, "slices", 0, "--in-place --query: slices of the task (0: one per shard)")
	cmd.Flags().Float32Var(&rps, "requests-per-second", 0, "--in-place --query: throttle of the task, documents per second (0: unlimited)")
	return cmd
}

// updateFields builds the fields JSON object from FIELD=VALUE arguments,
// a dotted FIELD as nested objects (so a partial update merges into an
// object rather than adding a dotted key beside it).
func updateFields(args []string) ([]byte, error) {
	root := map[string]any{}
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want FIELD=VALUE", a)
		}
		var v any = val
		if json.Valid([]byte(val)) {
			v = json.RawMessage(val)
		}
		obj, parts := root, strings.Split(name, ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := obj[p].(map[string]any)
			if !ok {
				if _, taken := obj[p]; taken {
					return nil, fmt.Errorf("%q: %s is set to a value and used as an object", a, p)
				}
				next = map[string]any{}
				obj[p] = next
			}
			obj = next
		}
		if _, taken := obj[parts[len(parts)-1]]; taken {
			return nil, fmt.Errorf("%q: field set twice", a)
		}
		obj[parts[len(parts)-1]] = v
	}
	return json.Marshal(root)
}

// runUpdate sends one update item per document — the ids given, or every
// document the query matches in one point-in-time, with its routing —
// through the bulk indexer.
func runUpdate(ctx context.Context, c *client.Client, index string, action sluicev1.BulkAction, fields []byte, ids []string, q *sluicev1.Query, wait bool, errw io.Writer) (bulkindexer.Stats, error) {
	var mu sync.Mutex
	shown := 0
	cfg := bulkindexer.Config{Client: c, Index: index, OnError: func(it *sluicev1.BulkItem, r *sluicev1.BulkItemResult) {
		mu.Lock()
		defer mu.Unlock()
		if shown++; shown <= 20 {
			fmt.Fprintf(errw, "%s: %s\n", it.GetId(), r.GetError().GetReason())
		}
	}}
	if wait {
		cfg.Refresh = sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR
	}
	ix, err := bulkindexer.New(cfg)
	if err != nil {
		return bulkindexer.Stats{}, err
	}
	add := func(id, routing string) error {
		return ix.Add(ctx, &sluicev1.BulkItem{Action: action, Id: id, Routing: routing, Source: fields})
	}
	if len(ids) > 0 {
		for _, id := range ids {
			if err = add(id, ""); err != nil {
				break
			}
		}
	} else {
		err = updateByQuery(ctx, c, index, q, add)
	}
	if cerr := ix.Close(ctx); err == nil {
		err = cerr
	}
	return ix.Stats(), err
}

// runUpdateByQuery starts an update-by-query task, says its id on errw
// first (whatever happens to this command, the task runs) and follows it
// to its end, as `sluice reindex --wait` does: documents updated, and
// version conflicts as failed.
func runUpdateByQuery(ctx context.Context, c *client.Client, req *sluicev1.UpdateByQueryRequest, callTimeout time.Duration, errw io.Writer) (bulkindexer.Stats, error) {
	resp, err := c.UpdateByQuery(ctx, req)
	if err != nil {
		return bulkindexer.Stats{}, err
	}
	id := resp.GetTask().GetId()
	fmt.Fprintf(errw, "task %s started (update-by-query); follow it with: sluice tasks get %s --wait\n", id, id)
	if err := follow(ctx, c, id, callTimeout, io.Discard, errw); err != nil {
		return bulkindexer.Stats{}, err
	}
	got, err := c.GetTask(ctx, &sluicev1.GetTaskRequest{Id: id})
	if err != nil {
		return bulkindexer.Stats{}, err
	}
	r := got.GetTask().GetReindex()
	return bulkindexer.Stats{Updated: r.GetUpdated(), Failed: r.GetVersionConflicts() + r.GetFailures()}, nil
}

// updateByQuery calls add with the id and routing of every document q
// matches, read from one point-in-time.
func updateByQuery(ctx context.Context, c *client.Client, index string, q *sluicev1.Query, add func(id, routing string) error) error {
	pit, err := c.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{index}, KeepAlive: durationpb.New(5 * time.Minute)})
	if err != nil {
		return err
	}
	defer c.ClosePointInTime(context.WithoutCancel(ctx), &sluicev1.ClosePointInTimeRequest{Id: pit.Id})
	return scrollSlice(ctx, c, &sluicev1.ScrollRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}, Query: q, BatchSize: 1000, FetchSource: proto.Bool(false)},
		func(docs []*sluicev1.ScrollDoc) error {
			for _, d := range docs {
				if err := add(d.Id, d.Routing); err != nil {
					return err
				}
			}
			return nil
		})
}
