package datapath

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Budget bounds the bytes a kind of work holds at once (Elasticsearch's
// indexing pressure, per coordinator and per node): work reserves its
// bytes before it holds them for long and releases them when done. A
// reservation larger than the whole budget is clamped to it, so it runs
// alone instead of never.
type Budget struct {
	limit int64
	sem   *semaphore.Weighted
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes (> 0).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, sem: semaphore.NewWeighted(limit)}
}

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }

// Used is the bytes reserved now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Reservation is bytes taken from a Budget. Release gives them back; it
// is safe to call more than once, so `defer r.Release()` covers every
// path.
type Reservation struct {
	b    *Budget
	mu   sync.Mutex
	n    int64
	done bool
}

// Reserve takes n bytes: at once if they are free, else waiting up to
// wait (0: not at all; negative: as long as ctx allows). It fails with
// ctx's error, or with errFull when the wait ran out.
func (b *Budget) Reserve(ctx context.Context, n int64, wait time.Duration) (*Reservation, error) {
	n = b.clamp(n)
	if err := b.acquire(ctx, n, wait); err != nil {
		return nil, err
	}
	return &Reservation{b: b, n: n}, nil
}

// errFull: no room appeared within the wait. Callers wrap it with what
// was full (ErrOverloaded).
var errFull = errorString("budget full")

type errorString string

func (e errorString) Error() string { return string(e) }

func (b *Budget) clamp(n int64) int64 { return max(0, min(n, b.limit)) }

func (b *Budget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if n == 0 {
		return nil
	}
	// TryAcquire first: Acquire fails on a context that is already done,
	// even with room.
	if !b.sem.TryAcquire(n) {
		if wait == 0 {
			return errFull
		}
		wctx := ctx
		if wait > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, wait)
			defer cancel()
		}
		if err := b.sem.Acquire(wctx, n); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errFull
		}
	}
	b.used.Add(n)
	return nil
}

// Bytes is what the reservation holds.
func (r *Reservation) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Resize makes the reservation hold n bytes. Less gives the excess back
// at once; more gives everything back and then takes n as Reserve does —
// never waiting while holding, so resizing reservations cannot deadlock
// each other. On failure the reservation holds nothing.
func (r *Reservation) Resize(ctx context.Context, n int64, wait time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = r.b.clamp(n)
	if r.done {
		return errFull
	}
	if n <= r.n {
		r.b.release(r.n - n)
		r.n = n
		return nil
	}
	r.b.release(r.n)
	r.n = 0
	if err := r.b.acquire(ctx, n, wait); err != nil {
		return err
	}
	r.n = n
	return nil
}

// Release gives the bytes back.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.done = true
		r.b.release(r.n)
		r.n = 0
	}
}

func (b *Budget) release(n int64) {
	if n > 0 {
		b.used.Add(-n)
		b.sem.Release(n)
	}
}

// searchHold is the search budget one search or scroll batch holds: the
// bytes of the documents it has gathered and not yet handed to gRPC.
type searchHold struct {
	d     *DataPath
	field string // the request field that asks for more or less (size, batch_size)
	mu    sync.Mutex
	n     int64
	rs    []*Reservation
}

func (d *DataPath) holdSearch(field string) *searchHold { return &searchHold{d: d, field: field} }

// add holds n more bytes, waiting at most AdmissionWait for room. More
// than the whole budget is ErrTooLarge: waiting cannot help.
func (h *searchHold) add(ctx context.Context, n int64) error {
	b := h.d.searchBytes
	h.mu.Lock()
	total := h.n + n
	h.mu.Unlock()
	if total > b.Limit() {
		return &fieldError{field: h.field, err: fmt.Errorf("%w: the documents asked for take %d bytes, more than the coordinator's search budget of %d; ask for fewer (%s) or without _source",
			ErrTooLarge, total, b.Limit(), h.field)}
	}
	r, err := b.Reserve(ctx, n, h.d.opts.AdmissionWait)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %d bytes of search results in flight on this coordinator (budget %d); retry after backoff", ErrOverloaded, b.Used(), b.Limit())
	}
	h.mu.Lock()
	h.n += n
	h.rs = append(h.rs, r)
	h.mu.Unlock()
	return nil
}

// release gives back everything held.
func (h *searchHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rs {
		r.Release()
	}
	h.rs, h.n = nil, 0
}

// docBytes is what a fetched document weighs in the search budget.
func docBytes(id, routing string, source []byte) int64 {
	return int64(len(id) + len(routing) + len(source) + 32)
}

// heldKey is the context key of the reservation a call was admitted with.
type heldKey struct{}

// MaxRequestBytes is the largest request a coordinator receives: a
// quarter of the bulk budget, at most 64 MiB (the servers' message
// limit).
func (o Options) MaxRequestBytes() int64 {
	return min(64<<20, max(o.MaxInFlightBulkBytes/4, 1))
}

// AdmitBulk is the coordinator's first look at a Bulk or BulkStream call,
// before any of its bytes are read (a gRPC tap): it reserves room for the
// largest request the coordinator receives, or refuses the call with
// ErrOverloaded when the budget has no such room. So under overload bulks
// are refused before they are received and decoded, and the requests
// being received at once are bounded by the budget too; the call's
// handler then resizes the reservation to the request's real size. ctx
// must end with the call (a server stream's context does): that releases
// the reservation whatever happens to the call.
func (d *DataPath) AdmitBulk(ctx context.Context) (context.Context, error) {
	r, err := d.bulkBytes.Reserve(ctx, d.opts.MaxRequestBytes(), 0)
	if err != nil {
		return ctx, d.bulkOverloaded(ctx, err)
	}
	context.AfterFunc(ctx, r.Release)
	return context.WithValue(ctx, heldKey{}, r), nil
}

// holdBulk holds n bytes of a bulk request or batch against the
// coordinator's budget: the call's admission reservation resized, or a new
// one (in-process calls are not admitted).
func (d *DataPath) holdBulk(ctx context.Context, n int64, wait time.Duration) (*Reservation, error) {
	r, _ := ctx.Value(heldKey{}).(*Reservation)
	if r == nil {
		var err error
		if r, err = d.bulkBytes.Reserve(ctx, n, wait); err != nil {
			return nil, d.bulkOverloaded(ctx, err)
		}
		return r, nil
	}
	if err := r.Resize(ctx, n, wait); err != nil {
		return nil, d.bulkOverloaded(ctx, err)
	}
	return r, nil
}
