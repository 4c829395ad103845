package shardbench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	// NoMergeYield turns off merges pausing while a refresh runs
	// (engine.Options.MergeYieldShare), which is on by default.
	NoMergeYield bool
	// TraceSlowDir, if set, keeps a runtime/trace flight recorder running
	// and writes its window to this directory after each reopen slower
	// than twice the median so far (at most maxSlowTraces): what ran on
	// the cores while the refresh waited.
	TraceSlowDir string
}

// maxSlowTraces bounds the traces one run writes (each is a few MB).
const maxSlowTraces = 5

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
	// The reopen's phases (engine.RefreshResult): waiting for the refresh
	// lock and in-flight operations, flushing, applying deletes and
	// publishing.
	SwapMs   float64 `json:"swap_ms"`
	FlushMs  float64 `json:"flush_ms"`
	ApplyMs  float64 `json:"apply_deletes_ms"`
	Queries  int64   `json:"queries"`
	Segments int     `json:"segments"`
	// Merges running after the reopen, and whether the reopen paused them.
	Merges       int  `json:"merges_running"`
	PausedMerges bool `json:"paused_merges"`
	// ForeignCPU is the CPU (in cores) used during the second by other
	// processes: the machine may be shared, and their load moves reopen
	// latency as much as merges do.
	ForeignCPU float64 `json:"foreign_cpu_cores"`
}

// NRTResult is one NRT run.
type NRTResult struct {
	Schema     string           `json:"schema"`
	Throttle   string           `json:"merge_throttle"`
	MergeYield bool             `json:"merge_yield"`
	Docs       int              `json:"docs"`
	Seconds    float64          `json:"seconds"`
	Term       string           `json:"term"`
	Reopen     report.Latencies `json:"reopen"`
	// ReopenQuiet: the reopens of seconds in which other processes used
	// under quietForeignCPU cores (the machine may be shared).
	ReopenQuiet report.Latencies  `json:"reopen_quiet"`
	Updates     int64             `json:"updates"`
	UpdateDocsS float64           `json:"update_docs_per_s"`
	UpdateMBs   float64           `json:"update_mb_per_s"`
	QPS         float64           `json:"qps"`
	SegmentsEnd int               `json:"segments_end"`
	ForeignCPU  float64           `json:"foreign_cpu_cores"` // mean over the run; see NRTSecond
	TermHits    int64             `json:"term_hits"`
	PerSecond   []NRTSecond       `json:"per_second"`
	Engine      map[string]string `json:"engine_stats"`
}

