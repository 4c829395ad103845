// Package securitybench is `sluice bench security` (issue 19): what TLS
// and authentication cost. Bulk throughput and search latency of a secure
// cluster (TLS on every connection, mutual TLS between coordinator and data
// nodes, etcd over TLS, every call authenticated with an API key and
// authorized) against a plaintext one, in one run.
//
// Both clusters are multi-process (proccluster) and run side by side, so
// the machine's drift falls on both; rounds alternate which cluster goes
// first (plaintext, secure, then secure, plaintext, ...), and within a
// round the bulk loads take turns chunk by chunk and the searches query by
// query, so the noise of a shared machine falls on both alike; each round
// is reported, so the spread of the per-round overheads says how noisy the
// run was. Each cluster is reached through one long-lived client connection
// (keep-alive; gRPC multiplexes calls on it) with TLS session resumption
// on, as a production client would be, and warmed up before the first
// round: the figures are the steady-state cost of encryption and of the
// per-call authentication (a cached key lookup and a rule check), not of
// handshakes. What a new connection costs is measured apart (reconnects:
// dial, one call, close), with the fraction of secure handshakes resumed.
package securitybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/loadbench"
	"github.com/sluice-search/sluice/bench/proccluster"
	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The targets.
const (
	TargetBulkOverhead   = 0.10 // 1 - secure/plaintext docs/s
	TargetSearchOverhead = 0.15 // secure/plaintext search p50 - 1
)

// Options configure a run.
type Options struct {
	Binary     string // the sluice binary to run the clusters with
	Docs       []corpus.Doc
	CorpusDesc string
	Nodes      int // data node processes per cluster; default 2
	Shards     int // shards of the index; default 2
	Rounds     int // rounds, each measuring both clusters; default 6
	// Each round bulk loads Docs into a fresh index of each cluster with
	// Workers concurrent bulk requests, the clusters taking turns every
	// Chunk docs, refreshes it, then runs Searches match queries on each,
	// one at a time, the clusters taking turns query by query.
	Workers, Chunk, Searches int
	// Reconnects new connections are made to each cluster after the
	// rounds, each dialled, used for one search and closed; 0 skips it.
	Reconnects int
	Out        string
	Log        io.Writer
}

