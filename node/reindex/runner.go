package reindex

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// Options configure a Runner.
type Options struct {
	// CheckpointInterval is how often a slice makes its writes durable and
	// reports a checkpoint, unless the request sets one. Default 5 s.
	CheckpointInterval time.Duration
	// Workers index into local destination shards, per slice (and per
	// ingest stream). Default GOMAXPROCS.
	Workers int
	// BatchDocs and BatchBytes bound one ShardIngest message. Defaults 512
	// and 1 MiB. BatchBytes also bounds the in-place updates an update by
	// query sends its shard's replicas at once (ids and fields).
	BatchDocs  int
	BatchBytes int
	// ReaderKeepAlive keeps the point-in-time reader of a slice whose run
	// ended early (coordinator gone, node unreachable), so its resume
	// continues in the same reader. Default 5 minutes.
	ReaderKeepAlive time.Duration
	// DestOpenWait: a segment copy waits this long for a co-located
	// destination shard that is not open here yet (a node restarting opens
	// its shards while slices already resume) before it copies documents
	// instead. Default 30 s.
	DestOpenWait time.Duration
	// WriteBlocked returns the error an index's writes are refused with
	// (nil when they are not): an index with a copy on a node past the
	// flood-stage disk watermark refuses the slice's writes as it refuses
	// a bulk. Nil: never blocked.
	WriteBlocked func(indexUUID string) error
	Logger       *slog.Logger
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 5 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.DestOpenWait <= 0 {
		o.DestOpenWait = 30 * time.Second
	}
	if o.BatchDocs <= 0 {
		o.BatchDocs = 512
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 1 << 20
	}
	if o.ReaderKeepAlive <= 0 {
		o.ReaderKeepAlive = 5 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Conns gives connections to other data nodes by address
// (nodeconn.Pool).
type Conns interface {
	Conn(addr string) (grpc.ClientConnInterface, error)
}

// Runner serves a data node's share of reindexing: the Reindex service
// (RunReindexSlice, ShardIngest, RethrottleReindexSlice).
type Runner struct {
	nodev1.UnimplementedReindexServer

	host  *shard.Host
	conns Conns
	errs  *rpc.Errors
	opts  Options

	mu      sync.Mutex
	running map[sliceKey]*throttle.Throttle
	kept    map[sliceKey]*keptReader
}

type sliceKey struct {
	task  string
	slice int32
}

// keptReader is a slice's reader held between runs.
type keptReader struct {
	reader      *engine.Reader
	fingerprint uint64
	// applied: an update-by-query slice's position past every document
	// it updated in place, durably (0: none known). A resume in this
	// reader starts there at least: the documents before it carry the
	// slice's own updates, newer than the versions this reader shows.
	applied int
	timer   *time.Timer
}

// NewRunner returns a Runner over the node's shards, reaching other nodes
// through conns and describing failed documents with errs (the node's
// error table). Its RPCs return typed errors: the node's server maps them
// with the same table.
func NewRunner(host *shard.Host, conns Conns, errs *rpc.Errors, opts Options) *Runner {
	opts.SetDefaults()
	return &Runner{host: host, conns: conns, errs: errs, opts: opts, running: map[sliceKey]*throttle.Throttle{},
		kept: map[sliceKey]*keptReader{}}
}

// Close releases the readers kept for resumes.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, kr := range r.kept {
		kr.timer.Stop()
		kr.reader.Release()
		delete(r.kept, k)
	}
}

// RethrottleReindexSlice changes a running slice's rate at once.
func (r *Runner) RethrottleReindexSlice(_ context.Context, req *nodev1.RethrottleReindexSliceRequest) (*nodev1.RethrottleReindexSliceResponse, error) {
	r.mu.Lock()
	th := r.running[sliceKey{req.GetTaskId(), req.GetSlice()}]
	r.mu.Unlock()
	if th == nil {
		return &nodev1.RethrottleReindexSliceResponse{}, nil
	}
	th.SetRate(float64(req.GetRequestsPerSecond()))
	return &nodev1.RethrottleReindexSliceResponse{Found: true}, nil
}

// writeBlocked says whether writes into index uuid are refused for now,
// with why (the index's flood-stage disk block).
func (r *Runner) writeBlocked(uuid string) error {
	if r.opts.WriteBlocked == nil {
		return nil
	}
	if err := r.opts.WriteBlocked(uuid); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	return nil
}

