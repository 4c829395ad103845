// Package loadbench is experiment 5 of BENCHMARKS.md: query latency under
// open-loop load against a coordinator while bulk indexing runs.
//
// Open loop, as in the 2012 response-time study: requests arrive as a
// Poisson process at the offered rate whatever the server does, each on its
// own goroutine, and a request's latency is measured from its *intended*
// arrival time, so a stalled server shows up as latency instead of silently
// lowering the offered load (coordinated omission). Each level records every
// request's latency; capacity is the highest offered load whose p99 stays
// within the SLO while the server keeps up (achieved >= 95% of offered), as
// do all the lower levels.
//
// The generator shares the machine with the server, so each level records
// what it can of where time went: the coordinator's reported time, the
// generator's send lag, and optionally (Options.Baseline) the same load of
// no-op gRPC health checks, the latency floor under any request.
package loadbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Options configure a run.
type Options struct {
	Addr          string // coordinator address
	Index         string // default "loadbench"
	Shards        int    // default 4
	Docs          []corpus.Doc
	CorpusDesc    string
	Preload       int           // docs indexed before measuring; default min(len(Docs)/2, 100k)
	Terms         []string      // query terms (match on body); default picked from the corpus
	Levels        []float64     // offered QPS levels; default 50, 100, 200, 400, 800, 1600
	LevelDuration time.Duration // default 10 s
	Warmup        time.Duration // unmeasured load before the first level; default 3 s
	IndexRateMB   float64       // background bulk indexing in MB/s of text; default 1; 0 off with NoIndexing
	NoIndexing    bool
	// Baseline also offers each level's load as gRPC health checks, which
	// do no work: their latency is the floor that the load generator,
	// gRPC and the machine's scheduling put under any request.
	Baseline    bool
	SLO         time.Duration // p99 bound for capacity; default 50 ms
	MaxInFlight int           // requests outstanding before new arrivals count as dropped; default 20,000
	Out         string
	Log         io.Writer
}