func (o *Options) setDefaults() {
	if o.Nodes <= 0 {
		o.Nodes = 2
	}
	if o.Shards <= 0 {
		o.Shards = 2
	}
	if o.Rounds <= 0 {
		o.Rounds = 6
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Chunk <= 0 {
		o.Chunk = 5000
	}
	if o.Searches <= 0 {
		o.Searches = 500
	}
	if o.Reconnects < 0 {
		o.Reconnects = 0
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// The two clusters.
const (
	Plaintext = "plaintext"
	Secure    = "secure"
)

// Round is one cluster's measurements in one round.
type Round struct {
	Round       int     `json:"round"`
	Mode        string  `json:"mode"` // Plaintext or Secure
	Docs        int     `json:"docs"`
	Seconds     float64 `json:"bulk_seconds"`
	DocsPerSec  float64 `json:"docs_per_s"`
	MBPerSec    float64 `json:"mb_per_s"` // of JSON sources
	SearchP50Ms float64 `json:"search_p50_ms"`
	SearchP99Ms float64 `json:"search_p99_ms"`
	// CPU the cluster's processes used per document over the bulk phase
	// (through the refresh) and per query over the search phase, turns of
	// the other cluster included, so work a call leaves behind counts.
	BulkCPUPerDocUs   float64 `json:"bulk_cpu_us_per_doc"`
	SearchCPUPerQryUs float64 `json:"search_cpu_us_per_query"`
}

// Overhead compares secure with plaintext: Median is the overhead of the
// medians of the rounds (for CPU, the median of the per-round overheads),
// Min and Max the lowest and highest per-round overheads (the run's noise).
type Overhead struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"` // Median <= Target
}

// Reconnect is what new connections cost one cluster.
type Reconnect struct {
	Mode    string           `json:"mode"`
	Latency report.Latencies `json:"latency"` // dial → first search answered
	Resumed int              `json:"tls_resumed"`
}

// Result is what a run measured.
type Result struct {
	Corpus      string   `json:"corpus"`
	Nodes       int      `json:"nodes"`
	Shards      int      `json:"shards"`
	Workers     int      `json:"bulk_workers"`
	Searches    int      `json:"searches_per_round"`
	Rounds      []Round  `json:"rounds"`
	BulkPlain   float64  `json:"bulk_docs_per_s_plaintext"` // medians of the rounds
	BulkSecure  float64  `json:"bulk_docs_per_s_secure"`
	SearchPlain float64  `json:"search_p50_ms_plaintext"`
	SearchSec   float64  `json:"search_p50_ms_secure"`
	Bulk        Overhead `json:"bulk_overhead"`       // 1 - secure/plaintext docs/s
	Search      Overhead `json:"search_p50_overhead"` // secure/plaintext p50 - 1
	// The clusters' CPU per document and per query, secure/plaintext - 1
	// (no target): steadier than wall-clock figures on a shared machine.
	BulkCPU    Overhead    `json:"bulk_cpu_overhead"`
	SearchCPU  Overhead    `json:"search_cpu_overhead"`
	Reconnects []Reconnect `json:"reconnects,omitempty"`
	Load       [3]float64  `json:"load_average_after"` // /proc/loadavg: the machine was shared
}

type target struct {
	mode string
	cl   *proccluster.Cluster
}

// Run starts both clusters, measures o.Rounds alternated rounds and writes
// security.json and plots of both per round to o.Out.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.setDefaults()
	if len(o.Docs) == 0 {
		return nil, errors.New("no documents")
	}
	dir, err := os.MkdirTemp("", "sluice-bench-security-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var targets []*target
	defer func() {
		for _, t := range targets {
			t.cl.Stop()
		}
	}()
	terms := loadbench.PickTerms(o.Docs, 40)
	for _, mode := range []string{Plaintext, Secure} {
		d := filepath.Join(dir, mode)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		cl, err := proccluster.Start(ctx, proccluster.Options{Binary: o.Binary, Dir: d, Nodes: o.Nodes, Secure: mode == Secure})
		if err != nil {
			return nil, fmt.Errorf("%s cluster: %w", mode, err)
		}
		targets = append(targets, &target{mode: mode, cl: cl})
	}
	// Warm up: every connection (client → coordinator → nodes) open and
	// every code path run once before anything is timed.
	if _, err := round(ctx, targets, o, "warm-up", o.Docs[:min(len(o.Docs), 1000)], terms, 20); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	fmt.Fprintf(o.Log, "two clusters of %d node processes each, %d shards; corpus %s; %d rounds of %d docs (%d bulk workers) and %d searches per cluster\n",
		o.Nodes, o.Shards, o.CorpusDesc, o.Rounds, len(o.Docs), o.Workers, o.Searches)
	res := &Result{Corpus: o.CorpusDesc, Nodes: o.Nodes, Shards: o.Shards, Workers: o.Workers, Searches: o.Searches}
	for r := range o.Rounds {
		order := targets
		if r%2 == 1 {
			order = []*target{targets[1], targets[0]}
		}
		rds, err := round(ctx, order, o, fmt.Sprintf("round-%d", r+1), o.Docs, terms, o.Searches)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r+1, err)
		}
		for _, rd := range rds {
			rd.Round = r + 1
			res.Rounds = append(res.Rounds, rd)
			fmt.Fprintf(o.Log, "round %-2d %-9s  bulk %6.2fs %8.0f docs/s %6.2f MB/s %5.0f µs CPU/doc   search p50 %6.3f ms p99 %6.3f ms %5.0f µs CPU/query\n",
				rd.Round, rd.Mode, rd.Seconds, rd.DocsPerSec, rd.MBPerSec, rd.BulkCPUPerDocUs, rd.SearchP50Ms, rd.SearchP99Ms, rd.SearchCPUPerQryUs)
		}
	}
	summarize(res)
	for _, t := range targets {
		if o.Reconnects == 0 {
			break
		}
		rc, err := reconnects(ctx, t, o.Reconnects, terms[0])
		if err != nil {
			return nil, fmt.Errorf("%s cluster, reconnects: %w", t.mode, err)
		}
		res.Reconnects = append(res.Reconnects, rc)
		fmt.Fprintf(o.Log, "reconnect %-9s dial + first search p50 %.2f ms p99 %.2f ms (%d of %d TLS sessions resumed)\n",
			rc.Mode, rc.Latency.P50, rc.Latency.P99, rc.Resumed, rc.Latency.Count)
	}
	res.Load = loadAverage()
	fmt.Fprintf(o.Log, "bulk:   plaintext %.0f docs/s, secure %.0f docs/s (medians): overhead %+.1f%% (rounds %+.1f%% .. %+.1f%%), target <= %.0f%%: %s\n",
		res.BulkPlain, res.BulkSecure, 100*res.Bulk.Median, 100*res.Bulk.Min, 100*res.Bulk.Max, 100*res.Bulk.Target, met(res.Bulk.Met))
	fmt.Fprintf(o.Log, "search: plaintext p50 %.3f ms, secure p50 %.3f ms (medians): overhead %+.1f%% (rounds %+.1f%% .. %+.1f%%), target <= %.0f%%: %s\n",
		res.SearchPlain, res.SearchSec, 100*res.Search.Median, 100*res.Search.Min, 100*res.Search.Max, 100*res.Search.Target, met(res.Search.Met))
	fmt.Fprintf(o.Log, "cluster CPU, secure/plaintext - 1 (median of rounds): bulk %+.1f%% per doc (rounds %+.1f%% .. %+.1f%%), search %+.1f%% per query (rounds %+.1f%% .. %+.1f%%)\n",
		100*res.BulkCPU.Median, 100*res.BulkCPU.Min, 100*res.BulkCPU.Max, 100*res.SearchCPU.Median, 100*res.SearchCPU.Min, 100*res.SearchCPU.Max)
	fmt.Fprintf(o.Log, "load average after the run: %.2f %.2f %.2f\n", res.Load[0], res.Load[1], res.Load[2])
	return res, write(o.Out, res)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// round measures the clusters in order. Each bulk loads docs into a fresh
// index, the clusters taking turns chunk by chunk (the first of each turn
// alternating), and then answers searches match queries, taking turns
// query by query: a moment of noise on the shared machine falls on both.
// The indices are deleted at the end.
func round(ctx context.Context, order []*target, o Options, index string, docs []corpus.Doc, terms []string, searches int) ([]Round, error) {
	rds := make([]Round, len(order))
	took := make([]time.Duration, len(order))
	for i, t := range order {
		rds[i] = Round{Mode: t.mode, Docs: len(docs)}
		if _, err := t.cl.Client.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index, Mapping: corpus.Mapping(),
			Settings: &sluicev1.IndexSettings{NumberOfShards: int32(o.Shards)}, WaitForActiveShards: true}); err != nil {
			return nil, fmt.Errorf("%s: create %s: %w", t.mode, index, err)
		}
	}
	cpu0, err := cpuOf(order)
	if err != nil {
		return nil, err
	}
	for n, lo := 0, 0; lo < len(docs); n, lo = n+1, lo+o.Chunk {
		chunk := docs[lo:min(lo+o.Chunk, len(docs))]
		for k := range order {
			i := (k + n) % len(order)
			start := time.Now()
			if err := proccluster.BulkLoad(ctx, order[i].cl.Client, index, chunk, o.Workers); err != nil {
				return nil, fmt.Errorf("%s: bulk: %w", order[i].mode, err)
			}
			took[i] += time.Since(start)
		}
	}
	for i, t := range order {
		sec := took[i].Seconds()
		rds[i].Seconds = sec
		rds[i].DocsPerSec, rds[i].MBPerSec = float64(len(docs))/sec, float64(corpus.SourceBytes(docs))/1e6/sec
		if _, err := t.cl.Client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
			return nil, fmt.Errorf("%s: refresh: %w", t.mode, err)
		}
	}
	cpu1, err := cpuOf(order)
	if err != nil {
		return nil, err
	}
	lat := make([][]time.Duration, len(order))
	for q := range searches {
		for k := range order {
			i := (k + q) % len(order)
			s := time.Now()
			if _, err := order[i].cl.Client.Search(ctx, search(index, terms[q%len(terms)])); err != nil {
				return nil, fmt.Errorf("%s: search: %w", order[i].mode, err)
			}
			lat[i] = append(lat[i], time.Since(s))
		}
	}
	cpu2, err := cpuOf(order)
	if err != nil {
		return nil, err
	}
	for i, t := range order {
		l := report.Summarize(lat[i])
		rds[i].SearchP50Ms, rds[i].SearchP99Ms = l.P50, l.P99
		rds[i].BulkCPUPerDocUs = float64(cpu1[i]-cpu0[i]) / 1e3 / float64(len(docs))
		rds[i].SearchCPUPerQryUs = float64(cpu2[i]-cpu1[i]) / 1e3 / float64(max(searches, 1))
		if _, err := t.cl.Client.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: index}); err != nil {
			return nil, fmt.Errorf("%s: delete %s: %w", t.mode, index, err)
		}
	}
	return rds, nil
}

