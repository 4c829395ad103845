package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/client/bulkindexer"
	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The document commands: bulk, get, search, scroll, refresh.

func parseRefresh(s string) (sluicev1.RefreshPolicy, error) {
	switch s {
	case "", "false", "none":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_NONE, nil
	case "wait_for":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR, nil
	case "true", "immediate":
		return sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE, nil
	}
	return 0, fmt.Errorf("--refresh must be none, wait_for or immediate, got %q", s)
}

func newBulkCmd() *cobra.Command {
	var f clientFlags
	var index, idField, routingField, refresh string
	var batchDocs, batchMB, workers, maxErrors int
	cmd := &cobra.Command{
		Use:     "bulk FILE.jsonl[.zst] --index NAME",
		Short:   "Load documents from a JSON-lines file (optionally zstd-compressed)",
		GroupID: groupClient,
		Args:    cobra.ExactArgs(1),
		Long: `Load documents into an index through the Bulk API.

Input: one JSON object per line, each line a whole document (its _source).
The document id is the value of the top-level field named by --id-field
(default "id"; a string or a number); the field stays in the source. With
--id-field "" every document gets a generated id. With --routing-field, that
top-level field's value is the document's custom routing (a line without it
is routed by its id). FILE may be zstd-compressed
(.zst) or "-" for standard input. (This is not Elasticsearch's action/source
pair format: each line is a document, so corpus files load as they are.)

Documents are batched and sent by several workers; when the cluster sheds
load (RESOURCE_EXHAUSTED) the affected documents are retried with
exponential backoff, so nothing is dropped. Documents that fail for good
(malformed JSON, a value that does not fit the mapping, an unknown index) are
reported on stderr with their line number, and the command exits non-zero.
Progress (docs, docs/s, ETA from the file position) goes to stderr.`,
		Example: `  sluice bulk ../shared/corpus/enwiki-1k.jsonl.zst --index wiki
  sluice bulk docs.jsonl --index books --id-field isbn --refresh wait_for
  zcat dump.jsonl.gz | sluice bulk - --index logs --id-field ""`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if index == "" {
				return errors.New("--index is required")
			}
			policy, err := parseRefresh(refresh)
			if err != nil {
				return err
			}
			in, size, closeIn, err := openInput(args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			// No --timeout for a load: it ends when the input does.
			ctx := cmd.Context()
			c, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			return runBulk(ctx, c, in, size, bulkOptions{index: index, idField: idField, routingField: routingField, refresh: policy,
				batchDocs: batchDocs, batchBytes: batchMB << 20, workers: workers, maxErrors: maxErrors},
				cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, "")
	cmd.Flags().StringVar(&index, "index", "", "target index or write alias (required)")
	cmd.Flags().StringVar(&idField, "id-field", "id", `top-level field holding the document id; "" generates ids`)
	cmd.Flags().StringVar(&routingField, "routing-field", "", "top-level field holding the document's custom routing (default: none, route by id)")
	cmd.Flags().StringVar(&refresh, "refresh", "none", "visibility when done: none, wait_for or immediate")
	cmd.Flags().IntVar(&batchDocs, "batch-docs", 1000, "documents per Bulk request")
	cmd.Flags().IntVar(&batchMB, "batch-mb", 5, "MiB of sources per Bulk request")
	cmd.Flags().IntVar(&workers, "workers", 4, "concurrent Bulk requests")
	cmd.Flags().IntVar(&maxErrors, "max-errors", 20, "failed documents to print (all are counted)")
	return cmd
}

type bulkOptions struct {
	index, idField        string
	routingField          string
	refresh               sluicev1.RefreshPolicy
	batchDocs, batchBytes int
	workers, maxErrors    int
}

// countingReader counts bytes read from the file, for the ETA.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openInput opens a plain or .zst file, or stdin for "-"; size is the file
// size (0 if unknown). The reader counts file bytes consumed.
func openInput(path string) (*inputReader, int64, func(), error) {
	var f *os.File
	var size int64
	if path == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, 0, nil, err
		}
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
	}
	cr := &countingReader{r: f}
	ir := &inputReader{counted: cr, r: cr}
	closeFn := func() { f.Close() }
	if strings.HasSuffix(path, ".zst") {
		zr, err := zstd.NewReader(cr)
		if err != nil {
			f.Close()
			return nil, 0, nil, err
		}
		ir.r = zr
		closeFn = func() { zr.Close(); f.Close() }
	}
	return ir, size, closeFn, nil
}

