package datapath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Options configure the data path.
type Options struct {
	// MaxInFlightBytesPerNode bounds the bulk bytes in flight to one node
	// (default 64 MiB).
	MaxInFlightBytesPerNode int64
	// MaxInFlightBulkBytes bounds the bulk request bytes this coordinator
	// holds at once, over all clients (default DefaultMaxInFlightBulkBytes):
	// a unary Bulk beyond it is refused at once with RESOURCE_EXHAUSTED and
	// RetryInfo; a BulkStream waits for room before it reads its next batch.
	MaxInFlightBulkBytes int64
	// MaxInFlightSearchBytes bounds the bytes of fetched hits and scroll
	// batches this coordinator assembles at once (default
	// DefaultMaxInFlightSearchBytes).
	MaxInFlightSearchBytes int64
	// AdmissionWait is how long a unary Bulk waits for room in a node's
	// budget before rejecting (default 200 ms).
	AdmissionWait time.Duration
	// RetryAfter is the delay advertised in RetryInfo (default 500 ms).
	RetryAfter time.Duration
	// BulkTimeout is the default Bulk timeout (default 1 minute).
	BulkTimeout time.Duration
	// ScrollKeepAlive keeps the readers of a scroll without a PIT between
	// batches, and after a break for a resume (default 1 minute).
	ScrollKeepAlive time.Duration
	// ScrollResumeGrace: a finished scroll without a PIT releases its
	// readers this long after its last batch (default 10 s).
	ScrollResumeGrace time.Duration
	// RoutingWait bounds how long a request waits for a shard that is
	// moving (not open where the routing says) to open elsewhere (default
	// 10 s).
	RoutingWait time.Duration
	// Errors is the coordinator's error table: per-item and per-shard
	// failures are described with it.
	Errors *rpc.Errors
	Logger *slog.Logger
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.MaxInFlightBytesPerNode <= 0 {
		o.MaxInFlightBytesPerNode = 64 << 20
	}
	if o.MaxInFlightBulkBytes <= 0 {
		o.MaxInFlightBulkBytes = DefaultMaxInFlightBulkBytes
	}
	if o.MaxInFlightSearchBytes <= 0 {
		o.MaxInFlightSearchBytes = DefaultMaxInFlightSearchBytes
	}
	if o.AdmissionWait <= 0 {
		o.AdmissionWait = 200 * time.Millisecond
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 500 * time.Millisecond
	}
	if o.BulkTimeout <= 0 {
		o.BulkTimeout = time.Minute
	}
	if o.ScrollKeepAlive <= 0 {
		o.ScrollKeepAlive = time.Minute
	}
	if o.ScrollResumeGrace <= 0 {
		o.ScrollResumeGrace = 10 * time.Second
	}
	if o.RoutingWait <= 0 {
		o.RoutingWait = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// The coordinator's default memory budgets. Elasticsearch sizes its
// indexing pressure limit at 10% of the heap; a coordinator has no fixed
// heap, so these are absolute: a coordinator's resident memory under
// overload stays within a few times their sum (docs/limits.md measures it).
const (
	DefaultMaxInFlightBulkBytes   = 128 << 20
	DefaultMaxInFlightSearchBytes = 128 << 20
)

// Nodes gives Node clients by node id (nodeconn.Pool).
type Nodes interface {
	Client(nodeID string) (nodev1.NodeClient, error)
}

var _ Nodes = (*nodeconn.Pool)(nil)

// DataPath is the coordinator's document API over the data nodes: the
// core that coordinator/server's handlers translate to and from the
// public service.
type DataPath struct {
	cache *state.Cache
	nodes Nodes
	opts  Options
	ars   *replicaSelector

	// bulkBytes and searchBytes are the coordinator's budgets; budgets
	// holds each node's.
	bulkBytes   *Budget
	searchBytes *Budget
	budgetMu    sync.Mutex
	budgets     map[string]*Budget
}

// New returns a data path over a state cache and node clients.
func New(cache *state.Cache, nodes Nodes, opts Options) *DataPath {
	opts.SetDefaults()
	return &DataPath{cache: cache, nodes: nodes, opts: opts, ars: newReplicaSelector(), budgets: map[string]*Budget{},
		bulkBytes: NewBudget(opts.MaxInFlightBulkBytes), searchBytes: NewBudget(opts.MaxInFlightSearchBytes)}
}

// budget is a node's in-flight bulk bytes.
func (d *DataPath) budget(nodeID string) *Budget {
	d.budgetMu.Lock()
	defer d.budgetMu.Unlock()
	b := d.budgets[nodeID]
	if b == nil {
		b = NewBudget(d.opts.MaxInFlightBytesPerNode)
		d.budgets[nodeID] = b
	}
	return b
}

// BulkBudget and SearchBudget are the coordinator's budgets (for metrics
// and tests).
func (d *DataPath) BulkBudget() *Budget   { return d.bulkBytes }
func (d *DataPath) SearchBudget() *Budget { return d.searchBytes }

// Typed errors of the data path; the coordinator's error table maps them
// to codes.
var (
	// ErrInvalid: the request is malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrOverloaded: an in-flight budget (the coordinator's or a node's)
	// is full; retry later.
	ErrOverloaded = errors.New("overloaded")
	// ErrTooLarge: a request needs more than a whole budget (a search
	// whose hits outweigh the search budget); asking again cannot help.
	ErrTooLarge = errors.New("request too large")
	// ErrUnavailable: a shard has no started copy (no started primary, for
	// writes and realtime gets) on a live node.
	ErrUnavailable = errors.New("shard unavailable")
	// ErrPITGone: the point-in-time id is malformed or expired.
	ErrPITGone = errors.New("point-in-time not found")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// fieldError is an error about one field of the request; the error table
// names it (ErrorDetail.field, a BadRequest field violation).
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string      { return e.err.Error() }
func (e *fieldError) Unwrap() error      { return e.err }
func (e *fieldError) ErrorField() string { return e.field }

// state returns the current cluster state.
func (d *DataPath) state(ctx context.Context) (*state.Snapshot, error) {
	if st := d.cache.State(); st != nil {
		return st, nil
	}
	return d.cache.Refresh(ctx)
}

// target is one shard a request goes to.
type target struct {
	index string // name
	uuid  string
	shard int
	node  string
	// pos is the shard's position in the request's shard list (the
	// _shard_doc high bits, and the scroll order).
	pos int
}

func (t target) id() *nodev1.ShardID {
	return &nodev1.ShardID{IndexUuid: t.uuid, Shard: int32(t.shard)}
}

func params(x *state.Index) routing.Params {
	s := x.Meta.GetSettings()
	p := routing.Params{Shards: int(s.GetNumberOfShards()), RoutingShards: int(s.GetNumberOfRoutingShards())}
	if p.RoutingShards == 0 {
		p.RoutingShards = p.Shards
	}
	return p
}

// shardTarget resolves the primary of shard n of x: where writes and
// realtime gets go.
func shardTarget(st *state.Snapshot, x *state.Index, n int) (target, error) {
	t := target{index: x.Name(), uuid: x.UUID(), shard: n}
	if n < 0 || n >= len(x.Shards) || x.Shards[n] == nil {
		return t, fmt.Errorf("[%s][%d]: %w: no routing entry", t.index, n, ErrUnavailable)
	}
	p := state.Primary(x.Shards[n].Routing)
	if !st.Active(p) {
		return t, fmt.Errorf("[%s][%d]: %w: primary %s on node %q %s", t.index, n, ErrUnavailable,
			p.GetState(), p.GetNodeId(), p.GetReason())
	}
	t.node = p.GetNodeId()
	return t, nil
}

// readCopies returns the nodes of the copies of shard n of x that serve
// searches (state.Snapshot.Serving), the primary first. A copy on a node
// that is shutting down is left out while another serves: the node stops
// once its primaries are handed off, and a search that began on it
// would lose its fetch phase.
func readCopies(st *state.Snapshot, x *state.Index, n int) []string {
	if n < 0 || n >= len(x.Shards) || x.Shards[n] == nil {
		return nil
	}
	r := x.Shards[n].Routing
	var out, stopping []string
	for _, c := range r.GetCopies() {
		switch {
		case !st.Serving(r, c):
		case st.ShuttingDown(c.GetNodeId()):
			stopping = append(stopping, c.GetNodeId())
		default:
			out = append(out, c.GetNodeId())
		}
	}
	if len(out) == 0 {
		return stopping
	}
	return out
}

// resolve returns the indices names mean (all indices for none), sorted by
// name without duplicates.
func resolve(st *state.Snapshot, names []string) ([]*state.Index, error) {
	if len(names) == 0 {
		names = st.IndexNames("")
	}
	seen := map[string]bool{}
	var out []*state.Index
	for _, n := range names {
		xs, err := st.Resolve(n)
		if err != nil {
			return nil, err
		}
		for _, x := range xs {
			if !seen[x.UUID()] {
				seen[x.UUID()] = true
				out = append(out, x)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// allShards lists every shard of the indices in (index, shard) order, at
// its primary; shards without a started primary are returned as failures.
func (d *DataPath) allShards(st *state.Snapshot, xs []*state.Index) ([]target, []*sluicev1.ShardFailure) {
	var ts []target
	var fails []*sluicev1.ShardFailure
	for _, x := range xs {
		for n := range len(x.Shards) {
			t, err := shardTarget(st, x, n)
			if err != nil {
				fails = append(fails, d.shardFailure(t, err))
				continue
			}
			t.pos = len(ts) + len(fails)
			ts = append(ts, t)
		}
	}
	return ts, fails
}

// readShards lists every shard of the indices in (index, shard) order with
// the copies a read may use (readCopies; which one is chosen per request,
// by onCopies); shards without one are returned as failures.
func (d *DataPath) readShards(st *state.Snapshot, xs []*state.Index) ([]searchTarget, []*sluicev1.ShardFailure) {
	var ts []searchTarget
	var fails []*sluicev1.ShardFailure
	for _, x := range xs {
		for n := range len(x.Shards) {
			t := searchTarget{target: target{index: x.Name(), uuid: x.UUID(), shard: n, pos: len(ts) + len(fails)}, copies: readCopies(st, x, n)}
			if len(t.copies) == 0 {
				_, err := shardTarget(st, x, n) // says why
				fails = append(fails, d.shardFailure(t.target, err))
				continue
			}
			ts = append(ts, t)
		}
	}
	return ts, fails
}

func (d *DataPath) shardFailure(t target, err error) *sluicev1.ShardFailure {
	return &sluicev1.ShardFailure{Index: t.index, Shard: int32(t.shard), NodeId: t.node, Error: d.opts.Errors.Detail(err)}
}

// summary counts shards.
func summary(total int, fails []*sluicev1.ShardFailure) *sluicev1.ShardsSummary {
	return &sluicev1.ShardsSummary{Total: int32(total), Successful: int32(total - len(fails)), Failed: int32(len(fails)), Failures: fails}
}
