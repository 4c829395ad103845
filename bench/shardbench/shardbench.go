// Package shardbench holds the single-shard experiments of `sluice bench`
// (BENCHMARKS.md experiments 1 and 2), run against one shard engine with the
// peers' protocol (../shared/peers/README.md) so the numbers compare:
//
//   - index: N docs already in memory, indexed by 1, 2 and 4 goroutines into
//     a fresh engine with a 256 MB RAM buffer, then committed; docs/s and
//     plain-text MB/s to commit, flushes, segments, index size, peak RSS.
//   - nrt: from a committed index, one goroutine replaces random existing
//     docs by id, paced to a fixed rate of plain text; a refresh every
//     second is timed; a search goroutine loops a fixed TermQuery top-10
//     against the latest reader; reopen latency over time and QPS.
//
// The peers' schema is id (keyword), title (text, stored), body (text with
// positions, not stored). Sluice always stores _source, so "peer schema"
// runs store {"id","title"} as _source while indexing the whole document,
// and "full source" runs store the whole JSON, which is what production does.
package shardbench

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/esjson"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/querydsl"
)

// Schema is the peers' mapping.
const Schema = `{"dynamic":"strict","properties":{
  "id":{"type":"keyword"},
  "title":{"type":"text"},
  "body":{"type":"text"}}}`

// Config is what the experiments share.
type Config struct {
	Docs        []corpus.Doc
	CorpusDesc  string
	Dir         string // scratch directory for indexes
	RAMBufferMB int
	FullSource  bool // store the whole JSON as _source (else {"id","title"})
}

func newMapping() (*mapping.Mapping, error) {
	m, err := esjson.ParseMapping([]byte(Schema))
	if err != nil {
		return nil, err
	}
	return querydsl.MappingFromProto(m)
}

// storedSource is what a doc stores as _source under cfg.
func (cfg Config) storedSource(d corpus.Doc) []byte {
	if cfg.FullSource {
		return d.Source
	}
	b, _ := json.Marshal(struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}{d.ID, d.Title})
	return b
}

func textBytes(docs []corpus.Doc) int64 {
	var n int64
	for _, d := range docs {
		n += int64(d.TextBytes())
	}
	return n
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

func mbps(bytes int64, d time.Duration) float64 { return float64(bytes) / 1e6 / d.Seconds() }

func schemaName(full bool) string {
	if full {
		return "full-source"
	}
	return "peer-schema"
}

func errf(format string, args ...any) error { return fmt.Errorf("shardbench: "+format, args...) }
