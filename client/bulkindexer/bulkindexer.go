// Package bulkindexer loads documents through Sluice's unary Bulk RPC:
// items are batched by count and bytes, sent by a fixed number of
// concurrent workers, and retried with exponential backoff (jittered,
// honouring the server's delay: a google.rpc.RetryInfo, or an item's
// ErrorDetail.retry_delay) when the cluster sheds load or a shard is not
// started yet — a RESOURCE_EXHAUSTED or UNAVAILABLE answer for the whole
// batch or for some items (only those are resent; a load right after the
// index is created meets shards still starting, as one during a node
// restart meets shards moving). Every other per-item failure (malformed
// JSON, mapping conflict, unknown index) is final and reported through
// Config.OnError; nothing is dropped
// silently: an item either succeeds, or OnError sees it, or Close returns
// an error.
//
// Add blocks while all workers are busy and the queue is full, so memory
// is bounded by Workers × batch size, not by the input.
package bulkindexer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// Bulker is the part of the Sluice client the indexer uses.
type Bulker interface {
	Bulk(ctx context.Context, in *sluicev1.BulkRequest, opts ...grpc.CallOption) (*sluicev1.BulkResponse, error)
}

// Config configures an Indexer.
type Config struct {
	Client Bulker
	// Index is the default index of items that name none.
	Index string
	// BatchDocs and BatchBytes close a batch (defaults 1,000 and 5 MiB).
	BatchDocs  int
	BatchBytes int
	// FlushInterval sends a partial batch that waited this long (default 1 s).
	FlushInterval time.Duration
	// Workers is the number of concurrent Bulk calls (default 4).
	Workers int
	// Refresh is the refresh policy of every batch (default none).
	Refresh sluicev1.RefreshPolicy
	// MaxRetries bounds the attempts of one item after overload or an
	// unavailable shard (default 20); InitialBackoff (100 ms) doubles up to
	// MaxBackoff (10 s), about two and a half minutes in all.
	MaxRetries                 int
	InitialBackoff, MaxBackoff time.Duration
	// OnError is called (from worker goroutines, or from Add for an item
	// that cannot be encoded) for each item that failed for good; res says
	// why.
	OnError func(item *sluicev1.BulkItem, res *sluicev1.BulkItemResult)
	// OnSuccess, if set, is called for each item applied.
	OnSuccess func(item *sluicev1.BulkItem, res *sluicev1.BulkItemResult)
}

// SetDefaults fills zero fields.
func (c *Config) SetDefaults() {
	if c.BatchDocs <= 0 {
		c.BatchDocs = 1000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 5 << 20
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 20
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Second
	}
}

// Stats counts outcomes so far.
type Stats struct {
	Added, Created, Updated, Deleted, NotFound, Failed int64
	// Noop counts partial updates (BULK_ACTION_UPDATE) that changed nothing.
	Noop int64
	// Retries counts item resends after overload.
	Retries int64
	// Bytes of sources added.
	Bytes int64
}

// Indexer batches and sends items. Add from any number of goroutines;
// Close once.
type Indexer struct {
	cfg   Config
	queue chan []*sluicev1.BulkItem
	wg    sync.WaitGroup

	mu     sync.Mutex
	batch  []*sluicev1.BulkItem
	bytes  int
	timer  *time.Timer
	closed bool
	// sending counts batches taken but not yet queued, so Close closes the
	// queue only after them.
	sending sync.WaitGroup
	fatalMu sync.Mutex
	fatal   error
	// refused is set once the cluster refused a TLS handshake: every
	// later batch would fail the same way, so none is sent.
	refused atomic.Pointer[RefusedError]

	added, created, updated, deleted, notFound, noop, failed, retries, nbytes atomic.Int64
}

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("bulkindexer: closed")

// RefusedError is a TLS handshake refused for its certificates, by the
// coordinator or between the coordinator and a data node
// (tlsconf.Refused). It is not retried: nothing changes until someone
// changes certificates or CAs. Add and Close return it once seen, and
// later batches fail with it unsent.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string {
	return "bulkindexer: a TLS handshake was refused (a certificate not trusted or not accepted; not retried): " + e.Reason
}

