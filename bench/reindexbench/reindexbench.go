// Package reindexbench is experiment 4 of BENCHMARKS.md: copying an index
// on a multi-process cluster (embedded etcd + coordinator, and separate data
// node processes) four ways — (a) scroll + bulk through the coordinator in
// one slice, the baseline every other system ships; (b) the same, sliced and
// in parallel; (c) local: each node copies its source shards into
// co-located destination shards in-process; (d) local into twice the shard
// count (a split, still local thanks to routing shards) — reporting docs/s,
// MB/s, wall time and the ratio to (a), and the raw bulk-indexing rate of
// the same cluster for comparison.
package reindexbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/proccluster"
	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Options configure a run.
type Options struct {
	Binary     string // the sluice binary to run the cluster with
	Nodes      int    // data node processes; default 3
	Shards     int    // source shards; default 3
	Docs       []corpus.Doc
	CorpusDesc string
	Out        string
	Log        io.Writer
}

// Run is one reindex strategy's outcome.
type Run struct {
	Name       string  `json:"name"`
	Mode       string  `json:"mode"`
	Copy       string  `json:"copy"` // documents or segments (local runs)
	Slices     int     `json:"slices"`
	DestShards int     `json:"dest_shards"`
	Docs       int64   `json:"docs"`
	Seconds    float64 `json:"seconds"`
	DocsPerSec float64 `json:"docs_per_s"`
	MBPerSec   float64 `json:"mb_per_s"`
	Ratio      float64 `json:"ratio_to_baseline"`
	ModeChosen string  `json:"mode_chosen"`
	CopyChosen string  `json:"copy_chosen"`
}

// Result is the whole experiment.
type Result struct {
	Corpus       string  `json:"corpus"`
	Nodes        int     `json:"nodes"`
	SourceShards int     `json:"source_shards"`
	Docs         int     `json:"docs"`
	SourceMB     float64 `json:"source_mb"`
	BulkSeconds  float64 `json:"bulk_seconds"`
	BulkDocsPerS float64 `json:"bulk_docs_per_s"`
	Runs         []Run   `json:"runs"`
}

// Execute runs the experiment.
func Execute(ctx context.Context, o Options) (*Result, error) {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Shards <= 0 {
		o.Shards = 3
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "sluice-bench-reindex-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cl, err := proccluster.Start(ctx, proccluster.Options{Binary: o.Binary, Dir: dir, Nodes: o.Nodes})
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	c := cl.Client
	res := &Result{Corpus: o.CorpusDesc, Nodes: o.Nodes, SourceShards: o.Shards, Docs: len(o.Docs)}
	srcBytes := corpus.SourceBytes(o.Docs)
	res.SourceMB = float64(srcBytes) / 1e6
	fmt.Fprintf(o.Log, "cluster: coordinator %s, %d node processes; corpus %s (%.1f MB of JSON)\n", cl.Addr, o.Nodes, o.CorpusDesc, res.SourceMB)

	// The source: routing shards at twice the shard count, so a copy into
	// 2x shards is a split whose every destination shard reads one source
	// shard (run d).
	if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{
		Name: "src",
		Settings: &sluicev1.IndexSettings{NumberOfShards: int32(o.Shards), NumberOfRoutingShards: int32(2 * o.Shards),
			TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC},
		Mapping:             corpus.Mapping(),
		WaitForActiveShards: true,
	}); err != nil {
		return nil, fmt.Errorf("create source: %w", err)
	}
	start := time.Now()
	if err := proccluster.BulkLoad(ctx, c, "src", o.Docs, 0); err != nil {
		return nil, err
	}
	if _, err := c.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{"src"}}); err != nil {
		return nil, err
	}
	res.BulkSeconds = time.Since(start).Seconds()
	res.BulkDocsPerS = float64(len(o.Docs)) / res.BulkSeconds
	fmt.Fprintf(o.Log, "bulk load through the coordinator: %d docs in %.1fs = %.0f docs/s\n", len(o.Docs), res.BulkSeconds, res.BulkDocsPerS)

	runs := []Run{
		{Name: "a: scroll+bulk (baseline)", Mode: "baseline", Slices: 1, DestShards: o.Shards},
		{Name: "b: sliced+parallel scroll+bulk", Mode: "baseline", Slices: o.Shards, DestShards: o.Shards},
		{Name: "c: local, documents", Mode: "local", Copy: "documents", DestShards: o.Shards},
		{Name: "d: local, documents, 2x shards", Mode: "local", Copy: "documents", DestShards: 2 * o.Shards},
		{Name: "e: local, segments", Mode: "local", Copy: "segments", DestShards: o.Shards},
		{Name: "f: local, segments, 2x shards", Mode: "local", Copy: "segments", DestShards: 2 * o.Shards},
	}
	for i := range runs {
		r := &runs[i]
		if err := reindex(ctx, c, r, fmt.Sprintf("dst-%d", i), srcBytes); err != nil {
			return res, fmt.Errorf("%s: %w", r.Name, err)
		}
		if int(r.Docs) != len(o.Docs) {
			return res, fmt.Errorf("%s copied %d docs, want %d", r.Name, r.Docs, len(o.Docs))
		}
		r.Ratio = r.DocsPerSec / runs[0].DocsPerSec
		res.Runs = append(res.Runs, *r)
		fmt.Fprintf(o.Log, "%-32s %7.2fs %9.0f docs/s %7.1f MB/s  x%.1f (mode %s, copy %s)\n", r.Name, r.Seconds, r.DocsPerSec, r.MBPerSec, r.Ratio, r.ModeChosen, r.CopyChosen)
	}
	return res, write(o.Out, res)
}