func (o *Options) setDefaults() {
	if o.Index == "" {
		o.Index = "loadbench"
	}
	if o.Shards <= 0 {
		o.Shards = 4
	}
	if o.Preload <= 0 {
		o.Preload = min(len(o.Docs)/2, 100_000)
	}
	if len(o.Levels) == 0 {
		o.Levels = []float64{50, 100, 200, 400, 800, 1600}
	}
	if o.LevelDuration <= 0 {
		o.LevelDuration = 10 * time.Second
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 3 * time.Second
	}
	if o.IndexRateMB <= 0 {
		o.IndexRateMB = 1
	}
	if o.SLO <= 0 {
		o.SLO = 50 * time.Millisecond
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 20_000
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Level is the outcome of one offered load.
type Level struct {
	OfferedQPS  float64          `json:"offered_qps"`
	AchievedQPS float64          `json:"achieved_qps"`
	Sent        int              `json:"sent"`
	Errors      int64            `json:"errors"`
	Dropped     int64            `json:"dropped"`
	Latency     report.Latencies `json:"latency"`
	// DispatchLag is how late the generator sent each request after its
	// intended arrival, and Server the coordinator's own reported time:
	// they split Latency into generator, transport and server shares.
	DispatchLag report.Latencies `json:"dispatch_lag"`
	Server      report.Latencies `json:"server"`
	// Baseline is the same load of no-op health checks (Options.Baseline),
	// offered right after the searches.
	Baseline    *report.Latencies `json:"baseline_noop,omitempty"`
	IndexedDocs int64             `json:"indexed_docs_during"`
}

// Result is a whole run.
type Result struct {
	Corpus      string  `json:"corpus"`
	Preloaded   int     `json:"preloaded_docs"`
	Shards      int     `json:"shards"`
	IndexRateMB float64 `json:"index_rate_mb"`
	SLOms       float64 `json:"slo_ms"`
	Levels      []Level `json:"levels"`
	// CapacityQPS is the highest offered load within the SLO (0: none).
	CapacityQPS float64 `json:"capacity_qps"`
	// HalfCapacity is the level nearest half the capacity, where the
	// cluster issue's tail target (p99 <= 3x p50) is read; nil if no level
	// lies within a quarter of it.
	HalfCapacity *HalfCapacity `json:"half_capacity,omitempty"`
}

// HalfCapacity is the tail at the level nearest half the capacity.
type HalfCapacity struct {
	OfferedQPS float64 `json:"offered_qps"`
	// Ratio is p99 / p50 of the searches, BaselineRatio that of the no-op
	// baseline at the same load (0 without one).
	Ratio         float64 `json:"p99_over_p50"`
	BaselineRatio float64 `json:"baseline_p99_over_p50,omitempty"`
}

// halfCapacity picks the level nearest capacity/2, within 25% of it.
func halfCapacity(levels []Level, capacity float64) *HalfCapacity {
	want := capacity / 2
	var best *Level
	for i := range levels {
		lv := &levels[i]
		if math.Abs(lv.OfferedQPS-want) > want/4 || lv.Latency.P50 <= 0 {
			continue
		}
		if best == nil || math.Abs(lv.OfferedQPS-want) < math.Abs(best.OfferedQPS-want) {
			best = lv
		}
	}
	if best == nil {
		return nil
	}
	h := &HalfCapacity{OfferedQPS: best.OfferedQPS, Ratio: best.Latency.P99 / best.Latency.P50}
	if b := best.Baseline; b != nil && b.P50 > 0 {
		h.BaselineRatio = b.P99 / b.P50
	}
	return h
}

// Run performs the experiment against o.Addr.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.setDefaults()
	if len(o.Docs) < 2 {
		return nil, fmt.Errorf("loadbench: need documents")
	}
	c, err := client.Dial(ctx, o.Addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if len(o.Terms) == 0 {
		o.Terms = PickTerms(o.Docs, 40)
	}
	res := &Result{Corpus: o.CorpusDesc, Shards: o.Shards, SLOms: float64(o.SLO) / 1e6}
	if !o.NoIndexing {
		res.IndexRateMB = o.IndexRateMB
	}
	if err := setUp(ctx, c, o); err != nil {
		return nil, err
	}
	res.Preloaded = min(o.Preload, len(o.Docs))
	fmt.Fprintf(o.Log, "loaded %d docs into %s (%d shards)\n", res.Preloaded, o.Index, o.Shards)

	bgCtx, stopBg := context.WithCancel(ctx)
	var indexed atomic.Int64
	bgErr := make(chan error, 1)
	if !o.NoIndexing {
		go func() { bgErr <- indexInBackground(bgCtx, c, o, &indexed) }()
	}
	defer stopBg()

	search := searchCall(c, o)
	if o.Warmup > 0 {
		if _, err := runLevel(ctx, o, o.Levels[0], o.Warmup, search); err != nil {
			return nil, err
		}
	}
	for _, qps := range o.Levels {
		before := indexed.Load()
		lv, err := runLevel(ctx, o, qps, o.LevelDuration, search)
		if err != nil {
			return nil, err
		}
		lv.IndexedDocs = indexed.Load() - before
		fmt.Fprintf(o.Log, "offered %6.0f qps: achieved %6.0f, %s, errors %d, dropped %d\n"+
			"      of which the coordinator's own time p50=%.2fms p99=%.2fms, the generator's send lag p50=%.2fms p99=%.2fms\n",
			lv.OfferedQPS, lv.AchievedQPS, lv.Latency, lv.Errors, lv.Dropped,
			lv.Server.P50, lv.Server.P99, lv.DispatchLag.P50, lv.DispatchLag.P99)
		if o.Baseline {
			bl, err := runLevel(ctx, o, qps, o.LevelDuration, healthCall(c))
			if err != nil {
				return nil, err
			}
			if bl.Errors != 0 || bl.Dropped != 0 {
				return nil, fmt.Errorf("baseline at %.0f qps: %d errors, %d dropped", qps, bl.Errors, bl.Dropped)
			}
			lv.Baseline = &bl.Latency
			fmt.Fprintf(o.Log, "      no-op health checks at the same load: %s\n", bl.Latency)
		}
		res.Levels = append(res.Levels, lv)
		if lv.Latency.P50 > 20*res.SLOms {
			fmt.Fprintln(o.Log, "median far beyond the SLO: stopping here")
			break
		}
	}
	stopBg()
	if !o.NoIndexing {
		if err := <-bgErr; err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("background indexing: %w", err)
		}
	}
	res.CapacityQPS = capacity(res.Levels, res.SLOms)
	fmt.Fprintf(o.Log, "capacity (p99 <= %.0f ms, achieved >= 95%% of offered): %.0f qps\n", res.SLOms, res.CapacityQPS)
	if h := halfCapacity(res.Levels, res.CapacityQPS); h != nil && res.CapacityQPS > 0 {
		res.HalfCapacity = h
		fmt.Fprintf(o.Log, "at %.0f qps, nearest half capacity: p99/p50 = %.1f", h.OfferedQPS, h.Ratio)
		if h.BaselineRatio > 0 {
			fmt.Fprintf(o.Log, " (no-op baseline: %.1f)", h.BaselineRatio)
		}
		fmt.Fprintln(o.Log)
	}
	return res, write(o.Out, res)
}

// capacity is the highest offered load below the first one that breaks
// the SLO or falls behind: a lucky level above a broken one does not count.
func capacity(levels []Level, sloMs float64) float64 {
	sorted := slices.Clone(levels)
	slices.SortStableFunc(sorted, func(a, b Level) int { return cmp.Compare(a.OfferedQPS, b.OfferedQPS) })
	best := 0.0
	for _, lv := range sorted {
		if lv.Latency.P99 > sloMs || lv.AchievedQPS < 0.95*lv.OfferedQPS || lv.Errors != 0 || lv.Dropped != 0 {
			break
		}
		best = lv.OfferedQPS
	}
	return best
}

// A call is one request of a level; it returns the server's own reported
// time (0 if it reports none).
// pick is a random number drawn by the pacer for the call's choices.
type call func(ctx context.Context, pick uint64) (server time.Duration, err error)

// searchCall is the measured request: a match query for one of o.Terms,
// top 10 with sources.
func searchCall(c *client.Client, o Options) call {
	return func(ctx context.Context, pick uint64) (time.Duration, error) {
		resp, err := c.Search(ctx, &sluicev1.SearchRequest{
			Indices: []string{o.Index},
			Size:    proto.Int32(10),
			Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{
				Field: "body", Query: o.Terms[pick%uint64(len(o.Terms))]}}},
		})
		return resp.GetTook().AsDuration(), err
	}
}