// refuse records the first refusal and returns the one recorded.
func (ix *Indexer) refuse(reason string) *RefusedError {
	ix.refused.CompareAndSwap(nil, &RefusedError{Reason: reason})
	r := ix.refused.Load()
	ix.fatalMu.Lock()
	if ix.fatal == nil {
		ix.fatal = r
	}
	ix.fatalMu.Unlock()
	return r
}

// New starts an Indexer's workers.
func New(cfg Config) (*Indexer, error) {
	if cfg.Client == nil {
		return nil, errors.New("bulkindexer: Config.Client is required")
	}
	cfg.SetDefaults()
	ix := &Indexer{cfg: cfg, queue: make(chan []*sluicev1.BulkItem, cfg.Workers)}
	for range cfg.Workers {
		ix.wg.Go(ix.worker)
	}
	return ix, nil
}

// Add queues an item; it blocks while the queue is full. An item whose
// index, id or routing is not valid UTF-8 cannot be encoded, and would fail
// its whole batch: it fails alone, at once, through OnError.
func (ix *Indexer) Add(ctx context.Context, item *sluicev1.BulkItem) error {
	if r := ix.refused.Load(); r != nil {
		return r
	}
	for _, f := range []struct{ name, v string }{{"index", item.GetIndex()}, {"_id", item.GetId()}, {"routing", item.GetRouting()}} {
		if !utf8.ValidString(f.v) {
			ix.added.Add(1)
			ix.failed.Add(1)
			if ix.cfg.OnError != nil {
				ix.cfg.OnError(item, &sluicev1.BulkItemResult{Action: item.GetAction(), Index: validUTF8(item.GetIndex()), Id: validUTF8(item.GetId()),
					Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR,
					Error:  &sluicev1.ErrorDetail{Code: int32(codes.InvalidArgument), Field: f.name, Reason: f.name + " is not valid UTF-8"}})
			}
			return nil
		}
	}
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return ErrClosed
	}
	ix.batch = append(ix.batch, item)
	ix.bytes += len(item.GetSource()) + len(item.GetId())
	ix.added.Add(1)
	ix.nbytes.Add(int64(len(item.GetSource())))
	var full []*sluicev1.BulkItem
	if len(ix.batch) >= ix.cfg.BatchDocs || ix.bytes >= ix.cfg.BatchBytes {
		full = ix.takeLocked()
		ix.sending.Add(1)
	} else if ix.timer == nil {
		ix.timer = time.AfterFunc(ix.cfg.FlushInterval, ix.flushTimer)
	}
	ix.mu.Unlock()
	if full == nil {
		return nil
	}
	defer ix.sending.Done()
	select {
	case ix.queue <- full:
		return nil
	case <-ctx.Done():
		// The batch was taken: report its items rather than lose them.
		ix.failAll(full, ctx.Err())
		return ctx.Err()
	}
}

func (ix *Indexer) takeLocked() []*sluicev1.BulkItem {
	b := ix.batch
	ix.batch, ix.bytes = nil, 0
	if ix.timer != nil {
		ix.timer.Stop()
		ix.timer = nil
	}
	return b
}

func (ix *Indexer) flushTimer() {
	ix.mu.Lock()
	if ix.closed || len(ix.batch) == 0 {
		ix.timer = nil
		ix.mu.Unlock()
		return
	}
	b := ix.takeLocked()
	ix.sending.Add(1)
	ix.mu.Unlock()
	defer ix.sending.Done()
	ix.queue <- b
}

// Close sends what is buffered, waits for every batch (retries included)
// and stops the workers. It returns an error if a batch could not be sent
// at all (its items were also passed to OnError).
func (ix *Indexer) Close(ctx context.Context) error {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return ErrClosed
	}
	ix.closed = true
	last := ix.takeLocked()
	ix.mu.Unlock()
	if len(last) > 0 {
		select {
		case ix.queue <- last:
		case <-ctx.Done():
			ix.failAll(last, ctx.Err())
		}
	}
	ix.sending.Wait()
	close(ix.queue)
	ix.wg.Wait()
	ix.fatalMu.Lock()
	defer ix.fatalMu.Unlock()
	return ix.fatal
}

