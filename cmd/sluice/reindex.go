package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func newReindexCmd() *cobra.Command {
	var f clientFlags
	var qf queryFlags
	var source, dest, slices, swapAlias, mode, opType, destRouting, copyMethod, destExists string
	var shards, routingShards int32
	var rps float32
	var maxDocs int64
	var proceed, wait bool
	cmd := &cobra.Command{
		Use:     "reindex --source A --dest B",
		Short:   "Copy an index into another (new shard count, mapping) as a persistent task",
		GroupID: groupClient,
		Args:    cobra.NoArgs,
		Long: `Copy the documents of an index into another as a task persisted in the
cluster: it survives coordinator and data node restarts, resuming from its
checkpoints. A destination that does not exist is created from the source's
mapping and settings, with --shards on top; an existing empty one is used as
it is. A destination that already holds documents is refused unless
--dest-exists says what to do with them: append copies into it (documents
with the same id are overwritten, or conflicts with --op-type create);
replace deletes it first (not when an alias points to it: readers would
lose it until the copy ends — reindex into a new index and --swap-alias).

Modes: local copies each source shard into destination shards on the same node,
in-process (possible when the destination's shard count is a multiple of the
source's dividing its routing shards); remote streams documents node to node;
baseline scrolls and bulks through the coordinator as other systems do; auto
(default) picks local when it can, else remote.

What a local reindex copies (--copy): segments adds each source shard's
committed segments to its co-located destination shards (hard links, nothing
re-analysed; a split masks the documents that route elsewhere) — possible in
local mode into an empty destination with the source's mapping, keeping
routing, without --query, --max-docs, --rps or more slices than shards;
documents re-indexes every document; auto (default) copies segments when it
can, else documents, and the task says why (sluice tasks get).

Documents keep the routing they were indexed with (--routing keep), so a get
or search with it finds them in the destination; --routing discard routes
them by id, --routing =VALUE gives them all VALUE.

The task id is printed first. With --wait the command then shows the
progress and returns when the task ends (Ctrl-C stops waiting, not the
task: see 'sluice tasks').`,
		Example: `  sluice reindex --source books --dest books-v2 --wait
  sluice reindex --source logs --dest logs-8 --shards 8 --slices auto --rps 5000
  sluice reindex --source books --dest fiction --query '{"term":{"genre":"fiction"}}' --swap-alias current-books --wait
  sluice reindex --source books --dest books-v2 --dest-exists replace --wait`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: source},
				Dest:              &sluicev1.ReindexDestination{Index: dest, Routing: destRouting},
				RequestsPerSecond: rps, MaxDocs: maxDocs, SwapAlias: swapAlias}
			if shards != 0 || routingShards != 0 {
				req.Dest.Settings = &sluicev1.IndexSettings{NumberOfShards: shards, NumberOfRoutingShards: routingShards}
			}
			if slices != "auto" && slices != "" {
				var n int32
				if _, err := fmt.Sscan(slices, &n); err != nil || n < 1 {
					return fmt.Errorf("--slices must be auto or a positive number, got %q", slices)
				}
				req.Slices = n
			}
			var err error
			if req.Mode, err = client.ParseEnum[sluicev1.ReindexMode]("--mode", mode); err != nil {
				return err
			}
			if req.CopyMethod, err = client.ParseEnum[sluicev1.ReindexCopyMethod]("--copy", copyMethod); err != nil {
				return err
			}
			if req.Dest.OpType, err = client.ParseEnum("--op-type", opType,
				sluicev1.BulkAction_BULK_ACTION_INDEX, sluicev1.BulkAction_BULK_ACTION_CREATE); err != nil {
				return err
			}
			if proceed {
				req.Conflicts = sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED
			}
			q, err := qf.parse()
			if err != nil {
				return err
			}
			req.Source.Query = q
			if destExists != "" && destExists != "append" && destExists != "replace" {
				return fmt.Errorf("--dest-exists must be append or replace, got %q", destExists)
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				if err := checkDest(ctx, c, source, dest, destExists, cmd.ErrOrStderr()); err != nil {
					return err
				}
				resp, err := c.Reindex(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				// The id first: whatever happens to this command, the task runs.
				started := cmd.OutOrStdout()
				if wait {
					started = cmd.ErrOrStderr() // with the progress; the summary is the output
				}
				fmt.Fprintf(started, "task %s started (%s); follow it with: sluice tasks get %s --wait\n", resp.Task.Id,
					method(resp.Task.GetReindex()), resp.Task.Id)
				if !wait {
					return nil
				}
				return follow(cmd.Context(), c, resp.Task.Id, f.timeout, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	f.register(cmd, timeoutCalls)
	cmd.Flags().StringVar(&source, "source", "", "source index or alias (required)")
	cmd.Flags().StringVar(&dest, "dest", "", "destination index (required); created if missing")
	cmd.Flags().Int32Var(&shards, "shards", 0, "shard count of a created destination (default: the source's)")
	cmd.Flags().Int32Var(&routingShards, "routing-shards", 0, "routing shard count of a created destination (default: the source's when local reindex allows it)")
	cmd.Flags().StringVar(&slices, "slices", "auto", "slices: auto (one per source shard) or a number (more subdivides shards)")
	cmd.Flags().Float32Var(&rps, "rps", 0, "throttle in documents per second over the whole task (0: unlimited)")
	qf.register(cmd, "only documents")
	cmd.Flags().StringVar(&swapAlias, "swap-alias", "", "after a verified success, point this alias at the destination only")
	cmd.Flags().StringVar(&mode, "mode", "auto", "auto, local, remote or baseline")
	cmd.Flags().StringVar(&copyMethod, "copy", "auto", "auto, segments (link the source's segments, nothing re-analysed) or documents")
	cmd.Flags().StringVar(&opType, "op-type", "index", "index (overwrite) or create (existing ids are conflicts)")
	cmd.Flags().StringVar(&destRouting, "routing", "keep", "keep (each document's own routing), discard (route by id) or =VALUE")
	cmd.Flags().BoolVar(&proceed, "proceed-on-conflicts", false, "count conflicts and go on instead of failing")
	cmd.Flags().Int64Var(&maxDocs, "max-docs", 0, "copy at most this many documents (0: all)")
	cmd.Flags().BoolVar(&wait, "wait", false, "show progress and wait for the task to end")
	cmd.Flags().StringVar(&destExists, "dest-exists", "", "when --dest already holds documents: append (copy into it) or replace (delete it first); default: refuse")
	_ = cmd.MarkFlagRequired("source")
	_ = cmd.MarkFlagRequired("dest")
	return cmd
}

// checkDest refuses to copy into an existing index that holds documents
// (the result would mix old and new) unless --dest-exists says what to
// do: append copies into it; replace deletes it first, so the reindex
// creates it afresh. An empty existing destination (created beforehand
// with its own mapping) is used as it is.
//
// The check and the reindex are two calls; an index filling up between
// them is not caught (the API has no condition for it yet).
func checkDest(ctx context.Context, c *client.Client, source, dest, destExists string, info io.Writer) error {
	resp, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: dest, IncludeStats: true})
	switch {
	case status.Code(err) == codes.NotFound:
		return nil // the reindex creates it
	case err != nil:
		return rpcError(err)
	}
	x := resp.GetIndex()
	if x.GetName() != dest {
		return fmt.Errorf("destination %s is an alias of index %s; a reindex writes into an index: --dest %s", dest, x.GetName(), x.GetName())
	}
	what := "index " + dest
	if len(x.GetAliases()) > 0 {
		what += fmt.Sprintf(" (which alias %s points to)", strings.Join(x.GetAliases(), ", "))
	}
	if x.GetDocsCount() == 0 || destExists == "append" {
		return nil
	}
	if destExists == "" {
		return fmt.Errorf("destination %s already holds %d documents; say what to do with them: "+
			"--dest-exists append copies into it (documents with the same id are overwritten, see --op-type), "+
			"--dest-exists replace deletes it first", what, x.GetDocsCount())
	}
	// replace
	if len(x.GetAliases()) > 0 {
		return fmt.Errorf("--dest-exists replace would delete %s and leave readers of the alias without it until the copy ends; "+
			"reindex into a new index and move the alias with --swap-alias", what)
	}
	src, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: source})
	if err == nil && src.GetIndex().GetName() == x.GetName() {
		return fmt.Errorf("--dest-exists replace would delete the source, %s", what)
	}
	if _, err := c.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: x.GetName()}); err != nil {
		return rpcError(err)
	}
	fmt.Fprintf(info, "deleted index %s (%d documents, uuid %s): --dest-exists replace\n", x.GetName(), x.GetDocsCount(), x.GetUuid())
	return nil
}

