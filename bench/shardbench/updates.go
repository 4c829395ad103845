package shardbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/esjson"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/engine/translog"
	"github.com/sluice-search/sluice/querydsl"
)

// UpdatesSchema is the peers' schema with a numeric field updatable in
// place: popularity (long, doc values only), the field the experiment
// updates and sorts by.
const UpdatesSchema = `{"dynamic":"strict","properties":{
  "id":{"type":"keyword"},
  "title":{"type":"text"},
  "body":{"type":"text"},
  "popularity":{"type":"long","index":false,"doc_values":true}}}`

// UpdatesConfig tunes experiment 3.
type UpdatesConfig struct {
	// Rates are the update rates to run, operations per second (default
	// 1, 10, 100, 1,000).
	Rates []int
	// Duration of each (mode, rate) run (default 10 s); a reopen every
	// Reopen (default 1 s).
	Duration, Reopen time.Duration
	// Term: the searches are body:Term top-10 sorted by popularity
	// descending (default "the").
	Term string
	Seed uint64
}

func (c *UpdatesConfig) setDefaults() {
	if len(c.Rates) == 0 {
		c.Rates = []int{1, 10, 100, 1000}
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Reopen <= 0 {
		c.Reopen = time.Second
	}
	if c.Term == "" {
		c.Term = "the"
	}
}

// UpdatesRun is one (mode, rate) run. Mode "none" (rate 0) is the
// baseline: searches without updates.
type UpdatesRun struct {
	Mode string `json:"mode"` // update_doc_values | reindex | none
	Rate int    `json:"rate"` // asked for, operations/s
	// Achieved is operations/s done; below Rate when one operation costs
	// more than 1/Rate (the machine cannot).
	Achieved float64 `json:"achieved"`
	Updates  int64   `json:"updates"`
	// PerUpdateUs is the mean wall time of one operation (its call, not
	// the wait between calls).
	PerUpdateUs float64            `json:"per_update_us"`
	Reopen      report.Latencies   `json:"reopen"`
	PerReopen   float64            `json:"updates_per_reopen"`
	QPS         float64            `json:"qps"` // sorted by popularity
	QPSRatio    float64            `json:"qps_vs_no_updates"`
	Engine      map[string]float64 `json:"engine"`
}

// UpdatesResult is experiment 3.
type UpdatesResult struct {
	Corpus string       `json:"corpus"`
	Docs   int          `json:"docs"`
	Term   string       `json:"term"`
	Runs   []UpdatesRun `json:"runs"`
}

// withPopularity is d's whole JSON with "popularity": v added.
func withPopularity(dst, src []byte, v int64) []byte {
	dst = append(dst[:0], src[:len(src)-1]...) // the object without its '}'
	dst = append(dst, `,"popularity":`...)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '}')
}