// RunNRT copies the committed index in src to a scratch directory, opens it,
// and runs the NRT protocol on it.
func RunNRT(ctx context.Context, cfg Config, nc NRTConfig, src string) (NRTResult, error) {
	nc.setDefaults()
	res := NRTResult{Schema: schemaName(cfg.FullSource), Throttle: nc.MergeThrottle, MergeYield: !nc.NoMergeYield,
		Docs: len(cfg.Docs), Term: nc.Term}
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
	e, err := openEngineWith(ctx, m, dir, cfg.RAMBufferMB, func(o *engine.Options) {
		o.MergeScheduler = sched
		if nc.NoMergeYield {
			o.MergeYieldShare = -1
		}
	})
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
	slow, err := newSlowTracer(nc.TraceSlowDir, nc.MergeThrottle)
	if err != nil {
		return res, err
	}
	defer slow.stop()
	var reopens []time.Duration
	cpu0 := sampleCPU()
	lastCPU := cpu0
	start := time.Now()
	tick := time.NewTicker(time.Second)
	lastQ, lastYields := int64(0), int64(0)
loop:
	for time.Since(start) < nc.Duration {
		select {
		case <-runCtx.Done():
			break loop
		case <-tick.C:
		}
		t0 := time.Now()
		region := trace.StartRegion(runCtx, "reopen")
		rr, err := e.Refresh(runCtx)
		region.End()
		if err != nil {
			fail(fmt.Errorf("refresh: %w", err))
			break
		}
		took := time.Since(t0)
		reopens = append(reopens, took)
		if err := slow.observe(took, reopens); err != nil {
			fail(err)
			break
		}
		q := queries.Load()
		st := e.Stats()
		cpu := sampleCPU()
		res.PerSecond = append(res.PerSecond, NRTSecond{T: time.Since(start).Seconds(),
			ReopenMs: float64(took) / 1e6, SwapMs: float64(rr.SwapWait) / 1e6, FlushMs: float64(rr.Flush) / 1e6,
			ApplyMs: float64(rr.ApplyDeletes) / 1e6, Queries: q - lastQ, Segments: st.Segments,
			Merges: sched.Stats().Running, PausedMerges: st.MergeYields > lastYields,
			ForeignCPU: cpu.foreignSince(lastCPU)})
		lastQ, lastCPU, lastYields = q, cpu, st.MergeYields
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
	var quiet []time.Duration
	for _, ps := range res.PerSecond {
		if ps.ForeignCPU < quietForeignCPU {
			quiet = append(quiet, time.Duration(ps.ReopenMs*1e6))
		}
	}
	res.ReopenQuiet = report.Summarize(quiet)
	res.Reopen = report.Summarize(reopens)
	res.Updates = updates.Load()
	res.UpdateDocsS = float64(res.Updates) / elapsed.Seconds()
	res.UpdateMBs = mbps(updatedBytes.Load(), elapsed)
	res.QPS = float64(queries.Load()) / elapsed.Seconds()
	res.SegmentsEnd = st.Segments
	res.ForeignCPU = sampleCPU().foreignSince(cpu0)
	res.TermHits = termHits.Load()
	res.Engine = map[string]string{
		"flushes": fmt.Sprint(st.Flushes), "refreshes": fmt.Sprint(st.Refreshes),
		"deleted_docs": fmt.Sprint(st.DeletedDocs), "segment_bytes": fmt.Sprint(st.SegmentBytes),
	}
	ms := sched.Stats()
	res.Engine["merges_done"] = fmt.Sprint(ms.MergesDone)
	res.Engine["merged_bytes"] = fmt.Sprint(ms.BytesWritten)
	res.Engine["merge_throttled"] = ms.ThrottledTime.String()
	res.Engine["merge_budget_wait"] = ms.BudgetWaitTime.String()
	res.Engine["flush_budget_wait"] = st.FlushBudgetWait.String()
	res.Engine["merge_step_aside"] = st.MergeStepAside.String()
	res.Engine["merge_yields"] = fmt.Sprint(st.MergeYields)
	res.Engine["merge_yields_skipped"] = fmt.Sprint(st.MergeYieldsSkipped)
	res.Engine["merge_yield_time"] = st.MergeYieldTime.String()
	res.Engine["merge_time"] = st.MergeTime.String()
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

// slowTracer writes flight-recorder traces of slow reopens.
type slowTracer struct {
	fr      *trace.FlightRecorder
	dir     string
	name    string
	written int
}

func newSlowTracer(dir, name string) (*slowTracer, error) {
	if dir == "" {
		return &slowTracer{}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		return nil, fmt.Errorf("flight recorder: %w", err)
	}
	return &slowTracer{fr: fr, dir: dir, name: name}, nil
}

// observe writes a trace if took is more than twice the median of all
// reopens so far (which include took, the last one).
func (s *slowTracer) observe(took time.Duration, all []time.Duration) error {
	if s.fr == nil || s.written >= maxSlowTraces || len(all) < 5 {
		return nil
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if took <= 2*sorted[len(sorted)/2] {
		return nil
	}
	s.written++
	f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("slow-%s-%d-%dms.trace", s.name, len(all), took.Milliseconds())))
	if err != nil {
		return err
	}
	if _, err := s.fr.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write trace: %w", err)
	}
	return f.Close()
}

func (s *slowTracer) stop() {
	if s.fr != nil {
		s.fr.Stop()
	}
}

// cpuSample is the machine's busy CPU time (/proc/stat) and this process's
// (getrusage) at one moment; busy is zero where /proc/stat is missing.
type cpuSample struct {
	at         time.Time
	busy, self time.Duration
}

// quietForeignCPU: a second in which other processes used less CPU than
// this (in cores) counts as quiet.
const quietForeignCPU = 0.25

// clockTick is /proc/stat's unit (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal: all but idle, iowait.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		s.busy += time.Duration(n) * clockTick
	}
	return s
}

// foreignSince is the CPU other processes used since prev, in cores.
func (s cpuSample) foreignSince(prev cpuSample) float64 {
	wall := s.at.Sub(prev.at)
	if s.busy == 0 || prev.busy == 0 || wall <= 0 {
		return 0
	}
	return max(0, float64((s.busy-prev.busy)-(s.self-prev.self))/float64(wall))
}