// follow polls a task until it ends, drawing its progress on errw (one
// line redrawn on a terminal; elsewhere a line when the phase changes and
// every 10 s); a task that did not succeed is an error. Each poll is
// bounded by callTimeout, the wait is not.
func follow(ctx context.Context, c *client.Client, id string, callTimeout time.Duration, out, errw io.Writer) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	tty := isTerminal(errw)
	lastPhase, lastPrint := "", time.Time{}
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := c.GetTask(cctx, &sluicev1.GetTaskRequest{Id: id})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return stoppedWaiting(errw, id, tty)
			}
			return rpcError(err)
		}
		t := resp.Task
		line, phase := progressLine(t)
		switch {
		case tty:
			fmt.Fprintf(errw, "\r%s", line)
		case phase != lastPhase || time.Since(lastPrint) >= 10*time.Second || terminal(t.State):
			fmt.Fprintln(errw, strings.TrimRight(line, " "))
			lastPhase, lastPrint = phase, time.Now()
		}
		if terminal(t.State) {
			if tty {
				fmt.Fprintln(errw)
			}
			fmt.Fprintln(out, summary(t))
			if t.State != sluicev1.TaskState_TASK_STATE_SUCCEEDED {
				return fmt.Errorf("task %s %s: %s", t.Id, client.EnumName(t.State), t.GetError().GetReason())
			}
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return stoppedWaiting(errw, id, tty)
		}
	}
}

