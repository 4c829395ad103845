package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/loadbench"
	"github.com/sluice-search/sluice/bench/recoverybench"
	"github.com/sluice-search/sluice/bench/reindexbench"
	"github.com/sluice-search/sluice/bench/replbench"
	"github.com/sluice-search/sluice/bench/securitybench"
	"github.com/sluice-search/sluice/bench/shardbench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Run Sluice's benchmarks (see docs/benchmarks.md)",
		GroupID: groupTools,
		Long: `Run the experiments of BENCHMARKS.md and write JSON results and PNG plots
to an output directory. Numbers from different runs on a shared machine do not
compare; compare ratios within one run, and run the peers' harnesses
(../shared/peers) back to back with these.`,
	}
	cmd.AddCommand(newBenchShardCmd(), newBenchLoadCmd(), newBenchReindexCmd(), newBenchReplicationCmd(), newBenchUpdatesCmd(), newBenchSecurityCmd(), newBenchRecoveryCmd())
	return cmd
}

// corpusFlags are shared by every experiment that reads documents.
type corpusFlags struct {
	path string
	docs int
}

func (c *corpusFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.path, "corpus", "auto",
		`JSON-lines corpus ({"id","title","body"}, optionally .zst); "auto" finds ../shared/corpus/enwiki-1k.jsonl.zst, "generated" uses a synthetic Zipf corpus`)
	cmd.Flags().IntVar(&c.docs, "docs", 0, "use the first N documents (0: all; generated corpus: 50,000)")
}

func (c *corpusFlags) load(cmd *cobra.Command) ([]corpus.Doc, string, error) {
	path := c.path
	switch path {
	case "auto":
		wd, _ := os.Getwd()
		path = corpus.DefaultPath(wd)
		if path == "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "no corpus found next to the repository: using a generated one")
		}
	case "generated":
		path = ""
	}
	start := time.Now()
	docs, desc, err := corpus.Load(path, c.docs)
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "loaded %s in %.1fs\n", desc, time.Since(start).Seconds())
	return docs, desc, nil
}

// benchOut is the results directory: out, else bench-out/<timestamp>.
func benchOut(out string) string {
	if out == "" {
		return filepath.Join("bench-out", time.Now().Format("20060102-150405"))
	}
	return out
}

// processBench is the RunE of an experiment that starts its own cluster
// processes from this binary: it loads the corpus, sets *out (default
// bench-out/<timestamp>), runs run with this binary's path, and says where
// the results are.
func processBench(cf *corpusFlags, out *string, run func(cmd *cobra.Command, exe string, docs []corpus.Doc, desc string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		docs, desc, err := cf.load(cmd)
		if err != nil {
			return err
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		*out = benchOut(*out)
		if err := run(cmd, exe, docs, desc); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "results: %s\n", *out)
		return nil
	}
}

