package shardbench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
	"github.com/sluice-search/sluice/node/engine/search"
)

// NRTConfig configures the NRT experiment.
type NRTConfig struct {
	Duration  time.Duration // default 60 s
	RateMB    float64       // plain text replaced per second; default 1 MB/s
	Term      string        // body term searched; default "route"
	Searchers int           // search goroutines; default 1 (the peers' protocol)
	Seed      uint64        // which docs are replaced; default 42
	// MergeThrottle is the merge IO limit: "auto" (Lucene's adaptive
	// throttle, the default), "off", or a fixed MB/s such as "20".
	MergeThrottle string
}

func (c *NRTConfig) setDefaults() {
	if c.Duration <= 0 {
		c.Duration = 60 * time.Second
	}
	if c.RateMB <= 0 {
		c.RateMB = 1
	}
	if c.Term == "" {
		c.Term = "route"
	}
	if c.Searchers <= 0 {
		c.Searchers = 1
	}
	if c.Seed == 0 {
		c.Seed = 42
	}
	if c.MergeThrottle == "" {
		c.MergeThrottle = "auto"
	}
}

// newMergeScheduler builds the scheduler for a MergeThrottle setting.
func newMergeScheduler(throttle string) (*mergescheduler.ConcurrentMergeScheduler, error) {
	o := mergescheduler.Options{}
	switch throttle {
	case "auto":
		o.Throttle = mergescheduler.AutoIOThrottle
	case "off":
		o.Throttle = mergescheduler.NoIOThrottle
	default:
		mb, err := strconv.ParseFloat(throttle, 64)
		if err != nil || mb <= 0 {
			return nil, errf("merge throttle %q: want auto, off or MB/s", throttle)
		}
		o.Throttle, o.FixedMBPerSec = mergescheduler.FixedIOThrottle, mb
	}
	return mergescheduler.New(o)
}

// NRTSecond is one second of the run: the reopen at its end and the
// queries completed during it.
type NRTSecond struct {
	T        float64 `json:"t_s"`
	ReopenMs float64 `json:"reopen_ms"`
	Queries  int64   `json:"queries"`
	Segments int     `json:"segments"`
}

// NRTResult is one NRT run.
type NRTResult struct {
	Schema      string            `json:"schema"`
	Throttle    string            `json:"merge_throttle"`
	Docs        int               `json:"docs"`
	Seconds     float64           `json:"seconds"`
	Term        string            `json:"term"`
	Reopen      report.Latencies  `json:"reopen"`
	Updates     int64             `json:"updates"`
	UpdateDocsS float64           `json:"update_docs_per_s"`
	UpdateMBs   float64           `json:"update_mb_per_s"`
	QPS         float64           `json:"qps"`
	SegmentsEnd int               `json:"segments_end"`
	TermHits    int64             `json:"term_hits"`
	PerSecond   []NRTSecond       `json:"per_second"`
	Engine      map[string]string `json:"engine_stats"`
}

