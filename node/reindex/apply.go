package reindex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// maxFailureSamples bounds the failed documents a slice reports.
const maxFailureSamples = 100

// counters are a run's outcome counts, shared by its writers, and samples
// of its failed documents, described by errs (the node's error table).
type counters struct {
	created, updated, conflicts, failures atomic.Int64
	errs                                  *rpc.Errors

	mu      sync.Mutex
	samples []*sluicev1.ShardFailure
}

func (c *counters) sample(index string, shardNum int, id []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.samples) < maxFailureSamples {
		c.samples = append(c.samples, &sluicev1.ShardFailure{Index: index, Shard: int32(shardNum),
			Error: c.errs.Detail(fmt.Errorf("document [%s]: %w", id, err))})
	}
}

func (c *counters) takeSamples() []*sluicev1.ShardFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.samples
	c.samples = nil
	return s
}

// Errors of a slice, besides the shard's and the engine's. The node's
// error table maps them to codes.
var (
	// ErrInvalid: the slice request is malformed.
	ErrInvalid = errors.New("invalid reindex slice request")
	// ErrConflictAbort ends a slice at the first conflict under
	// conflicts=abort; retrying cannot help. What conflicted (a created
	// document that exists, an update raced by a write) is in the
	// message that wraps it.
	ErrConflictAbort = errors.New("version conflict (conflicts=abort)")
	// ErrNoDestination: a destination shard is neither open here nor has a
	// node to send its documents to (yet); worth a retry.
	ErrNoDestination = errors.New("destination shard unavailable")
)

// applyDoc writes one document into a destination shard through a batch
// of the shard (the caller Syncs it once per batch, not per document),
// re-analysed with the shard's mapping, and counts the outcome.
// Only errors that should stop the copy are returned: a document that does
// not fit the mapping is a counted failure, a conflict too unless
// abortOnConflict.
func applyDoc(ctx context.Context, sh *shard.Shard, b *shard.Batch, id, routing, source []byte, createOnly, abortOnConflict bool, c *counters) error {
	res, err := b.Index(ctx, id, routing, source, createOnly)
	switch {
	case err == nil:
		if res.Created {
			c.created.Add(1)
		} else {
			c.updated.Add(1)
		}
		return nil
	case errors.Is(err, shard.ErrConflict):
		c.conflicts.Add(1)
		if abortOnConflict {
			return fmt.Errorf("shard %v: [%s]: document already exists: %w", sh.ID(), id, ErrConflictAbort)
		}
		return nil
	case errors.Is(err, mapping.ErrDocument), errors.Is(err, mapping.ErrStrict), errors.Is(err, mapping.ErrConflict):
		c.failures.Add(1)
		c.sample(sh.Index(), sh.ID().Shard, id, err)
		return nil
	}
	return fmt.Errorf("shard %v: index [%s]: %w", sh.ID(), id, err)
}

// chunk is a run of documents for one local destination shard, with their
// bytes in one buffer (the source shard's stored-fields reader reuses its
// own).
type chunk struct {
	sh   *shard.Shard
	buf  []byte
	ends []int // id end, routing end, source end, id end, ...
}

func (ch *chunk) add(id, routing, source []byte) {
	for _, b := range [...][]byte{id, routing, source} {
		ch.buf = append(ch.buf, b...)
		ch.ends = append(ch.ends, len(ch.buf))
	}
}

func (ch *chunk) len() int { return len(ch.ends) / 3 }

func (ch *chunk) doc(i int) (id, routing, source []byte) {
	start := 0
	if i > 0 {
		start = ch.ends[3*i-1]
	}
	e := ch.ends[3*i : 3*i+3]
	return ch.buf[start:e[0]], ch.buf[e[0]:e[1]], ch.buf[e[1]:e[2]]
}

func (ch *chunk) reset() { ch.buf, ch.ends = ch.buf[:0], ch.ends[:0] }

// writers is a pool of goroutines applying chunks to local shards. Wait
// returns once every chunk handed in so far is applied: the point where a
// checkpoint may be taken.
type writers struct {
	ctx             context.Context
	work            chan *chunk
	free            sync.Pool
	pending         sync.WaitGroup
	done            sync.WaitGroup
	createOnly      bool
	abortOnConflict bool
	c               *counters
	errMu           sync.Mutex
	err             error
	cancel          context.CancelCauseFunc
}

func newWriters(ctx context.Context, n int, createOnly, abortOnConflict bool, c *counters) (*writers, context.Context) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &writers{ctx: ctx, work: make(chan *chunk, n), createOnly: createOnly, abortOnConflict: abortOnConflict, c: c, cancel: cancel}
	w.free.New = func() any { return &chunk{} }
	for range n {
		w.done.Go(w.loop)
	}
	return w, ctx
}

func (w *writers) loop() {
	ctx := engine.WithAffinity(w.ctx)
	for ch := range w.work {
		// One translog fsync per chunk rather than per document: with
		// request durability a per-document fsync made local copies
		// slower than scroll + bulk through the coordinator.
		b := ch.sh.NewBatch()
		ok := true
		for i := range ch.len() {
			if w.ctx.Err() != nil {
				ok = false
				break
			}
			id, routing, src := ch.doc(i)
			if err := applyDoc(ctx, ch.sh, b, id, routing, src, w.createOnly, w.abortOnConflict, w.c); err != nil {
				w.fail(err)
				ok = false
				break
			}
		}
		if err := b.Sync(w.ctx); err != nil && ok {
			w.fail(fmt.Errorf("shard %v: sync: %w", ch.sh.ID(), err))
		}
		ch.reset()
		w.free.Put(ch)
		w.pending.Done()
	}
}

func (w *writers) fail(err error) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil {
		w.err = err
		w.cancel(err)
	}
}

func (w *writers) get(sh *shard.Shard) *chunk {
	ch := w.free.Get().(*chunk)
	ch.sh = sh
	return ch
}

func (w *writers) submit(ch *chunk) {
	w.pending.Add(1)
	select {
	case w.work <- ch:
	case <-w.ctx.Done():
		w.pending.Done()
	}
}

// wait blocks until every submitted chunk is applied and returns the first
// write error.
func (w *writers) wait() error {
	w.pending.Wait()
	return w.firstErr()
}

func (w *writers) firstErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// stop ends the goroutines once the pending chunks are done.
func (w *writers) stop() {
	close(w.work)
	w.done.Wait()
	w.cancel(nil)
}