// cpuOf is the CPU each target's processes have used so far.
func cpuOf(ts []*target) ([]time.Duration, error) {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		var err error
		if out[i], err = t.cl.CPU(); err != nil {
			return nil, fmt.Errorf("%s: CPU time: %w", t.mode, err)
		}
	}
	return out, nil
}

func search(index, term string) *sluicev1.SearchRequest {
	return &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(10),
		Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "body", Query: term}}}}
}

// reconnects makes n new connections to t's cluster one after the other
// (the cluster's dial options, so one TLS session cache: handshakes after
// the first resume), each used for one search (on an index of one
// document) and closed.
func reconnects(ctx context.Context, t *target, n int, term string) (Reconnect, error) {
	rc := Reconnect{Mode: t.mode}
	const index = "reconnect"
	c := t.cl.Client
	if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index, Mapping: corpus.Mapping(), WaitForActiveShards: true}); err != nil {
		return rc, fmt.Errorf("create %s: %w", index, err)
	}
	if _, err := c.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE,
		Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "1", Source: []byte(`{"body":"` + term + `"}`)}}}); err != nil {
		return rc, fmt.Errorf("index: %w", err)
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		s := time.Now()
		nc, err := client.Dial(ctx, t.cl.Addr, t.cl.DialOptions...)
		if err != nil {
			return rc, err
		}
		var p peer.Peer
		_, err = nc.Search(ctx, search(index, term), grpc.Peer(&p))
		lat = append(lat, time.Since(s))
		nc.Close()
		if err != nil {
			return rc, fmt.Errorf("search: %w", err)
		}
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && ti.State.DidResume {
			rc.Resumed++
		}
	}
	rc.Latency = report.Summarize(lat)
	_, err := c.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: index})
	return rc, err
}

