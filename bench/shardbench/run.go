package shardbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sluice-search/sluice/bench/report"
)

// Options selects what Run does.
type Options struct {
	Config
	Threads []int // indexing goroutine counts; default 1, 2, 4
	// SourceRuns also indexes with the whole JSON stored, at these thread
	// counts (default 2).
	SourceRuns []int
	NRT        NRTConfig
	// NRTThrottles runs the NRT experiment once per merge throttle setting
	// (see NRTConfig.MergeThrottle); default "off" then "auto", to show
	// what throttling does to reopen spikes.
	NRTThrottles []string
	SkipNRT      bool
	// Query runs the query experiment on the 2-goroutine index when it has
	// terms.
	Query QueryConfig
	Out   string    // results directory
	Log   io.Writer // progress lines
}

// Results is everything Run measured.
type Results struct {
	Corpus string        `json:"corpus"`
	Index  []IndexResult `json:"index"`
	NRT    []NRTResult   `json:"nrt,omitempty"`
	Query  []QueryClass  `json:"query,omitempty"`
}

// Run performs experiments 1 and 2 and writes results.json and plots to
// o.Out.
func Run(ctx context.Context, o Options) (*Results, error) {
	if len(o.Threads) == 0 {
		o.Threads = []int{1, 2, 4}
	}
	if o.SourceRuns == nil {
		o.SourceRuns = []int{2}
	}
	if o.RAMBufferMB <= 0 {
		o.RAMBufferMB = 256
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(o.Out, "scratch")
	}
	defer os.RemoveAll(o.Dir)
	res := &Results{Corpus: o.CorpusDesc}
	fmt.Fprintf(o.Log, "corpus: %s, %.1f MB of text\n", o.CorpusDesc, float64(textBytes(o.Docs))/1e6)

	type run struct {
		full    bool
		threads int
	}
	var runs []run // a goroutine count of 0 means no such run
	for _, t := range o.Threads {
		if t > 0 {
			runs = append(runs, run{false, t})
		}
	}
	for _, t := range o.SourceRuns {
		if t > 0 {
			runs = append(runs, run{true, t})
		}
	}
	nrtSrc := ""
	for _, r := range runs {
		cfg := o.Config
		cfg.FullSource = r.full
		dir := IndexDir(o.Dir, r.full, r.threads)
		os.RemoveAll(dir)
		ir, err := RunIndex(ctx, cfg, r.threads, dir)
		if err != nil {
			return res, fmt.Errorf("index %s with %d goroutines: %w", schemaName(r.full), r.threads, err)
		}
		res.Index = append(res.Index, ir)
		fmt.Fprintf(o.Log, "index %-11s threads=%d: %.0f docs/s, %.1f MB/s, %.1fs to commit, %d flushes, %d segments, %.0f MB index, peak RSS %.0f MB (+%.0f MB over corpus)\n",
			ir.Schema, ir.Threads, ir.DocsPerSec, ir.MBPerSec, ir.SecondsCommit, ir.Flushes, ir.Segments, ir.IndexMB, ir.PeakRSSMB, ir.PeakOverCorpusMB)
		if !r.full && (nrtSrc == "" || r.threads == 2) {
			nrtSrc = dir
		}
	}
	if len(o.Query.Terms) > 0 && nrtSrc != "" {
		qs, err := RunQueries(ctx, o.Config, o.Query, nrtSrc)
		if err != nil {
			return res, fmt.Errorf("query: %w", err)
		}
		res.Query = qs
		for _, q := range qs {
			fmt.Fprintf(o.Log, "query %-4s top-10: p50 %.1f µs, p99 %.1f µs (%d samples, %d hits)\n", q.Class, q.P50us, q.P99us, q.Samples, q.Hits)
		}
	}
	if len(o.NRTThrottles) == 0 {
		o.NRTThrottles = []string{"off", "auto"}
	}
	for _, throttle := range o.NRTThrottles {
		if o.SkipNRT || nrtSrc == "" {
			break
		}
		cfg := o.Config
		cfg.FullSource = false
		nc := o.NRT
		nc.MergeThrottle = throttle
		nc.setDefaults()
		fmt.Fprintf(o.Log, "nrt (merge throttle %s, merges yield to refresh: %t): updating at %.1f MB/s for %s, refresh every second, searching body:%s\n",
			throttle, !nc.NoMergeYield, nc.RateMB, nc.Duration, nc.Term)
		nr, err := RunNRT(ctx, cfg, nc, nrtSrc)
		if err != nil {
			return res, fmt.Errorf("nrt (merge throttle %s): %w", throttle, err)
		}
		res.NRT = append(res.NRT, nr)
		fmt.Fprintf(o.Log, "nrt (merge throttle %s): reopen %s; %.0f QPS; %.0f updates/s (%.2f MB/s); %d segments at end; merges %s, %s MB, throttled %s, paused for %s of %s refreshes for %s; other processes used %.2f cores; quiet seconds: reopen %s\n",
			throttle, nr.Reopen, nr.QPS, nr.UpdateDocsS, nr.UpdateMBs, nr.SegmentsEnd,
			nr.Engine["merges_done"], mb(nr.Engine["merged_bytes"]), nr.Engine["merge_throttled"],
			nr.Engine["merge_yields"], nr.Engine["refreshes"], nr.Engine["merge_yield_time"], nr.ForeignCPU, nr.ReopenQuiet)
	}
	return res, writeResults(o.Out, res)
}

func writeResults(out string, res *Results) error {
	if err := report.WriteJSON(out, "shard.json", res); err != nil {
		return err
	}
	var bars []report.Bar
	for _, ir := range res.Index {
		bars = append(bars, report.Bar{Label: fmt.Sprintf("%s t%d", ir.Schema, ir.Threads), Value: ir.DocsPerSec})
	}
	if len(bars) > 0 {
		if err := report.BarChart(filepath.Join(out, "index-docs-per-s.png"), "Bulk indexing, one shard", "docs/s", bars...); err != nil {
			return err
		}
	}
	if len(res.NRT) == 0 {
		return nil
	}
	var reopen, qps []report.Series
	for _, nr := range res.NRT {
		var t, ms, q []float64
		for _, s := range nr.PerSecond {
			t = append(t, s.T)
			ms = append(ms, s.ReopenMs)
			q = append(q, float64(s.Queries))
		}
		name := "merge throttle " + nr.Throttle
		reopen = append(reopen, report.Series{Name: name, X: t, Y: ms})
		qps = append(qps, report.Series{Name: name, X: t, Y: q})
	}
	if err := report.LinePlot(filepath.Join(out, "nrt-reopen.png"), "NRT reopen latency under updates",
		"time (s)", "reopen (ms)", false, reopen...); err != nil {
		return err
	}
	return report.LinePlot(filepath.Join(out, "nrt-qps.png"), "Search throughput during NRT updates",
		"time (s)", "queries / s", false, qps...)
}

// mb formats a byte count held as a decimal string in MB.
func mb(bytes string) string {
	n, _ := strconv.ParseFloat(bytes, 64)
	return strconv.FormatFloat(n/1e6, 'f', 1, 64)
}