type inputReader struct {
	counted *countingReader
	r       io.Reader
}

func (ir *inputReader) Read(p []byte) (int, error) { return ir.r.Read(p) }

// docID extracts the id field of a JSON document line.
// lineKeys reads a document's id and routing from top-level fields of its
// line (either field name may be ""): the id field must be there; the
// routing field may be missing.
func lineKeys(line []byte, idField, routingField string) (id, routing string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return "", "", jsonLineError(err)
	}
	if idField != "" {
		raw, ok := top[idField]
		if !ok {
			return "", "", fmt.Errorf("no %q field", idField)
		}
		if id, err = scalarString(raw, idField); err != nil {
			return "", "", err
		}
	}
	if raw, ok := top[routingField]; ok && routingField != "" {
		if routing, err = scalarString(raw, routingField); err != nil {
			return "", "", err
		}
	}
	return id, routing, nil
}

// jsonLineError says why a line is not a JSON object, without the Go
// types encoding/json names.
func jsonLineError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Errorf("not a JSON object but %s %s", article(typeErr.Value), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at byte %d: %s", syntaxErr.Offset, syntaxErr)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

func article(noun string) string {
	if strings.ContainsAny(noun[:1], "aeiou") {
		return "an"
	}
	return "a"
}

// scalarString is a JSON string's value or a JSON number's text.
func scalarString(raw json.RawMessage, field string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("field %q is not a string or a number", field)
}

// failures keeps the first max failed lines (by line number) of a load,
// to print in input order when it ends: workers report them out of order,
// and lines printed while the progress line is drawn would break it.
type failures struct {
	mu    sync.Mutex
	max   int
	count int64
	kept  []failure // sorted by line
}

type failure struct {
	line int
	msg  string
}

func (f *failures) add(line int, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	i, _ := slices.BinarySearchFunc(f.kept, line, func(a failure, l int) int { return cmp.Compare(a.line, l) })
	if i >= f.max {
		return
	}
	f.kept = slices.Insert(f.kept, i, failure{line, msg})
	if len(f.kept) > f.max {
		f.kept = f.kept[:f.max]
	}
}

// print writes one line per kept failure, then how many were not shown.
func (f *failures) print(w io.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.kept {
		fmt.Fprintf(w, "line %d: %s\n", x.line, x.msg)
	}
	if n := f.count - int64(len(f.kept)); n > 0 {
		fmt.Fprintf(w, "(%d more failed lines not shown; --max-errors shows more)\n", n)
	}
}

func runBulk(ctx context.Context, c *client.Client, in *inputReader, size int64, o bulkOptions, stdout, stderr io.Writer) error {
	// An unknown index fails every document the same way: say it once.
	// (Other answers, such as an alias over several indices, are left to
	// the bulk calls.) Health, unlike GetIndex, also brings the
	// coordinator's view of the cluster up to date, so an index created
	// a moment ago is known to the data path the documents go through.
	if _, err := c.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{o.index}}); status.Code(err) == codes.NotFound {
		return fmt.Errorf("no such index [%s]; create it first: sluice index create %s", o.index, o.index)
	}
	failed := &failures{max: o.maxErrors}
	// Input line of every item in flight, for error reports.
	var lines sync.Map // *BulkItem -> int
	ix, err := bulkindexer.New(bulkindexer.Config{Client: c, Index: o.index, BatchDocs: o.batchDocs, BatchBytes: o.batchBytes,
		Workers: o.workers, Refresh: o.refresh,
		OnSuccess: func(it *sluicev1.BulkItem, _ *sluicev1.BulkItemResult) { lines.Delete(it) },
		OnError: func(it *sluicev1.BulkItem, r *sluicev1.BulkItemResult) {
			n, _ := lines.LoadAndDelete(it)
			line, _ := n.(int)
			failed.add(line, fmt.Sprintf("id %q: %s", r.GetId(), r.GetError().GetReason()))
		}})
	if err != nil {
		return err
	}
	var local atomic.Int64 // lines rejected before sending
	prog := newProgress(stderr, size, func() int64 { return in.counted.n.Load() },
		func() (int64, int64) { s := ix.Stats(); return s.Added - s.Failed, s.Failed + local.Load() })
	defer prog.stop()
	br := bufio.NewReaderSize(in, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			it := &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Source: line}
			var err error
			if o.idField != "" || o.routingField != "" {
				it.Id, it.Routing, err = lineKeys(line, o.idField, o.routingField)
			}
			if err != nil {
				failed.add(lineNo, err.Error())
				local.Add(1)
			} else {
				lines.Store(it, lineNo)
				if err := ix.Add(ctx, it); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	cerr := ix.Close(ctx)
	prog.stop()
	failed.print(stderr)
	st := ix.Stats()
	nfailed := st.Failed + local.Load()
	fmt.Fprintf(stdout, "%d documents: %d created, %d updated, %d failed in %s (%.0f docs/s)\n",
		st.Added+local.Load(), st.Created, st.Updated, nfailed, prog.elapsed().Round(time.Millisecond), float64(st.Created+st.Updated)/prog.elapsed().Seconds())
	if cerr != nil {
		return rpcError(cerr)
	}
	if nfailed > 0 {
		return fmt.Errorf("%d documents failed", nfailed)
	}
	return nil
}