func stoppedWaiting(errw io.Writer, id string, tty bool) error {
	if tty {
		fmt.Fprintln(errw)
	}
	return fmt.Errorf("stopped waiting; the task goes on: sluice tasks get %s", id)
}

// isTerminal says whether w is a terminal, where a progress line is
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func terminal(s sluicev1.TaskState) bool {
	return s == sluicev1.TaskState_TASK_STATE_SUCCEEDED || s == sluicev1.TaskState_TASK_STATE_FAILED || s == sluicev1.TaskState_TASK_STATE_CANCELLED
}

func copied(t *sluicev1.Task) int64 {
	var n int64
	for _, s := range t.GetReindex().GetSlices() {
		n += s.Copied
	}
	return n
}

// progressLine renders a task's progress and names its phase: "starting"
// until the slices report what they copy, then its state under
// "[=====>     ]  45.2%  1234/2730 docs  3400 docs/s  ETA 4s  running".
func progressLine(t *sluicev1.Task) (line, phase string) {
	const width = 30
	r := t.GetReindex()
	done, total := copied(t), r.GetTotal()
	elapsed := ""
	if t.GetStartTime() != nil {
		elapsed = "  " + time.Since(t.GetStartTime().AsTime()).Round(time.Second).String()
	}
	if !terminal(t.State) && total == 0 && done == 0 {
		// Slices report their totals as they start on the nodes (a
		// segment copy when it is done): until then there is no bar.
		return fmt.Sprintf("%-78s", fmt.Sprintf("%s: %d slices (%s), no counts reported yet%s",
			client.EnumName(t.State), len(r.GetSlices()), method(r), elapsed)), "starting"
	}
	frac := 0.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	} else if t.State == sluicev1.TaskState_TASK_STATE_SUCCEEDED {
		frac = 1
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	eta := "-"
	if r.GetEta() != nil {
		eta = r.GetEta().AsDuration().Round(time.Second).String()
	}
	phase = client.EnumName(t.State)
	return fmt.Sprintf("[%s] %5.1f%%  %d/%d docs  %.0f docs/s  ETA %s  %-10s", bar, 100*frac, done, total,
		r.GetDocsPerSecond(), eta, phase), phase
}