// healthCall is the baseline request: the standard gRPC health check.
func healthCall(c *client.Client) call {
	return func(ctx context.Context, _ uint64) (time.Duration, error) {
		_, err := c.Health.Check(ctx, &healthpb.HealthCheckRequest{})
		return 0, err
	}
}

// runLevel offers qps of req for d with Poisson arrivals.
func runLevel(ctx context.Context, o Options, qps float64, d time.Duration, req call) (Level, error) {
	lv := Level{OfferedQPS: qps}
	rng := rand.New(rand.NewPCG(uint64(qps*1000), 11))
	var mu sync.Mutex
	n := int(qps*d.Seconds()*1.2) + 16
	lat, lag, server := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	var inFlight, errs, dropped atomic.Int64
	p := newPacer()
	defer p.stop()
	start := time.Now()
	next := start
	for {
		next = next.Add(time.Duration(rng.ExpFloat64() / qps * float64(time.Second)))
		if next.Sub(start) >= d {
			break
		}
		if err := p.sleepUntil(ctx, next); err != nil {
			wg.Wait()
			return lv, err
		}
		lv.Sent++
		if inFlight.Load() >= int64(o.MaxInFlight) {
			dropped.Add(1)
			continue
		}
		inFlight.Add(1)
		wg.Add(1)
		intended := next
		pick := rng.Uint64()
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			sent := time.Since(intended)
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			srv, err := req(rctx, pick)
			cancel()
			total := time.Since(intended)
			if err != nil {
				errs.Add(1)
			}
			mu.Lock()
			lat = append(lat, total)
			lag = append(lag, sent)
			if err == nil && srv > 0 {
				server = append(server, srv)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	lv.Errors, lv.Dropped = errs.Load(), dropped.Load()
	lv.AchievedQPS = float64(int64(len(lat))-lv.Errors) / elapsed.Seconds()
	lv.Latency = report.Summarize(lat)
	lv.DispatchLag, lv.Server = report.Summarize(lag), report.Summarize(server)
	return lv, nil
}

func setUp(ctx context.Context, c *client.Client, o Options) error {
	_, _ = c.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: o.Index})
	_, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{
		Name:                o.Index,
		Settings:            &sluicev1.IndexSettings{NumberOfShards: int32(o.Shards)},
		Mapping:             corpus.Mapping(),
		WaitForActiveShards: true,
	})
	if err != nil {
		return fmt.Errorf("create index %s: %w", o.Index, err)
	}
	for i := 0; i < min(o.Preload, len(o.Docs)); i += 1000 {
		if err := bulk(ctx, c, o.Index, o.Docs[i:min(i+1000, o.Preload, len(o.Docs))]); err != nil {
			return err
		}
	}
	_, err = c.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{o.Index}})
	return err
}