// RunNRT copies the committed index in src to a scratch directory, opens it,
// and runs the NRT protocol on it.
func RunNRT(ctx context.Context, cfg Config, nc NRTConfig, src string) (NRTResult, error) {
	nc.setDefaults()
	res := NRTResult{Schema: schemaName(cfg.FullSource), Throttle: nc.MergeThrottle, Docs: len(cfg.Docs), Term: nc.Term}
	dir := src + "-nrt-" + nc.MergeThrottle
	if err := copyDir(src, dir); err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	m, err := newMapping()
	if err != nil {
		return res, err
	}
	sched, err := newMergeScheduler(nc.MergeThrottle)
	if err != nil {
		return res, err
	}
	defer sched.Close(context.Background())
	e, err := openEngineWith(ctx, m, dir, cfg.RAMBufferMB, sched)
	if err != nil {
		return res, err
	}
	defer e.Close(context.Background())
	if _, err := e.Refresh(ctx); err != nil {
		return res, err
	}
	r := e.Acquire()
	got := r.NumDocs()
	r.Release()
	if got != len(cfg.Docs) {
		return res, errf("reopened index has %d docs, want %d", got, len(cfg.Docs))
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var queries, updates, updatedBytes atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 1+nc.Searchers)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		cancel()
	}

	// The updater: replace random docs by id with the same content, paced
	// to RateMB of plain text per second.
	wg.Add(1)
	go func() {
		defer wg.Done()
		p, err := mapping.NewParser(m)
		if err != nil {
			fail(err)
			return
		}
		rng := rand.New(rand.NewPCG(nc.Seed, 0))
		var doc document.Document
		start := time.Now()
		for runCtx.Err() == nil {
			d := &cfg.Docs[rng.IntN(len(cfg.Docs))]
			if _, err := p.Parse(&doc, []byte(d.ID), d.Source); err != nil {
				fail(err)
				return
			}
			doc.Source = append(doc.Source[:0], cfg.storedSource(*d)...)
			if _, _, err := e.Writer().Update(runCtx, doc.ID, &doc); err != nil {
				if runCtx.Err() == nil {
					fail(fmt.Errorf("update %s: %w", d.ID, err))
				}
				return
			}
			updates.Add(1)
			done := updatedBytes.Add(int64(d.TextBytes()))
			due := start.Add(time.Duration(float64(done) / (nc.RateMB * 1e6) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-time.After(wait):
				case <-runCtx.Done():
				}
			}
		}
	}()

	// Searchers: a fixed TermQuery top-10 against the latest reader.
	var termHits atomic.Int64
	for s := 0; s < nc.Searchers; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := &search.TermQuery{Field: "body", Term: []byte(nc.Term)}
			var cached *engine.Reader
			var searcher *search.Searcher
			for runCtx.Err() == nil {
				r := e.Acquire()
				if cached == nil || r.Version() != cached.Version() {
					searcher = search.NewSearcher(r.Leaves())
					cached = r
				}
				td, err := searcher.Search(runCtx, q, search.Request{Size: 10})
				r.Release()
				if err != nil {
					if runCtx.Err() == nil {
						fail(err)
					}
					return
				}
				termHits.Store(td.TotalHits)
				queries.Add(1)
			}
		}()
	}

	// Reopen once per wall-clock second and time it.
	var reopens []time.Duration
	start := time.Now()
	tick := time.NewTicker(time.Second)
	lastQ := int64(0)
loop:
	for time.Since(start) < nc.Duration {
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
		took := time.Since(t0)
		reopens = append(reopens, took)
		q := queries.Load()
		st := e.Stats()
		res.PerSecond = append(res.PerSecond, NRTSecond{T: time.Since(start).Seconds(),
			ReopenMs: float64(took) / 1e6, Queries: q - lastQ, Segments: st.Segments})
		lastQ = q
	}
	tick.Stop()
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	select {
	case err := <-errc:
		return res, err
	default:
	}
	st := e.Stats()
	res.Seconds = elapsed.Seconds()
	res.Reopen = report.Summarize(reopens)
	res.Updates = updates.Load()
	res.UpdateDocsS = float64(res.Updates) / elapsed.Seconds()
	res.UpdateMBs = mbps(updatedBytes.Load(), elapsed)
	res.QPS = float64(queries.Load()) / elapsed.Seconds()
	res.SegmentsEnd = st.Segments
	res.TermHits = termHits.Load()
	res.Engine = map[string]string{
		"flushes": fmt.Sprint(st.Flushes), "refreshes": fmt.Sprint(st.Refreshes),
		"deleted_docs": fmt.Sprint(st.DeletedDocs), "segment_bytes": fmt.Sprint(st.SegmentBytes),
	}
	ms := sched.Stats()
	res.Engine["merges_done"] = fmt.Sprint(ms.MergesDone)
	res.Engine["merged_bytes"] = fmt.Sprint(ms.BytesWritten)
	res.Engine["merge_throttled"] = ms.ThrottledTime.String()
	return res, nil
}

// copyDir copies a committed engine directory, subdirectories (the
// translog) included.
func copyDir(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