// client returns a Reindex client of another node's address.
func (r *Runner) client(addr string) (nodev1.ReindexClient, error) {
	c, err := r.conns.Conn(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return nodev1.NewReindexClient(c), nil
}

// Register adds the Reindex service, served by r, to a gRPC server.
func (r *Runner) Register(g grpc.ServiceRegistrar) { nodev1.RegisterReindexServer(g, r) }

// pin returns the reader a slice runs in and where to start: the kept
// reader if the cursor came from it, else the shard's latest reader at the
// cursor's position if its layout is the cursor's, else a freshly
// committed reader from the start (restarted, if there was a cursor).
func (r *Runner) pin(ctx context.Context, key sliceKey, src *shard.Shard, raw []byte) (rd *engine.Reader, fp uint64, next int, restarted bool, err error) {
	cur, hasCursor, err := decodeCursor(raw)
	if err != nil {
		return nil, 0, 0, false, err
	}
	r.mu.Lock()
	kr := r.kept[key]
	delete(r.kept, key)
	r.mu.Unlock()
	if kr != nil {
		kr.timer.Stop()
		if hasCursor && kr.fingerprint == cur.fingerprint {
			return kr.reader, kr.fingerprint, max(cur.next, kr.applied), false, nil
		}
		kr.reader.Release()
	}
	if hasCursor {
		if rd, fp, err = pinFingerprinted(src.Acquire()); err != nil {
			return nil, 0, 0, false, err
		}
		if fp == cur.fingerprint {
			return rd, fp, cur.next, false, nil
		}
		rd.Release()
	}
	// A fresh start: pin a committed layout, so that a node killed
	// mid-copy reopens the shard with these very segments and the slice
	// resumes by position instead of starting over.
	if rd, err = pinCommitted(ctx, src); err != nil {
		return nil, 0, 0, false, err
	}
	if rd, fp, err = pinFingerprinted(rd); err != nil {
		return nil, 0, 0, false, err
	}
	return rd, fp, 0, hasCursor, nil
}

// pinFingerprinted returns rd with its layout fingerprint, or releases it
// on error.
func pinFingerprinted(rd *engine.Reader) (*engine.Reader, uint64, error) {
	fp, err := fingerprint(rd)
	if err != nil {
		rd.Release()
		return nil, 0, err
	}
	return rd, fp, nil
}

// pinCommitted commits the source shard and returns a reader of exactly
// the committed segments (what the shard reopens with after a crash). A
// merge or a write landing between the commit and the pin changes the
// layout: then try again, and after a few attempts take the current
// reader — correct either way, only a resume after a crash would start
// over.
func pinCommitted(ctx context.Context, src *shard.Shard) (*engine.Reader, error) {
	for attempt := 0; ; attempt++ {
		si, err := src.Commit(ctx)
		if err != nil {
			return nil, fmt.Errorf("source shard %v: commit before copying: %w", src.ID(), err)
		}
		rd := src.Acquire()
		if sameLayout(rd, si) || attempt == 2 {
			return rd, nil
		}
		rd.Release()
	}
}

// sameLayout says whether rd's segments are those of commit si, with the
// same deletes.
func sameLayout(rd *engine.Reader, si *engine.SegmentInfos) bool {
	leaves := rd.Leaves()
	if len(leaves) != len(si.Segments) {
		return false
	}
	for i, l := range leaves {
		cs := si.Segments[i]
		deleted := 0
		if l.Live != nil {
			deleted = l.Reader.MaxDoc() - l.Live.Cardinality()
		}
		if l.Reader.MaxDoc() != cs.Info.MaxDoc || deleted != cs.DelCount {
			return false
		}
	}
	return true
}

// keep holds a slice's reader for a resume, until the keep-alive passes.
func (r *Runner) keep(key sliceKey, rd *engine.Reader, fp uint64, applied int) {
	kr := &keptReader{reader: rd, fingerprint: fp, applied: applied}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.kept[key]; old != nil {
		old.timer.Stop()
		old.reader.Release()
	}
	r.kept[key] = kr
	kr.timer = time.AfterFunc(r.opts.ReaderKeepAlive, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.kept[key] == kr {
			delete(r.kept, key)
			kr.reader.Release()
		}
	})
}

// KeptReaders is the number of readers held for resumes.
func (r *Runner) KeptReaders() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.kept)
}