// startCPUProfile profiles the process's CPU into path until stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func newBenchShardCmd() *cobra.Command {
	var (
		cf         corpusFlags
		threads    []int
		sourceRuns []int
		ramMB      int
		nrt        shardbench.NRTConfig
		skipNRT    bool
		mergeYield bool
		throttles  []string
		termsFile  string
		rounds     int
		out        string
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "shard",
		Short: "Bulk indexing and NRT reopen on one shard engine (experiments 1 and 2)",
		Long: `Experiment 1: index the corpus (held in memory before the clock starts) with
1, 2 and 4 goroutines into a fresh shard engine with a 256 MB RAM buffer, then
commit; report docs/s and plain-text MB/s to commit, flushes, segments, index
size and peak RSS. Runs use the peers' schema (id keyword; title text stored;
body text with positions, not stored) and, once, the whole JSON stored as
_source, which is what Sluice does in production.

Experiment 2: from the 2-goroutine index, replace random docs by id at 1 MB/s
of plain text, refresh once a second (timed), and search body:TERM top-10 in a
loop; report reopen latency percentiles, QPS, and plot both over time. The
NRT run is repeated with merges unthrottled and throttled (--merge-throttle);
merges pause while a refresh runs unless --merge-yield=false. Per second the
JSON has the reopen's phases and the CPU other processes used (the machine
may be shared); --nrt-trace-slow keeps execution traces of slow reopens.

Query latency: on the 2-goroutine index, one goroutine runs each term of the
peers' terms.tsv as a body TermQuery top-10 (frequent and rare classes) and
pairs of frequent terms as 2-term OR queries; 200 warm-up then 200 measured
rounds; median and p99 per class, comparable with the peers' "query" mode.`,
		Example: `  sluice bench shard --docs 100000 --out bench-out/shard
  sluice bench shard --corpus generated --docs 20000 --nrt-seconds 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			docs, desc, err := cf.load(cmd)
			if err != nil {
				return err
			}
			out = benchOut(out)
			var qc shardbench.QueryConfig
			if termsFile == "auto" {
				wd, _ := os.Getwd()
				if c := corpus.DefaultPath(wd); c != "" {
					termsFile = filepath.Join(filepath.Dir(filepath.Dir(c)), "peers", "terms.tsv")
				}
			}
			if termsFile != "" && termsFile != "auto" {
				if qc.Terms, err = shardbench.LoadTerms(termsFile); err != nil {
					return err
				}
				qc.WarmupRounds, qc.Rounds = rounds, rounds
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			nrt.NoMergeYield = !mergeYield
			_, err = shardbench.Run(cmd.Context(), shardbench.Options{
				Config:       shardbench.Config{Docs: docs, CorpusDesc: desc, RAMBufferMB: ramMB},
				Threads:      threads,
				SourceRuns:   sourceRuns,
				NRT:          nrt,
				NRTThrottles: throttles,
				Query:        qc,
				SkipNRT:      skipNRT,
				Out:          out,
				Log:          cmd.OutOrStdout(),
			})
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "results: %s\n", out)
			}
			return err
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntSliceVar(&threads, "threads", []int{1, 2, 4}, "indexing goroutine counts to run (peer schema); 0: none")
	f.IntSliceVar(&sourceRuns, "source-threads", []int{2}, "goroutine counts to run with the whole JSON stored as _source; 0: none")
	f.IntVar(&ramMB, "ram-mb", 256, "indexing RAM buffer in MB (the peers use 256)")
	f.DurationVar(&nrt.Duration, "nrt-seconds", 60*time.Second, "length of the NRT run")
	f.Float64Var(&nrt.RateMB, "rate-mb", 1, "NRT update rate in MB/s of plain text")
	f.StringVar(&nrt.Term, "term", "route", "body term the NRT search goroutine queries (the peers use route)")
	f.IntVar(&nrt.Searchers, "searchers", 1, "NRT search goroutines")
	f.BoolVar(&mergeYield, "merge-yield", true, "pause merges while a refresh runs (engine.Options.MergeYieldShare); false compares without")
	f.StringVar(&nrt.TraceSlowDir, "nrt-trace-slow", "", "write runtime/trace flight-recorder windows of reopens slower than 2x the median to this directory (go tool trace)")
	f.StringSliceVar(&throttles, "merge-throttle", []string{"off", "auto"}, "run the NRT experiment once per merge IO throttle: off, auto (adaptive) or a fixed MB/s")
	f.BoolVar(&skipNRT, "skip-nrt", false, "skip the NRT experiment")
	f.StringVar(&termsFile, "terms", "auto", `query terms (class<TAB>term lines, the peers' terms.tsv); "auto" uses ../shared/peers/terms.tsv, "" skips the query experiment`)
	f.IntVar(&rounds, "query-rounds", 200, "warm-up and measured rounds over the query terms (the peers use 200 each)")
	f.StringVar(&out, "out", "", "results directory (default bench-out/<timestamp>)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	return cmd
}

func newBenchUpdatesCmd() *cobra.Command {
	var (
		cf         corpusFlags
		uc         shardbench.UpdatesConfig
		ramMB      int
		out        string
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "updates",
		Short: "In-place doc-values updates vs re-indexing under NRT reopens (experiment 3)",
		Long: `Experiment 3: index the corpus with a numeric field added (popularity: long,
"index": false, "doc_values": true) and commit; then, from that index each
time, update random documents' popularity at each --rates (updates/s) for
--seconds, (a) in place (update_doc_values) and (b) by re-indexing the whole
document, while the shard reopens every --reopen (timed) and a goroutine
searches body:--term top-10 sorted by popularity. A first run without updates
is the QPS baseline. The translog is ASYNC (no fsync): the write path is what
is measured. Reports per-update cost, reopen latency, updates per reopen and
QPS (and its ratio to the baseline); writes updates.json and a plot of reopen
time against updates per reopen.`,
		Example: `  sluice bench updates --out bench-out/updates
  sluice bench updates --corpus generated --docs 20000 --rates 10,1000 --seconds 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			docs, desc, err := cf.load(cmd)
			if err != nil {
				return err
			}
			out = benchOut(out)
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			scratch := filepath.Join(out, "scratch")
			defer os.RemoveAll(scratch)
			w := cmd.OutOrStdout()
			res, err := shardbench.RunUpdates(cmd.Context(), shardbench.Config{Docs: docs, CorpusDesc: desc, RAMBufferMB: ramMB, Dir: scratch}, uc,
				func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) })
			if err != nil {
				return err
			}
			if err := shardbench.WriteUpdates(out, res); err != nil {
				return err
			}
			fmt.Fprintf(w, "results: %s\n", out)
			return nil
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntSliceVar(&uc.Rates, "rates", []int{1, 10, 100, 1000}, "update rates to run, updates/s (10000 too if the machine can)")
	f.DurationVar(&uc.Duration, "seconds", 10*time.Second, "length of each run")
	f.DurationVar(&uc.Reopen, "reopen", time.Second, "reopen (refresh) interval")
	f.StringVar(&uc.Term, "term", "the", "body term the searches query (sorted by popularity)")
	f.IntVar(&ramMB, "ram-mb", 256, "indexing RAM buffer in MB")
	f.StringVar(&out, "out", "", "results directory (default bench-out/<timestamp>)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	return cmd
}

func newBenchLoadCmd() *cobra.Command {
	var (
		cf     corpusFlags
		o      loadbench.Options
		levels []float64
	)
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Query latency under open-loop load while indexing (experiment 5)",
		Long: `Offer search load at increasing rates with Poisson arrivals (open loop: a
slow answer never delays the next request) while documents are bulk indexed
in the background; record every request's latency from its intended send
time; report p50/p90/p99/p99.9 per offered load and the capacity: the highest
load whose p99 stays within --slo while the cluster keeps up. Each level also
splits latency into the coordinator's own time and the generator's send lag.

With --baseline every level is followed by the same load of gRPC health
checks, which do no work: the floor that the load generator, gRPC and the
machine's scheduling put under any request, measured in the same run.

Without --addr, a ` + "`sluice dev`" + ` cluster is started in a child process (so the
load generator's GC cannot pollute the server's latencies) and stopped at the
end.`,
		Example: `  sluice bench load --docs 100000 --levels 100,200,400,800,1600
  sluice bench load --docs 100000 --levels 800,1600 --level-seconds 20s --baseline
  sluice bench load --addr 127.0.0.1:9200 --level-seconds 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			docs, desc, err := cf.load(cmd)
			if err != nil {
				return err
			}
			o.Docs, o.CorpusDesc, o.Levels = docs, desc, levels
			if o.Out == "" {
				o.Out = filepath.Join("bench-out", time.Now().Format("20060102-150405"))
			}
			o.Log = cmd.OutOrStdout()
			if o.Addr == "" {
				dir, err := os.MkdirTemp("", "sluice-bench-load-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				if err := os.MkdirAll(o.Out, 0o755); err != nil {
					return err
				}
				logf, err := os.Create(filepath.Join(o.Out, "dev.log"))
				if err != nil {
					return err
				}
				defer logf.Close()
				dev, err := loadbench.StartDev(cmd.Context(), exe, dir, logf)
				if err != nil {
					return err
				}
				defer dev.Stop()
				o.Addr = dev.Addr
				fmt.Fprintf(cmd.OutOrStdout(), "started sluice dev at %s (log: %s)\n", dev.Addr, logf.Name())
			}
			if _, err := loadbench.Run(cmd.Context(), o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "results: %s\n", o.Out)
			return nil
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", "", "coordinator to load (default: start sluice dev in a child process)")
	f.StringVar(&o.Index, "index", "loadbench", "index to (re)create and query")
	f.IntVar(&o.Shards, "shards", 4, "shards of the index")
	f.IntVar(&o.Preload, "preload", 0, "docs indexed before measuring (default half the corpus, at most 100,000)")
	f.Float64SliceVar(&levels, "levels", []float64{50, 100, 200, 400, 800, 1600}, "offered loads in queries/s")
	f.DurationVar(&o.LevelDuration, "level-seconds", 10*time.Second, "duration of each load level")
	f.Float64Var(&o.IndexRateMB, "index-rate-mb", 1, "background bulk indexing rate, MB/s of text")
	f.BoolVar(&o.NoIndexing, "no-indexing", false, "measure queries without background indexing")
	f.BoolVar(&o.Baseline, "baseline", false, "after each level, offer the same load as gRPC health checks, which do no work: the latency floor of the generator, gRPC and this machine")
	f.DurationVar(&o.SLO, "slo", 50*time.Millisecond, "p99 latency bound that defines capacity")
	f.StringVar(&o.Out, "out", "", "results directory (default bench-out/<timestamp>)")
	return cmd
}

func newBenchReindexCmd() *cobra.Command {
	var (
		cf          corpusFlags
		nodes, shds int
		out         string
	)
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "Reindex strategies on a multi-process cluster (experiment 4)",
		Long: `Start a cluster of separate processes on loopback (sluice dev --nodes 0 for
etcd and the coordinator, plus one sluice node process per data node), bulk
load the corpus into a source index, then copy it six ways:

  a  scroll + bulk through the coordinator, one slice (what other systems do)
  b  the same, sliced and in parallel
  c  local, documents: each node copies its source shards' documents into
     co-located destination shards in-process (re-analysed)
  d  the same into twice the shard count (a split; still local)
  e  local, segments: each source shard's segments are hard-linked into its
     co-located destination shard (nothing re-analysed)
  f  the same into twice the shard count (each half masks the other's docs)

and report docs/s, MB/s, wall time (request to verified success) and the
ratio to (a), next to the cluster's raw bulk-loading rate.`,
		Example: `  sluice bench reindex --docs 100000 --out bench-out/reindex`,
		Args:    cobra.NoArgs,
		RunE: processBench(&cf, &out, func(cmd *cobra.Command, exe string, docs []corpus.Doc, desc string) error {
			_, err := reindexbench.Execute(cmd.Context(), reindexbench.Options{Binary: exe, Nodes: nodes, Shards: shds,
				Docs: docs, CorpusDesc: desc, Out: out, Log: cmd.OutOrStdout()})
			return err
		}),
	}
	cf.register(cmd)
	cmd.Flags().IntVar(&nodes, "nodes", 3, "data node processes")
	cmd.Flags().IntVar(&shds, "shards", 3, "source index shards (routing shards are twice this)")
	cmd.Flags().StringVar(&out, "out", "", "results directory (default bench-out/<timestamp>)")
	return cmd
}

func newBenchRecoveryCmd() *cobra.Command {
	var (
		cf             corpusFlags
		sizeMB, rounds int
		profileSeconds int
		out            string
	)
	cmd := &cobra.Command{
		Use:   "recovery",
		Short: "Peer recovery's file copy rate against a plain file copy (issue 17)",
		Long: `Start a two-node cluster of separate processes on loopback, load one shard
(passes of the corpus under new ids) to --size-mb on disk, then each round:

  copy      copy the shard's segment files into a scratch directory on the
            same disk (read, write, fsync each file and the directory)
  recovery  add a replica (number_of_replicas 0 -> 1) on the other node,
            recovering unthrottled (--recovery-max-bytes-per-sec -1): bytes
            fetched and time as the replica reports them (the whole
            recovery, and its file phase alone); then remove it and delete
            its files

alternating which runs first (each reads its files once before, so both
read from the page cache), and report the medians' ratios (target for the
file phase >= 0.8) with the load average before and after.
--profile-seconds then records each node's CPU profile and execution trace
over that many seconds of back-to-back recoveries into --out.`,
		Example: `  sluice bench recovery --size-mb 512 --out bench-out/recovery`,
		Args:    cobra.NoArgs,
		RunE: processBench(&cf, &out, func(cmd *cobra.Command, exe string, docs []corpus.Doc, desc string) error {
			_, err := recoverybench.Execute(cmd.Context(), recoverybench.Options{Binary: exe, SizeMB: sizeMB, Rounds: rounds,
				ProfileSeconds: profileSeconds, Docs: docs, CorpusDesc: desc, Out: out, Log: cmd.OutOrStdout()})
			return err
		}),
	}
	cf.register(cmd)
	cmd.Flags().IntVar(&sizeMB, "size-mb", 256, "the shard's size on disk to load to, MiB")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "rounds of copy and recovery")
	cmd.Flags().IntVar(&profileSeconds, "profile-seconds", 0, "then profile both nodes (CPU, execution trace) over this many seconds of recoveries each (0: no profiles)")
	cmd.Flags().StringVar(&out, "out", "", "results directory (default bench-out/<timestamp>)")
	return cmd
}

func newBenchReplicationCmd() *cobra.Command {
	var (
		cf corpusFlags
		o  replbench.Options
	)
	cmd := &cobra.Command{
		Use:   "replication",
		Short: "What replicas cost: bulk throughput, replica visibility lag, failover time (issue 16)",
		Long: `Start a cluster of separate processes on loopback (sluice dev --nodes 0 for
etcd and the coordinator, plus one sluice node process per data node) and
measure, in one run:

  throughput  bulk load the corpus into a fresh index with replicas=0 and
              replicas=1, alternated round by round (0,1 then 1,0, ...);
              report docs/s, MB/s and the ratio of the medians (target
              >= 0.8)
  lag         a 1-shard index with one replica refreshed every
              --refresh-every; replace random docs at --rate-mb and poll
              both copies' searchable seqNo every millisecond; report the
              time from the primary showing a seqNo to the replica showing
              it, p50/p99 (target p99 <= 250 ms)
  failover    write one document at a time to a 1-shard index with one
              replica, SIGKILL the primary's node and report the time to the
              first write acknowledged after it (target <= the 10 s node
              lease + 2 s)

The failover kills a node: it runs last. --profile writes CPU profiles and
execution traces of every node taken during the last throughput runs, to
see whether a ratio below target is CPU shared on one machine or a
protocol cost (go tool trace -pprof=sync or =sched shows where bulks wait);
--throughput-only skips the lag and failover experiments.`,
		Example: `  sluice bench replication --docs 100000 --out bench-out/replication
  sluice bench replication --corpus generated --docs 5000 --lag-seconds 10s`,
		Args: cobra.NoArgs,
		RunE: processBench(&cf, &o.Out, func(cmd *cobra.Command, exe string, docs []corpus.Doc, desc string) error {
			o.Binary, o.Docs, o.CorpusDesc, o.Log = exe, docs, desc, cmd.OutOrStdout()
			_, err := replbench.Execute(cmd.Context(), o)
			return err
		}),
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 3, "data node processes")
	f.IntVar(&o.Shards, "shards", 3, "shards of the throughput indices")
	f.IntVar(&o.Rounds, "rounds", 2, "throughput rounds, each with replicas=0 and replicas=1")
	f.IntVar(&o.Workers, "workers", 4, "concurrent bulk requests of the throughput runs")
	f.DurationVar(&o.LagDuration, "lag-seconds", 30*time.Second, "length of the lag experiment")
	f.Float64Var(&o.RateMB, "rate-mb", 1, "update rate of the lag experiment, MB/s of JSON")
	f.DurationVar(&o.RefreshEvery, "refresh-every", time.Second, "refresh interval of the lag experiment's index (at least 100ms)")
	f.IntVar(&o.LagPreload, "lag-docs", 20000, "docs indexed before the lag experiment (at most the corpus)")
	f.StringVar(&o.Profile, "profile", "", "write 10 s CPU profiles and 5 s execution traces of every node during the last throughput runs to this directory")
	f.BoolVar(&o.ThroughputOnly, "throughput-only", false, "measure bulk throughput only (no lag and failover experiments)")
	f.StringVar(&o.Out, "out", "", "results directory (default bench-out/<timestamp>)")
	return cmd
}

func newBenchSecurityCmd() *cobra.Command {
	var (
		cf corpusFlags
		o  securitybench.Options
	)
	cmd := &cobra.Command{
		Use:   "security",
		Short: "What TLS+auth cost: bulk throughput and search p50 against plaintext (issue 19)",
		Long: `Start two clusters of separate processes side by side on loopback (sluice dev
--nodes 0 for etcd and the coordinator, plus --nodes sluice node processes
each): one plaintext, one secure as sluice dev --secure makes it (TLS on
every connection, mutual TLS between coordinator and data nodes, etcd over
TLS with client certificates, every call authenticated with an API key and
authorized). Then, for --rounds rounds alternating which cluster goes first
(plaintext, secure, then secure, plaintext, ...), bulk load the corpus into
a fresh index of each with --workers concurrent requests, the clusters
taking turns every --chunk docs, then run --searches match queries on each,
one at a time, the clusters taking turns query by query; report docs/s and search p50/p99 per round and cluster, and the secure cluster's overhead (of the medians, and
the spread of the per-round overheads: the run's noise) against the
targets: bulk <= 10 %, search p50 <= 15 %.

Each cluster is reached through one long-lived connection with TLS session
resumption on, as a production client would be, warmed up first: the
figures are the steady-state cost of encryption and per-call
authentication, not of handshakes. --reconnects then measures new
connections apart (dial, one search, close), with how many secure
handshakes were resumed.`,
		Example: `  sluice bench security --docs 50000 --rounds 12 --searches 2000 --out bench-out/security
  sluice bench security --corpus generated --docs 2000 --rounds 2`,
		Args: cobra.NoArgs,
		RunE: processBench(&cf, &o.Out, func(cmd *cobra.Command, exe string, docs []corpus.Doc, desc string) error {
			o.Binary, o.Docs, o.CorpusDesc, o.Log = exe, docs, desc, cmd.OutOrStdout()
			_, err := securitybench.Run(cmd.Context(), o)
			return err
		}),
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 2, "data node processes per cluster")
	f.IntVar(&o.Shards, "shards", 2, "shards of the index")
	f.IntVar(&o.Rounds, "rounds", 6, "rounds, each measuring both clusters, alternating which goes first")
	f.IntVar(&o.Workers, "workers", 2, "concurrent bulk requests")
	f.IntVar(&o.Chunk, "chunk", 5000, "docs bulk loaded into one cluster before the other takes its turn")
	f.IntVar(&o.Searches, "searches", 500, "match queries per round and cluster, one at a time, the clusters taking turns")
	f.IntVar(&o.Reconnects, "reconnects", 200, "new connections per cluster after the rounds, each dialled, used for one search and closed (0: none)")
	f.StringVar(&o.Out, "out", "", "results directory (default bench-out/<timestamp>)")
	return cmd
}