// summarize pairs the rounds of both clusters and computes the medians
// and overheads.
func summarize(res *Result) {
	var bp, bs, sp, ss, bo, so, bc, sc []float64
	byRound := map[int]map[string]Round{}
	for _, r := range res.Rounds {
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]Round{}
		}
		byRound[r.Round][r.Mode] = r
	}
	for _, m := range byRound {
		p, s := m[Plaintext], m[Secure]
		bp, bs, sp, ss = append(bp, p.DocsPerSec), append(bs, s.DocsPerSec), append(sp, p.SearchP50Ms), append(ss, s.SearchP50Ms)
		bo = append(bo, 1-s.DocsPerSec/p.DocsPerSec)
		so = append(so, s.SearchP50Ms/p.SearchP50Ms-1)
		// Clock ticks are 10 ms: a short round may show none.
		if p.BulkCPUPerDocUs > 0 && s.BulkCPUPerDocUs > 0 {
			bc = append(bc, s.BulkCPUPerDocUs/p.BulkCPUPerDocUs-1)
		}
		if p.SearchCPUPerQryUs > 0 && s.SearchCPUPerQryUs > 0 {
			sc = append(sc, s.SearchCPUPerQryUs/p.SearchCPUPerQryUs-1)
		}
	}
	res.BulkPlain, res.BulkSecure = report.Median(bp), report.Median(bs)
	res.SearchPlain, res.SearchSec = report.Median(sp), report.Median(ss)
	res.Bulk = Overhead{Median: 1 - res.BulkSecure/res.BulkPlain, Min: slices.Min(bo), Max: slices.Max(bo), Target: TargetBulkOverhead}
	res.Search = Overhead{Median: res.SearchSec/res.SearchPlain - 1, Min: slices.Min(so), Max: slices.Max(so), Target: TargetSearchOverhead}
	res.Bulk.Met, res.Search.Met = res.Bulk.Median <= res.Bulk.Target, res.Search.Median <= res.Search.Target
	res.BulkCPU, res.SearchCPU = spread(bc), spread(sc)
}

// spread is the median, lowest and highest of per-round overheads.
func spread(v []float64) Overhead {
	if len(v) == 0 {
		return Overhead{}
	}
	return Overhead{Median: report.Median(v), Min: slices.Min(v), Max: slices.Max(v)}
}

// loadAverage is the machine's 1, 5 and 15 minute load averages (zeros
// where /proc/loadavg is missing).
func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err == nil {
		_, _ = fmt.Sscan(string(b), &l[0], &l[1], &l[2])
	}
	return l
}

func write(out string, res *Result) error {
	if out == "" {
		return nil
	}
	if err := report.WriteJSON(out, "security.json", res); err != nil {
		return err
	}
	var bulk, search []report.Series
	for _, m := range []string{Plaintext, Secure} {
		b, q := report.Series{Name: m}, report.Series{Name: m}
		for _, r := range res.Rounds {
			if r.Mode == m {
				b.X, b.Y = append(b.X, float64(r.Round)), append(b.Y, r.DocsPerSec)
				q.X, q.Y = append(q.X, float64(r.Round)), append(q.Y, r.SearchP50Ms)
			}
		}
		bulk, search = append(bulk, b), append(search, q)
	}
	if err := report.LinePlot(filepath.Join(out, "security-bulk.png"), "Bulk throughput, TLS+auth against plaintext",
		"round", "docs/s", false, bulk...); err != nil {
		return err
	}
	return report.LinePlot(filepath.Join(out, "security-search.png"), "Search p50, TLS+auth against plaintext",
		"round", "ms", false, search...)
}
