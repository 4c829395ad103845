package reindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ShardIngest receives a remote slice's documents for one local shard.
// Batches are applied as they arrive (gRPC flow control holds the sender
// back meanwhile); at the end of the stream the shard is committed before
// the answer, so the sender may checkpoint past every document it sent.
func (r *Runner) ShardIngest(stream grpc.ClientStreamingServer[nodev1.ShardIngestRequest, nodev1.ShardIngestResponse]) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return stream.SendAndClose(&nodev1.ShardIngestResponse{})
	}
	if err != nil {
		return err
	}
	id := first.GetShard()
	if id == nil {
		return fmt.Errorf("%w: shard ingest: the first message must name the shard", ErrInvalid)
	}
	sh, err := r.host.Get(shard.ID{IndexUUID: id.GetIndexUuid(), Shard: int(id.GetShard())})
	if err != nil {
		return err
	}
	defer sh.PauseRefresh()()
	createOnly := first.GetOpType() == sluicev1.BulkAction_BULK_ACTION_CREATE
	c := counters{errs: r.errs}
	for msg := first; ; {
		if err := r.writeBlocked(id.GetIndexUuid()); err != nil {
			return err
		}
		if err := r.applyBatch(ctx, sh, msg.GetDocs(), createOnly, &c); err != nil {
			return err
		}
		msg, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if _, err := sh.Commit(ctx); err != nil {
		return fmt.Errorf("shard %v: commit: %w", sh.ID(), err)
	}
	return stream.SendAndClose(&nodev1.ShardIngestResponse{Created: c.created.Load(), Updated: c.updated.Load(),
		VersionConflicts: c.conflicts.Load(), Failures: c.failures.Load(), FailureSamples: c.takeSamples()})
}

// applyBatch writes a batch with the runner's workers; ids within a batch
// are distinct (they come from one source shard), so order does not matter.
// Conflicts are counted, never fatal here: the sender applies its conflicts
// policy when the stream's counts come back.
func (r *Runner) applyBatch(ctx context.Context, sh *shard.Shard, docs []*nodev1.IngestDoc, createOnly bool, c *counters) error {
	n := min(r.opts.Workers, len(docs))
	errs := make([]error, n)
	b := sh.NewBatch() // one fsync for the batch
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			ctx := engine.WithAffinity(ctx)
			for i := w; i < len(docs); i += n {
				d := docs[i]
				if err := applyDoc(ctx, sh, b, []byte(d.GetId()), []byte(d.GetRouting()), d.GetSource(), createOnly, false, c); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	// Synced even when a document failed the batch: the others are
	// indexed on the primary, and its replicas must get them too.
	return errors.Join(errors.Join(errs...), b.Sync(ctx))
}

// ingestStream sends one destination shard's documents to its node.
type ingestStream struct {
	addr   string
	shard  *nodev1.ShardID
	opType sluicev1.BulkAction
	stream grpc.ClientStreamingClient[nodev1.ShardIngestRequest, nodev1.ShardIngestResponse]
	batch  *nodev1.ShardIngestRequest
	bytes  int
}

func (s *ingestStream) add(id, routing, source []byte) {
	if s.batch == nil {
		s.batch = &nodev1.ShardIngestRequest{}
	}
	s.batch.Docs = append(s.batch.Docs, &nodev1.IngestDoc{Id: string(id), Routing: string(routing), Source: append([]byte(nil), source...)})
	s.bytes += len(id) + len(routing) + len(source)
}

// flush sends the pending batch, opening the stream first if needed. Send
// blocks while the receiver is behind: that is the backpressure.
func (s *ingestStream) flush(ctx context.Context, r *Runner) error {
	if s.batch == nil || len(s.batch.Docs) == 0 {
		return nil
	}
	if s.stream == nil {
		cl, err := r.client(s.addr)
		if err != nil {
			return err
		}
		if s.stream, err = cl.ShardIngest(ctx); err != nil {
			return fmt.Errorf("shard ingest to %s: %w", s.addr, err)
		}
		s.batch.Shard, s.batch.OpType = s.shard, s.opType
	}
	if err := s.stream.Send(s.batch); err != nil {
		// The real error comes with the stream's status.
		if _, rerr := s.stream.CloseAndRecv(); rerr != nil {
			err = rerr
		}
		s.stream = nil
		return fmt.Errorf("shard ingest to %s: %w", s.addr, err)
	}
	s.batch, s.bytes = nil, 0
	return nil
}

// close flushes, ends the stream and adds the receiver's counts once it has
// committed.
func (s *ingestStream) close(ctx context.Context, r *Runner, c *counters) error {
	if err := s.flush(ctx, r); err != nil {
		return err
	}
	if s.stream == nil {
		return nil
	}
	resp, err := s.stream.CloseAndRecv()
	s.stream = nil
	if err != nil {
		return fmt.Errorf("shard ingest to %s: %w", s.addr, err)
	}
	c.created.Add(resp.GetCreated())
	c.updated.Add(resp.GetUpdated())
	c.conflicts.Add(resp.GetVersionConflicts())
	c.failures.Add(resp.GetFailures())
	c.mu.Lock()
	for _, f := range resp.GetFailureSamples() {
		if len(c.samples) < maxFailureSamples {
			c.samples = append(c.samples, f)
		}
	}
	c.mu.Unlock()
	return nil
}