// progress prints a status line to stderr every second.
type progress struct {
	w       io.Writer
	size    int64
	pos     func() int64
	docs    func() (done, failed int64)
	start   time.Time
	tty     bool
	done    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
	end     time.Time
}

func newProgress(w io.Writer, size int64, pos func() int64, docs func() (done, failed int64)) *progress {
	p := &progress{w: w, size: size, pos: pos, docs: docs, start: time.Now(), done: make(chan struct{}), tty: isTerminal(w)}
	p.wg.Go(p.run)
	return p
}

func (p *progress) run() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			n++
			if p.tty || n%5 == 0 {
				p.print()
			}
		}
	}
}

func (p *progress) print() {
	el := time.Since(p.start)
	docs, failed := p.docs()
	rate := float64(docs) / el.Seconds()
	line := fmt.Sprintf("%d docs  %.0f docs/s  %s", docs, rate, el.Round(time.Second))
	if failed > 0 {
		line += fmt.Sprintf("  %d failed", failed)
	}
	if pos := p.pos(); p.size > 0 && pos > 0 {
		frac := float64(pos) / float64(p.size)
		eta := time.Duration(float64(el) * (1 - frac) / frac)
		line += fmt.Sprintf("  %.1f%%  ETA %s", 100*frac, eta.Round(time.Second))
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%-78s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) stop() {
	p.stopped.Do(func() {
		close(p.done)
		p.wg.Wait()
		p.end = time.Now()
		if p.tty {
			fmt.Fprint(p.w, "\r"+strings.Repeat(" ", 78)+"\r")
		}
	})
}

func (p *progress) elapsed() time.Duration {
	if p.end.IsZero() {
		return time.Since(p.start)
	}
	return p.end.Sub(p.start)
}

func newGetCmd() *cobra.Command {
	var f clientFlags
	var routing string
	var refresh bool
	cmd := &cobra.Command{
		Use:     "get INDEX ID",
		Short:   "Print a document's source by id",
		GroupID: groupClient,
		Args:    cobra.ExactArgs(2),
		Long: `Print the _source of one document. Reads the latest refresh; --refresh
refreshes the document's shard first when the id was written since (a
realtime get). Exits non-zero if the document does not exist.`,
		Example: `  sluice get books 978-0-14-044913-6
  sluice get logs abc --routing tenant-7 --refresh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Get(ctx, &sluicev1.GetRequest{Index: args[0], Id: args[1], Routing: routing, Refresh: refresh})
				if err != nil {
					return rpcError(err)
				}
				if !resp.Found {
					return fmt.Errorf("document [%s] not found in [%s]", args[1], resp.Index)
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(resp.Source))
				return err
			})
		},
	}
	f.register(cmd, timeoutWhole)
	cmd.Flags().StringVar(&routing, "routing", "", "routing value the document was indexed with")
	cmd.Flags().BoolVar(&refresh, "refresh", false, "refresh the shard first if the document changed since the last refresh")
	return cmd
}

func newSearchCmd() *cobra.Command {
	var f clientFlags
	var qf queryFlags
	var field, output string
	var size, from int32
	var sorts []string
	var noSource, showQuery bool
	cmd := &cobra.Command{
		Use:     "search INDEX[,INDEX...] [QUERY]",
		Short:   "Search indices with a query string or an Elasticsearch query",
		GroupID: groupClient,
		Args:    cobra.RangeArgs(1, 2),
		Long: `Search one or more indices (or aliases) and print the hits, one JSON line each:
{"_index", "_id", "_score", "_routing" (if any), "_source"} (with --output json:
the whole response).

QUERY is a simple query string:
  field:value    a match query on that field (analyzed like the field)
  free text      a match query on --field, or on every text field of the
                 indices when --field is not given
  (nothing)      match_all
--query takes a query in the Elasticsearch query DSL instead (the JSON that
Elasticsearch's "query" holds, and that Reindex resources and "sluice reindex
--query" take): match_all, match, match_phrase, term, terms, range, bool and
ids, in their short and long forms. Anything else is an error naming where it
is, never ignored. --proto-json takes the protobuf JSON of sluice.v1.Query, as
gRPC clients send it. --print-query prints the query (from any of these) in
the query DSL and exits without searching.
--sort takes field[:asc|desc] keys (also _score and _doc), or Elasticsearch's
sort JSON; repeat it for several keys.`,
		Example: `  sluice search wiki 'title:anarchism'
  sluice search wiki 'river delta' --size 3
  sluice search books --query '{"bool": {"must": {"match": {"title": "go"}}, "filter": {"range": {"year": {"gte": 2000}}}}}'
  sluice search books --query @query.json --sort year:desc --sort _doc --size 20
  sluice search books --sort '[{"year": {"order": "desc", "missing": "_first"}}, "_score"]'
  sluice search wiki 'river delta' --print-query
  sluice search books --proto-json '{"term": {"field": "isbn", "value": {"stringValue": "123"}}}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			indices := strings.Split(args[0], ",")
			q, err := qf.parse()
			if err != nil {
				return err
			}
			var text string
			if len(args) == 2 {
				text = strings.TrimSpace(args[1])
			}
			if text != "" && qf.set() {
				return errors.New("give a query string or --query/--proto-json, not both")
			}
			if fq, ok := fieldQuery(text, field); text != "" && ok {
				q, text = fq, ""
			}
			if showQuery && text == "" {
				return printQuery(cmd.OutOrStdout(), q)
			}
			req := &sluicev1.SearchRequest{Indices: indices, Query: q, Size: &size, From: from}
			if noSource {
				req.FetchSource = new(bool)
			}
			for _, s := range sorts {
				keys, err := parseSort(s)
				if err != nil {
					return err
				}
				req.Sort = append(req.Sort, keys...)
			}
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				if text != "" {
					if req.Query, err = freeTextQuery(ctx, c, indices, text); err != nil {
						return err
					}
				}
				if showQuery {
					return printQuery(cmd.OutOrStdout(), req.Query)
				}
				resp, err := c.Search(ctx, req)
				if err != nil {
					return rpcError(err)
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), resp)
				}
				return printHits(cmd.OutOrStdout(), cmd.ErrOrStderr(), resp, scored(req.Sort))
			})
		},
	}
	f.register(cmd, timeoutWhole)
	qf.register(cmd, "hits")
	cmd.Flags().StringVar(&field, "field", "", "field for free-text queries (default: every text field)")
	cmd.Flags().Int32Var(&size, "size", 10, "hits to return; 0 prints only the count")
	cmd.Flags().Int32Var(&from, "from", 0, "hits to skip")
	cmd.Flags().StringArrayVar(&sorts, "sort", nil, "sort key field[:asc|desc], or Elasticsearch sort JSON; repeatable")
	cmd.Flags().BoolVar(&noSource, "no-source", false, "do not fetch _source")
	cmd.Flags().BoolVar(&showQuery, "print-query", false, "print the query as Elasticsearch query DSL JSON instead of searching")
	cmd.Flags().StringVar(&output, "output", "hits", "hits (JSON lines) or json (the whole response)")
	return cmd
}