// RunUpdates is experiment 3 of BENCHMARKS.md (the 2014 updatable doc
// values table): the corpus is indexed with a popularity field, committed,
// and then for each mode and rate one goroutine updates random documents'
// popularity at that rate — in place (update_doc_values) or by re-indexing
// the whole document — while the shard reopens every second (timed) and a
// goroutine searches body:Term top-10 sorted by popularity. The translog
// is ASYNC (no fsync), so the write path itself is measured. Every run
// starts from the same committed index.
func RunUpdates(ctx context.Context, cfg Config, uc UpdatesConfig, log func(format string, args ...any)) (*UpdatesResult, error) {
	uc.setDefaults()
	pm, err := esjson.ParseMapping([]byte(UpdatesSchema))
	if err != nil {
		return nil, err
	}
	m, err := querydsl.MappingFromProto(pm)
	if err != nil {
		return nil, err
	}
	async := func(o *engine.Options) { o.TranslogOptions.Durability = translog.Async }
	base := filepath.Join(cfg.Dir, "updates-base")
	sched, err := newMergeScheduler("off")
	if err != nil {
		return nil, err
	}
	defer sched.Close(context.Background())
	e, err := openEngineWith(ctx, m, base, cfg.RAMBufferMB, func(o *engine.Options) {
		async(o)
		o.MergeScheduler = sched
	})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	bulk := e.NewBulk()
	var src []byte
	// Popularity is uniform over [0, docs), as the updates set it: values
	// rising with doc order would make the sorted search's top-k heap
	// take every doc, and any update look like a speed-up.
	rng := rand.New(rand.NewPCG(uc.Seed, 1))
	for i := range cfg.Docs {
		d := &cfg.Docs[i]
		src = withPopularity(src, d.Source, rng.Int64N(int64(len(cfg.Docs))))
		if _, err := bulk.Index(ctx, []byte(d.ID), src); err != nil {
			e.Close(ctx)
			return nil, fmt.Errorf("index %s: %w", d.ID, err)
		}
	}
	// Let the merges the bulk load asked for finish, so that every run
	// starts from a settled index: a run that set merges off would search
	// a shrinking segment list and time merges, not updates.
	for idle := 0; idle < 2; {
		if _, err := e.Refresh(ctx); err != nil {
			e.Close(ctx)
			return nil, err
		}
		if idle++; sched.Stats().Running > 0 {
			idle = 0
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := e.Commit(ctx, engine.CommitOptions{}); err != nil {
		e.Close(ctx)
		return nil, err
	}
	segments := e.Stats().Segments
	if err := e.Close(ctx); err != nil {
		return nil, err
	}
	log("indexed %d docs with popularity in %.1fs (merges settled: %d segments)", len(cfg.Docs), time.Since(start).Seconds(), segments)
	res := &UpdatesResult{Corpus: cfg.CorpusDesc, Docs: len(cfg.Docs), Term: uc.Term}
	type run struct {
		mode string
		rate int
	}
	runs := []run{{"none", 0}}
	for _, r := range uc.Rates {
		runs = append(runs, run{"update_doc_values", r}, run{"reindex", r})
	}
	var noneQPS float64
	for i, r := range runs {
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("updates-%d", i))
		if err := copyDir(base, dir); err != nil {
			return nil, err
		}
		out, err := runUpdatesOnce(ctx, cfg, uc, m, dir, r.mode, r.rate, async)
		if err != nil {
			return nil, fmt.Errorf("%s at %d/s: %w", r.mode, r.rate, err)
		}
		if r.mode == "none" {
			noneQPS = out.QPS
		}
		if noneQPS > 0 {
			out.QPSRatio = out.QPS / noneQPS
		}
		res.Runs = append(res.Runs, out)
		log("%-17s %6d/s: achieved %8.1f/s, %7.1f µs/update, reopen p50 %.2f ms p99 %.2f ms (%.0f updates/reopen), %6.0f QPS (%.2f× no updates)",
			out.Mode, out.Rate, out.Achieved, out.PerUpdateUs, out.Reopen.P50, out.Reopen.P99, out.PerReopen, out.QPS, out.QPSRatio)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func runUpdatesOnce(ctx context.Context, cfg Config, uc UpdatesConfig, m *mapping.Mapping, dir, mode string, rate int, set func(*engine.Options)) (UpdatesRun, error) {
	res := UpdatesRun{Mode: mode, Rate: rate}
	e, err := openEngineWith(ctx, m, dir, cfg.RAMBufferMB, set)
	if err != nil {
		return res, err
	}
	defer e.Close(context.Background())
	if _, err := e.Refresh(ctx); err != nil {
		return res, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		cancel()
	}
	var updates, opNanos, queries atomic.Int64
	if mode != "none" {
		wg.Go(func() {
			th := throttle.New(float64(rate))
			rng := rand.New(rand.NewPCG(uc.Seed, uint64(rate)))
			var src, fields []byte
			for n := int64(0); ; n++ {
				if err := th.Wait(runCtx); err != nil {
					return
				}
				i := rng.IntN(len(cfg.Docs))
				d := &cfg.Docs[i]
				// From the indexed values' range: the sort's top-k stays
				// as competitive as without updates.
				v := rng.Int64N(int64(len(cfg.Docs)))
				var err error
				t0 := time.Now()
				if mode == "reindex" {
					src = withPopularity(src, d.Source, v)
					_, err = e.Index(runCtx, []byte(d.ID), src)
				} else {
					fields = strconv.AppendInt(append(fields[:0], `{"popularity":`...), v, 10)
					fields = append(fields, '}')
					_, err = e.UpdateDocValues(runCtx, []byte(d.ID), fields)
				}
				opNanos.Add(int64(time.Since(t0)))
				if err != nil {
					if runCtx.Err() == nil {
						fail(fmt.Errorf("update %s: %w", d.ID, err))
					}
					return
				}
				updates.Add(1)
			}
		})
	}
	wg.Go(func() {
		q := &search.TermQuery{Field: "body", Term: []byte(uc.Term)}
		req := search.Request{Size: 10, Sort: []search.SortField{{Type: search.SortByNumeric, Field: "popularity", Desc: true}}}
		var cached *engine.Reader
		var s *search.Searcher
		for runCtx.Err() == nil {
			r := e.Acquire()
			if cached == nil || r.Version() != cached.Version() {
				s, cached = search.NewSearcher(r.Leaves()), r
			}
			_, err := s.Search(runCtx, q, req)
			r.Release()
			if err != nil {
				if runCtx.Err() == nil {
					fail(err)
				}
				return
			}
			queries.Add(1)
		}
	})
	var reopens []time.Duration
	start := time.Now()
	tick := time.NewTicker(uc.Reopen)
	before := e.Stats()
loop:
	for time.Since(start) < uc.Duration {
		select {
		case <-runCtx.Done():
			break loop
		case <-tick.C:
		}
		t0 := time.Now()
		if _, err := e.Refresh(runCtx); err != nil {
			fail(fmt.Errorf("refresh: %w", err))
			break
		}
		reopens = append(reopens, time.Since(t0))
	}
	tick.Stop()
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	st := e.Stats()
	res.Updates = updates.Load()
	res.Achieved = float64(res.Updates) / elapsed.Seconds()
	if res.Updates > 0 {
		res.PerUpdateUs = float64(opNanos.Load()) / float64(res.Updates) / 1e3
	}
	if len(reopens) > 0 {
		res.PerReopen = float64(res.Updates) / float64(len(reopens))
	}
	res.Reopen = report.Summarize(reopens)
	res.QPS = float64(queries.Load()) / elapsed.Seconds()
	res.Engine = map[string]float64{
		"flushes":                  float64(st.Flushes - before.Flushes),
		"merges":                   float64(st.Merges - before.Merges),
		"segments_start":           float64(before.Segments),
		"segments_end":             float64(st.Segments),
		"doc_values_updates_bytes": float64(st.DocValuesUpdatesBytes),
	}
	return res, nil
}

// WriteUpdates writes updates.json and updates-reopen.png (reopen time
// against updates per reopen, both modes) to out.
func WriteUpdates(out string, res *UpdatesResult) error {
	if err := report.WriteJSON(out, "updates.json", res); err != nil {
		return err
	}
	var series []report.Series
	for _, mode := range []string{"update_doc_values", "reindex"} {
		s := report.Series{Name: mode}
		for _, r := range res.Runs {
			if r.Mode == mode && r.PerReopen > 0 {
				s.X, s.Y = append(s.X, r.PerReopen), append(s.Y, r.Reopen.P50)
			}
		}
		series = append(series, s)
	}
	return report.LinePlot(filepath.Join(out, "updates-reopen.png"),
		fmt.Sprintf("Reopen time by updates per reopen (%d docs)", res.Docs), "updates per reopen", "reopen p50 (ms)", true, series...)
}