func bulk(ctx context.Context, c *client.Client, index string, docs []corpus.Doc) error {
	req := &sluicev1.BulkRequest{Index: index, Items: make([]*sluicev1.BulkItem, len(docs))}
	for i, d := range docs {
		req.Items[i] = &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: d.ID, Source: d.Source}
	}
	resp, err := c.Bulk(ctx, req)
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	if resp.Errors {
		for _, it := range resp.Items {
			if it.Error != nil {
				return fmt.Errorf("bulk item %s: %s", it.Id, it.Error.Reason)
			}
		}
	}
	return nil
}

// indexInBackground replaces docs at o.IndexRateMB until ctx ends, in
// batches of 100, cycling through the corpus.
func indexInBackground(ctx context.Context, c *client.Client, o Options, indexed *atomic.Int64) error {
	start := time.Now()
	var sent int64
	for i := 0; ctx.Err() == nil; i += 100 {
		lo := i % len(o.Docs)
		batch := o.Docs[lo:min(lo+100, len(o.Docs))]
		if err := bulk(ctx, c, o.Index, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		indexed.Add(int64(len(batch)))
		for _, d := range batch {
			sent += int64(d.TextBytes())
		}
		due := start.Add(time.Duration(float64(sent) / (o.IndexRateMB * 1e6) * float64(time.Second)))
		select {
		case <-time.After(time.Until(due)):
		case <-ctx.Done():
		}
	}
	return nil
}

// PickTerms takes n distinct body words of moderate frequency from a
// sample of the corpus.
func PickTerms(docs []corpus.Doc, n int) []string {
	df := map[string]int{}
	sample := docs[:min(len(docs), 5000)]
	for _, d := range sample {
		seen := map[string]bool{}
		for _, w := range strings.Fields(strings.ToLower(d.Body)) {
			w = strings.Trim(w, ".,;:()\"'")
			if len(w) > 3 && !seen[w] && strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
				seen[w] = true
				df[w]++
			}
		}
	}
	var terms []string
	lo, hi := int(math.Max(2, float64(len(sample))/200)), len(sample)/5+1
	for w, f := range df {
		if f >= lo && f <= hi {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		for w := range df {
			terms = append(terms, w)
		}
	}
	slices.Sort(terms) // map order is random: sort for a deterministic pick
	return terms[:min(n, len(terms))]
}

func write(out string, res *Result) error {
	if out == "" {
		return nil
	}
	if err := report.WriteJSON(out, "load.json", res); err != nil {
		return err
	}
	var x, p50, p90, p99, p999, bx, b50, b99 []float64
	for _, lv := range res.Levels {
		x = append(x, lv.OfferedQPS)
		p50 = append(p50, lv.Latency.P50)
		p90 = append(p90, lv.Latency.P90)
		p99 = append(p99, lv.Latency.P99)
		p999 = append(p999, lv.Latency.P999)
		if lv.Baseline != nil {
			bx = append(bx, lv.OfferedQPS)
			b50 = append(b50, lv.Baseline.P50)
			b99 = append(b99, lv.Baseline.P99)
		}
	}
	series := []report.Series{{Name: "p50", X: x, Y: p50}, {Name: "p90", X: x, Y: p90},
		{Name: "p99", X: x, Y: p99}, {Name: "p99.9", X: x, Y: p999}}
	if len(bx) > 0 {
		series = append(series, report.Series{Name: "no-op p50", X: bx, Y: b50}, report.Series{Name: "no-op p99", X: bx, Y: b99})
	}
	return report.LinePlot(filepath.Join(out, "load-latency.png"),
		"Search latency under open-loop load (while indexing)", "offered load (queries/s)", "latency (ms, log)", true,
		series...)
}