func reindex(ctx context.Context, c *client.Client, r *Run, dest string, srcBytes int64) error {
	mode := map[string]sluicev1.ReindexMode{"baseline": sluicev1.ReindexMode_REINDEX_MODE_BASELINE,
		"local": sluicev1.ReindexMode_REINDEX_MODE_LOCAL}[r.Mode]
	start := time.Now()
	resp, err := c.Reindex(ctx, &sluicev1.ReindexRequest{
		Source: &sluicev1.ReindexSource{Index: "src"},
		Dest: &sluicev1.ReindexDestination{Index: dest,
			Settings: &sluicev1.IndexSettings{NumberOfShards: int32(r.DestShards)}},
		Slices: int32(r.Slices),
		Mode:   mode,
		// Baseline runs copy documents whatever this says.
		CopyMethod: map[string]sluicev1.ReindexCopyMethod{"segments": sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS,
			"documents": sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS}[r.Copy],
	})
	if err != nil {
		return err
	}
	id := resp.GetTask().GetId()
	for {
		t, err := c.GetTask(ctx, &sluicev1.GetTaskRequest{Id: id, WaitForCompletion: true})
		if err != nil {
			return err
		}
		task := t.GetTask()
		switch task.GetState() {
		case sluicev1.TaskState_TASK_STATE_SUCCEEDED:
			took := time.Since(start)
			st := task.GetReindex()
			r.Docs = st.GetCreated() + st.GetUpdated()
			r.Seconds = took.Seconds()
			r.DocsPerSec = float64(r.Docs) / took.Seconds()
			r.MBPerSec = float64(srcBytes) / 1e6 / took.Seconds()
			r.ModeChosen = st.GetMode().String()
			r.CopyChosen = st.GetCopyMethod().String()
			return nil
		case sluicev1.TaskState_TASK_STATE_FAILED, sluicev1.TaskState_TASK_STATE_CANCELLED:
			return fmt.Errorf("task %s ended %s: %s", id, task.GetState(), task.GetError().GetReason())
		}
	}
}

func write(out string, res *Result) error {
	if out == "" {
		return nil
	}
	if err := report.WriteJSON(out, "reindex.json", res); err != nil {
		return err
	}
	bars := []report.Bar{{Label: "bulk load", Value: res.BulkDocsPerS}}
	for _, r := range res.Runs {
		label := r.Name[:1] + " " + r.Mode
		if r.Copy == "segments" {
			label += " segs"
		}
		bars = append(bars, report.Bar{Label: label + fmt.Sprintf(" %dsh", r.DestShards), Value: r.DocsPerSec})
	}
	return report.BarChart(filepath.Join(out, "reindex-docs-per-s.png"), "Reindex strategies (docs/s)", "docs/s", bars...)
}