// parseSort reads a --sort value: field[:asc|desc], or Elasticsearch's sort
// JSON ([{"year": "desc"}, "_score"]).
func parseSort(s string) ([]*sluicev1.SortField, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") || strings.HasPrefix(t, `"`) {
		keys, err := esjson.ParseSort([]byte(t))
		if err != nil {
			return nil, fmt.Errorf("--sort: %w", err)
		}
		return keys, nil
	}
	name, order, _ := strings.Cut(s, ":")
	sf := &sluicev1.SortField{Field: name}
	switch order {
	case "":
	case "asc":
		sf.Order = sluicev1.SortOrder_SORT_ORDER_ASC
	case "desc":
		sf.Order = sluicev1.SortOrder_SORT_ORDER_DESC
	default:
		return nil, fmt.Errorf("--sort %q: order must be asc or desc", s)
	}
	return []*sluicev1.SortField{sf}, nil
}

// hitLine is a hit as printed; a scrolled document has no score.
type hitLine struct {
	Index   string          `json:"_index"`
	ID      string          `json:"_id"`
	Score   *float32        `json:"_score,omitempty"`
	Routing string          `json:"_routing,omitempty"`
	Source  json.RawMessage `json:"_source,omitempty"`
}

// scored says whether hits sorted by keys have a score: with no sort
// (by score) or a sort that names _score; a sort by fields alone does not
// compute one (Elasticsearch shows null), so none is printed.
func scored(keys []*sluicev1.SortField) bool {
	return len(keys) == 0 || slices.ContainsFunc(keys, func(k *sluicev1.SortField) bool { return k.GetField() == "_score" })
}

func printHits(w, info io.Writer, resp *sluicev1.SearchResponse, withScore bool) error {
	rel := "="
	if resp.GetTotal().GetRelation() == sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE {
		rel = ">="
	}
	fmt.Fprintf(info, "hits %s %d, %d shards (%d failed), took %s\n", rel, resp.GetTotal().GetValue(),
		resp.GetShards().GetTotal(), resp.GetShards().GetFailed(), resp.GetTook().AsDuration().Round(time.Microsecond))
	for _, fl := range resp.GetShards().GetFailures() {
		fmt.Fprintf(info, "  shard [%s][%d]: %s\n", fl.GetIndex(), fl.GetShard(), fl.GetError().GetReason())
	}
	enc := json.NewEncoder(w)
	for _, h := range resp.GetHits() {
		line := hitLine{Index: h.Index, ID: h.Id, Routing: h.Routing, Source: h.Source}
		if withScore {
			line.Score = &h.Score
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

func newScrollCmd() *cobra.Command {
	var f clientFlags
	var qf queryFlags
	var out string
	var slices, batch int32
	var sourceOnly bool
	cmd := &cobra.Command{
		Use:     "scroll INDEX[,INDEX...]",
		Short:   "Export every document (or those matching a query) as JSON lines",
		GroupID: groupClient,
		Args:    cobra.ExactArgs(1),
		Long: `Export documents in index order through the Scroll API, one JSON line each:
{"_index", "_id", "_routing" (if any), "_source"}, or just the source with
--source-only (which "sluice bulk" reads back when the id is a field of the
source).

--slices N reads N disjoint slices in parallel (a sliced scroll over one
point-in-time): together they return every document exactly once. A broken
stream is resumed from its last cursor, so a long export survives a
coordinator restart.`,
		Example: `  sluice scroll wiki -o wiki.jsonl --slices 4
  sluice scroll books --query '{"range": {"year": {"lt": 1900}}}' --source-only`,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := qf.parse()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				fw, err := os.Create(out)
				if err != nil {
					return err
				}
				defer fw.Close()
				w = fw
			}
			n, err := runScroll(ctx, c, strings.Split(args[0], ","), q, slices, batch, sourceOnly, w, cmd.ErrOrStderr())
			if err != nil {
				return rpcError(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d documents exported\n", n)
			return nil
		},
	}
	f.register(cmd, "")
	qf.register(cmd, "only documents")
	cmd.Flags().StringVarP(&out, "output", "o", "-", "output file (- for stdout)")
	cmd.Flags().Int32Var(&slices, "slices", 1, "parallel slices")
	cmd.Flags().Int32Var(&batch, "batch", 1000, "documents per streamed batch")
	cmd.Flags().BoolVar(&sourceOnly, "source-only", false, "write only each document's source")
	return cmd
}

// runScroll exports with n parallel slices over one point-in-time.
func runScroll(ctx context.Context, c *client.Client, indices []string, q *sluicev1.Query, n, batch int32, sourceOnly bool, w io.Writer, info io.Writer) (int64, error) {
	if n < 1 {
		return 0, errors.New("--slices must be >= 1")
	}
	pit, err := c.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: indices, KeepAlive: durationpb.New(5 * time.Minute)})
	if err != nil {
		return 0, err
	}
	defer c.ClosePointInTime(context.WithoutCancel(ctx), &sluicev1.ClosePointInTimeRequest{Id: pit.Id})
	bw := bufio.NewWriterSize(w, 1<<20)
	var mu sync.Mutex
	var total atomic.Int64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for id := range n {
		wg.Go(func() {
			req := &sluicev1.ScrollRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}, Query: q, BatchSize: batch}
			if n > 1 {
				req.Slice = &sluicev1.Slice{Id: id, Max: n}
			}
			errs[id] = scrollSlice(ctx, c, req, func(docs []*sluicev1.ScrollDoc) error {
				var buf bytes.Buffer
				for _, d := range docs {
					if sourceOnly {
						buf.Write(d.Source)
						buf.WriteByte('\n')
						continue
					}
					b, err := json.Marshal(hitLine{Index: d.Index, ID: d.Id, Routing: d.Routing, Source: d.Source})
					if err != nil {
						return err
					}
					buf.Write(b)
					buf.WriteByte('\n')
				}
				total.Add(int64(len(docs)))
				mu.Lock()
				defer mu.Unlock()
				_, err := bw.Write(buf.Bytes())
				return err
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return total.Load(), err
	}
	return total.Load(), bw.Flush()
}

// scrollSlice reads one slice, resuming from the last cursor when the
// stream breaks (up to a few times in a row without progress).
func scrollSlice(ctx context.Context, c *client.Client, req *sluicev1.ScrollRequest, emit func([]*sluicev1.ScrollDoc) error) error {
	failures := 0
	for {
		stream, err := c.Scroll(ctx, req)
		if err == nil {
			for {
				var r *sluicev1.ScrollResponse
				if r, err = stream.Recv(); err != nil {
					break
				}
				if err = emit(r.Docs); err != nil {
					return err
				}
				req.Cursor, failures = r.Cursor, 0
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
		}
		if failures++; failures > 3 || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(failures) * 200 * time.Millisecond)
	}
}

func newRefreshCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "refresh [INDEX...]",
		Short:   "Make every acknowledged write searchable now",
		GroupID: groupClient,
		Long: `Refresh indices (all when none is named): writes acknowledged before the
call become visible to search and get. Indices refresh on their own every
refresh_interval (1s by default); use this in scripts and tests.`,
		Example: `  sluice refresh books
  sluice refresh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.call(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Refresh(ctx, &sluicev1.RefreshRequest{Indices: args})
				if err != nil {
					return rpcError(err)
				}
				s := resp.GetShards()
				fmt.Fprintf(cmd.OutOrStdout(), "refreshed %d of %d shards\n", s.GetSuccessful(), s.GetTotal())
				if s.GetFailed() > 0 {
					for _, fl := range s.GetFailures() {
						fmt.Fprintf(cmd.ErrOrStderr(), "  shard [%s][%d]: %s\n", fl.GetIndex(), fl.GetShard(), fl.GetError().GetReason())
					}
					return fmt.Errorf("%d shards failed to refresh", s.GetFailed())
				}
				return nil
			})
		},
	}
	f.register(cmd, timeoutWhole)
	return cmd
}