// Stats returns the counters.
func (ix *Indexer) Stats() Stats {
	return Stats{Added: ix.added.Load(), Created: ix.created.Load(), Updated: ix.updated.Load(), Deleted: ix.deleted.Load(),
		NotFound: ix.notFound.Load(), Noop: ix.noop.Load(), Failed: ix.failed.Load(), Retries: ix.retries.Load(), Bytes: ix.nbytes.Load()}
}

func (ix *Indexer) worker() {
	for b := range ix.queue {
		ix.send(b)
	}
}

// send delivers one batch, resending overloaded items with backoff.
func (ix *Indexer) send(items []*sluicev1.BulkItem) {
	ctx := context.Background()
	for attempt := 0; len(items) > 0; attempt++ {
		if r := ix.refused.Load(); r != nil {
			ix.failAll(items, r)
			return
		}
		resp, err := ix.cfg.Client.Bulk(ctx, &sluicev1.BulkRequest{Index: ix.cfg.Index, Items: items, Refresh: ix.cfg.Refresh})
		if tlsconf.Refused(err) {
			ix.failAll(items, ix.refuse(status.Convert(err).Message()))
			return
		}
		if err != nil {
			c := status.Code(err)
			if (c == codes.ResourceExhausted || c == codes.Unavailable) && attempt < ix.cfg.MaxRetries {
				ix.retries.Add(int64(len(items)))
				time.Sleep(ix.backoff(attempt, retryDelay(err)))
				continue
			}
			ix.failAll(items, err)
			ix.fatalMu.Lock()
			if ix.fatal == nil {
				ix.fatal = fmt.Errorf("bulkindexer: %d items not sent: %w", len(items), err)
			}
			ix.fatalMu.Unlock()
			return
		}
		var again []*sluicev1.BulkItem
		var hint time.Duration // the longest retry delay of the overloaded items
		for i, r := range resp.GetItems() {
			it := items[i]
			switch r.GetStatus() {
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED:
				ix.created.Add(1)
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED:
				ix.updated.Add(1)
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED:
				ix.deleted.Add(1)
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND:
				ix.notFound.Add(1)
			case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP:
				ix.noop.Add(1)
			default:
				if tlsconf.RefusedMessage(r.GetError().GetReason()) {
					ix.refuse(r.GetError().GetReason())
				} else if c := codes.Code(r.GetError().GetCode()); (c == codes.ResourceExhausted || c == codes.Unavailable) && attempt < ix.cfg.MaxRetries {
					again = append(again, it)
					hint = max(hint, r.GetError().GetRetryDelay().AsDuration())
					continue
				}
				ix.failed.Add(1)
				if ix.cfg.OnError != nil {
					ix.cfg.OnError(it, r)
				}
				continue
			}
			if ix.cfg.OnSuccess != nil {
				ix.cfg.OnSuccess(it, r)
			}
		}
		if len(again) > 0 {
			ix.retries.Add(int64(len(again)))
			time.Sleep(ix.backoff(attempt, hint))
		}
		items = again
	}
}

// backoff is InitialBackoff × 2^attempt capped at MaxBackoff, at least the
// server's hint, with ±25% jitter so rejected clients do not return in
// lockstep.
func (ix *Indexer) backoff(attempt int, hint time.Duration) time.Duration {
	d := ix.cfg.InitialBackoff << min(attempt, 30)
	if d <= 0 || d > ix.cfg.MaxBackoff {
		d = ix.cfg.MaxBackoff
	}
	d = max(d, hint)
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// retryDelay reads a RetryInfo detail.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// validUTF8 repairs a string for a protobuf field.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func (ix *Indexer) failAll(items []*sluicev1.BulkItem, err error) {
	ix.failed.Add(int64(len(items)))
	if ix.cfg.OnError == nil {
		return
	}
	for _, it := range items {
		ix.cfg.OnError(it, &sluicev1.BulkItemResult{Action: it.GetAction(), Index: it.GetIndex(), Id: it.GetId(),
			Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR,
			Error:  &sluicev1.ErrorDetail{Code: int32(status.Code(err)), Reason: err.Error()}})
	}
}