func summary(t *sluicev1.Task) string {
	r := t.GetReindex()
	took := "-"
	if t.EndTime != nil && t.StartTime != nil {
		took = t.EndTime.AsTime().Sub(t.StartTime.AsTime()).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s: %s in %s (%s) — created %d, updated %d, conflicts %d, failures %d of %d",
		t.Id, client.EnumName(t.State), took, method(r),
		r.GetCreated(), r.GetUpdated(), r.GetVersionConflicts(), r.GetFailures(), r.GetTotal())
}

// method renders "local mode, segments" or "local mode, documents: why".
func method(r *sluicev1.ReindexStatus) string {
	s := client.EnumName(r.GetMode()) + " mode"
	if r.GetCopyMethod() != sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_UNSPECIFIED {
		s += ", " + client.EnumName(r.GetCopyMethod())
	}
	if r.GetCopyMethodReason() != "" {
		s += ": " + r.GetCopyMethodReason()
	}
	return s
}

func newTasksCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "tasks",
		Short:   "List, inspect, cancel and rethrottle tasks (reindex)",
		GroupID: groupClient,
	}
	f.register(cmd, timeoutCalls)
	var states []string
	list := &cobra.Command{
		Use:   "list",
		Short: "List tasks, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &sluicev1.ListTasksRequest{}
			for _, s := range states {
				v, err := client.ParseEnum[sluicev1.TaskState]("--state", s)
				if err != nil {
					return err
				}
				req.States = append(req.States, v)
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListTasks(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				w := table(cmd.OutOrStdout())
				fmt.Fprintln(w, "ID\tSTATE\tMODE\tPROGRESS\tDOCS/S\tDESCRIPTION")
				for _, t := range resp.Tasks {
					progress := fmt.Sprintf("%d/%d", copied(t), t.GetReindex().GetTotal())
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.0f\t%s\n", t.Id, client.EnumName(t.State),
						client.EnumName(t.GetReindex().GetMode()), progress, t.GetReindex().GetDocsPerSecond(), t.Description)
				}
				return w.Flush()
			})
		},
	}
	list.Flags().StringSliceVar(&states, "state", nil, "only tasks in these states (pending, running, verifying, succeeded, failed, cancelled)")
	var wait bool
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a task with per-slice progress (--wait: follow it to its end)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				if wait {
					return follow(cmd.Context(), c, args[0], f.timeout, cmd.OutOrStdout(), cmd.ErrOrStderr())
				}
				resp, err := c.GetTask(ctx, &sluicev1.GetTaskRequest{Id: args[0]})
				if err != nil {
					return rpcError(err)
				}
				return printJSON(cmd.OutOrStdout(), resp.Task)
			})
		},
	}
	get.Flags().BoolVar(&wait, "wait", false, "show progress until the task ends")
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a task (it stops promptly; what was copied stays)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				if _, err := c.CancelTask(ctx, &sluicev1.CancelTaskRequest{Id: args[0]}); err != nil {
					return rpcError(err)
				}
				resp, err := c.GetTask(ctx, &sluicev1.GetTaskRequest{Id: args[0], WaitForCompletion: true, Timeout: durationpb.New(f.timeout / 2)})
				if err != nil {
					return rpcError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "task %s: %s\n", args[0], client.EnumName(resp.Task.State))
				return nil
			})
		},
	}
	var rps float32
	rethrottle := &cobra.Command{
		Use:   "rethrottle ID --rps N",
		Short: "Change a running task's documents per second (0: unlimited), at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RethrottleTask(ctx, &sluicev1.RethrottleTaskRequest{Id: args[0], RequestsPerSecond: rps})
				if err != nil {
					return rpcError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "task %s: requests per second %v\n", resp.Task.Id, resp.Task.GetReindex().GetRequestsPerSecond())
				return nil
			})
		},
	}
	rethrottle.Flags().Float32Var(&rps, "rps", 0, "documents per second over the whole task (0: unlimited)")
	_ = rethrottle.MarkFlagRequired("rps")
	cmd.AddCommand(list, get, cancel, rethrottle)
	return cmd
}
