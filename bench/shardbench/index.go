package shardbench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// IndexResult is one bulk-indexing run.
type IndexResult struct {
	Schema        string  `json:"schema"`
	Threads       int     `json:"threads"`
	Docs          int     `json:"docs"`
	PlainMB       float64 `json:"plain_mb"`
	SecondsAdding float64 `json:"s_adding"`
	SecondsCommit float64 `json:"s_to_commit"`
	DocsPerSec    float64 `json:"docs_per_s"`
	MBPerSec      float64 `json:"mb_per_s"`
	Flushes       int64   `json:"flushes"`
	Stalls        int64   `json:"stalls"`
	Segments      int     `json:"segments"`
	IndexMB       float64 `json:"index_mb"`
	RSSBeforeMB   float64 `json:"rss_before_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	// PeakOverCorpusMB is peak RSS minus RSS with the corpus loaded and the
	// engine not yet open: what indexing itself took.
	PeakOverCorpusMB float64 `json:"peak_over_corpus_mb"`
	NumDocs          int     `json:"num_docs"`
}

// RunIndex indexes cfg.Docs with threads goroutines into a fresh engine
// under dir and commits. The engine is closed before returning; the
// committed index stays in dir.
func RunIndex(ctx context.Context, cfg Config, threads int, dir string) (IndexResult, error) {
	res := IndexResult{Schema: schemaName(cfg.FullSource), Threads: threads, Docs: len(cfg.Docs),
		PlainMB: float64(textBytes(cfg.Docs)) / 1e6}
	m, err := newMapping()
	if err != nil {
		return res, err
	}
	// Stored sources are prepared before the clock starts, as the peers
	// prepare their documents.
	stored := make([][]byte, len(cfg.Docs))
	for i, d := range cfg.Docs {
		stored[i] = cfg.storedSource(d)
	}
	_ = report.ResetPeakRSS()
	rss0, _ := report.RSS()
	res.RSSBeforeMB = float64(rss0) / 1e6

	e, err := openEngine(ctx, m, dir, cfg.RAMBufferMB)
	if err != nil {
		return res, err
	}
	w := e.Writer()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	start := time.Now()
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := engine.WithAffinity(ctx)
			p, err := mapping.NewParser(m)
			if err != nil {
				errs <- err
				return
			}
			var doc document.Document
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cfg.Docs) {
					return
				}
				d := &cfg.Docs[i]
				if _, err := p.Parse(&doc, []byte(d.ID), d.Source); err != nil {
					errs <- fmt.Errorf("doc %s: %w", d.ID, err)
					return
				}
				doc.Source = append(doc.Source[:0], stored[i]...)
				if _, err := w.Add(ctx, &doc); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		e.Close(ctx)
		return res, err
	}
	res.SecondsAdding = time.Since(start).Seconds()
	if _, err := e.Commit(ctx, engine.CommitOptions{}); err != nil {
		e.Close(ctx)
		return res, fmt.Errorf("commit: %w", err)
	}
	took := time.Since(start)
	if _, err := e.Refresh(ctx); err != nil {
		e.Close(ctx)
		return res, err
	}
	st := e.Stats()
	peak, _ := report.PeakRSS()
	if err := e.Close(ctx); err != nil {
		return res, fmt.Errorf("close engine: %w", err)
	}
	size, err := dirSize(dir)
	if err != nil {
		return res, err
	}
	res.SecondsCommit = took.Seconds()
	res.DocsPerSec = float64(len(cfg.Docs)) / took.Seconds()
	res.MBPerSec = mbps(textBytes(cfg.Docs), took)
	res.Flushes, res.Stalls = st.Flushes, st.Stalls
	res.Segments, res.NumDocs = st.Segments, st.NumDocs
	res.IndexMB = float64(size) / 1e6
	res.PeakRSSMB = float64(peak) / 1e6
	res.PeakOverCorpusMB = float64(peak-rss0) / 1e6
	if st.NumDocs != len(cfg.Docs) {
		return res, errf("indexed %d docs but the reader has %d", len(cfg.Docs), st.NumDocs)
	}
	return res, nil
}

// openEngine opens (or creates) the engine under dir with periodic refresh
// off: the experiments refresh explicitly.
func openEngine(ctx context.Context, m *mapping.Mapping, dir string, ramMB int) (*engine.Engine, error) {
	return openEngineWith(ctx, m, dir, ramMB, nil)
}

// openEngineWith is openEngine with engine options adjusted by set (nil:
// the defaults), such as a caller-owned merge scheduler.
func openEngineWith(ctx context.Context, m *mapping.Mapping, dir string, ramMB int, set func(*engine.Options)) (*engine.Engine, error) {
	pp, err := engine.NewMappingParser(m)
	if err != nil {
		return nil, err
	}
	opts := engine.Options{
		Path:            dir,
		Codec:           codec.New(codec.Options{}),
		Parser:          pp,
		RAMBufferBytes:  int64(ramMB) << 20,
		RefreshInterval: -1,
	}
	if set != nil {
		set(&opts)
	}
	e, err := engine.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	return e, nil
}

// IndexDir names the index directory of one run.
func IndexDir(root string, full bool, threads int) string {
	return filepath.Join(root, fmt.Sprintf("index-%s-t%d", schemaName(full), threads))
}
