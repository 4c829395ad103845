// Package replbench is `sluice bench replication` (issue 16): on a
// multi-process cluster (embedded etcd + coordinator, separate data node
// processes) it measures what replicas cost and how they behave:
//
//   - bulk throughput with replicas=1 against replicas=0, alternated in one
//     run (0,1 then 1,0, ...) so drift of a shared machine hits both;
//   - replica visibility lag: the time from a primary's refresh showing a
//     seqNo to the same seqNo being searchable on the replica (its
//     installed checkpoint; both read with Replication.GetCopyState), under
//     a steady rate of updates;
//   - failover: SIGKILL of the primary's node to the first write
//     acknowledged by the new primary.
package replbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/proccluster"
	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/client"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// LeaseTTL is a data node's registration lease (node.Config.LeaseTTL's
// default): the failover target is LeaseTTL + 2 s.
const LeaseTTL = 10 * time.Second

// Options configure a run.
type Options struct {
	Binary     string // the sluice binary to run the cluster with
	Nodes      int    // data node processes; default 3
	Shards     int    // shards of the throughput index; default 3
	Rounds     int    // throughput rounds, each one run per replica count; default 2
	Workers    int    // concurrent bulk requests of the throughput runs; default 4
	Docs       []corpus.Doc
	CorpusDesc string

	LagDuration  time.Duration // length of the lag experiment; default 30 s
	RateMB       float64       // update rate of the lag experiment, MB/s of JSON; default 1
	RefreshEvery time.Duration // primary refresh interval of the lag experiment; default 1 s, at least 100 ms
	LagPreload   int           // docs indexed before the lag experiment; default min(len(Docs), 20,000)

	// Profile, when set, is a directory for 10 s CPU profiles and 5 s
	// execution traces (where goroutines wait: go tool trace -pprof=sync,
	// net, syscall) of every data node, taken during the last throughput
	// round of each replica count (the nodes serve pprof on a metrics port).
	Profile string
	// ThroughputOnly skips the lag and failover experiments.
	ThroughputOnly bool

	Out string
	Log io.Writer
}

// Throughput is one bulk load.
type Throughput struct {
	Round      int     `json:"round"`
	Replicas   int     `json:"replicas"`
	Docs       int     `json:"docs"`
	Seconds    float64 `json:"seconds"`
	DocsPerSec float64 `json:"docs_per_s"`
	MBPerSec   float64 `json:"mb_per_s"`
}

// Lag is the visibility-lag experiment.
type Lag struct {
	RateMB       float64          `json:"rate_mb_per_s"`
	UpdatesMB    float64          `json:"updates_mb"` // JSON actually sent
	Updates      int64            `json:"updates"`
	RefreshEvery float64          `json:"refresh_every_s"`
	Lag          report.Latencies `json:"replica_lag"` // primary shows a seqNo → the replica does
	ByTime       []LagSample      `json:"samples"`
}

// LagSample is one refresh of the lag experiment.
type LagSample struct {
	AtS   float64 `json:"at_s"`
	SeqNo int64   `json:"seq_no"`
	LagMS float64 `json:"lag_ms"`
}

// Failover is the failover experiment.
type Failover struct {
	KilledNode     string  `json:"killed_node"`
	NewPrimaryNode string  `json:"new_primary_node"`
	Seconds        float64 `json:"seconds"` // SIGKILL → first write acknowledged after it
	FailedWrites   int     `json:"failed_writes"`
	TargetSeconds  float64 `json:"target_s"` // lease TTL + 2 s
}

// Result is the whole experiment.
type Result struct {
	Corpus     string       `json:"corpus"`
	Nodes      int          `json:"nodes"`
	Shards     int          `json:"shards"`
	Workers    int          `json:"bulk_workers"`
	Docs       int          `json:"docs"`
	SourceMB   float64      `json:"source_mb"`
	Throughput []Throughput `json:"throughput"`
	// Ratio is the median replicas=1 docs/s over the median replicas=0.
	Ratio    float64   `json:"ratio_replicas1_to_0"`
	Lag      *Lag      `json:"lag"`
	Failover *Failover `json:"failover"`
}

func (o *Options) setDefaults() {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Shards <= 0 {
		o.Shards = 3
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Rounds <= 0 {
		o.Rounds = 2
	}
	if o.LagDuration <= 0 {
		o.LagDuration = 30 * time.Second
	}
	if o.RateMB <= 0 {
		o.RateMB = 1
	}
	if o.RefreshEvery <= 0 {
		o.RefreshEvery = time.Second
	}
	if o.LagPreload <= 0 || o.LagPreload > len(o.Docs) {
		o.LagPreload = min(len(o.Docs), 20_000)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Execute runs the three experiments on one cluster.
func Execute(ctx context.Context, o Options) (*Result, error) {
	o.setDefaults()
	if o.Nodes < 2 {
		return nil, errors.New("replication needs at least 2 data nodes")
	}
	if len(o.Docs) == 0 {
		return nil, errors.New("no documents")
	}
	dir, err := os.MkdirTemp("", "sluice-bench-replication-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	metrics := make([]string, o.Nodes)
	co := proccluster.Options{Binary: o.Binary, Dir: dir, Nodes: o.Nodes}
	if o.Profile != "" {
		for i := range metrics {
			if metrics[i], err = proccluster.FreeAddr(); err != nil {
				return nil, err
			}
		}
		co.NodeArgsFor = func(i int) []string {
			return []string{"--metrics-listen", metrics[i], "--enable-pprof"}
		}
	}
	cl, err := proccluster.Start(ctx, co)
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	c := cl.Client
	res := &Result{Corpus: o.CorpusDesc, Nodes: o.Nodes, Shards: o.Shards, Workers: o.Workers, Docs: len(o.Docs)}
	srcBytes := corpus.SourceBytes(o.Docs)
	res.SourceMB = float64(srcBytes) / 1e6
	fmt.Fprintf(o.Log, "cluster: coordinator %s, %d node processes; corpus %s (%.1f MB of JSON)\n", cl.Addr, o.Nodes, o.CorpusDesc, res.SourceMB)

	if err := throughput(ctx, c, &o, res, metrics); err != nil {
		return res, fmt.Errorf("throughput: %w", err)
	}
	if o.ThroughputOnly {
		return res, write(o.Out, res)
	}
	if res.Lag, err = visibilityLag(ctx, c, cl, &o); err != nil {
		return res, fmt.Errorf("visibility lag: %w", err)
	}
	if res.Failover, err = failover(ctx, c, cl, &o); err != nil {
		return res, fmt.Errorf("failover: %w", err)
	}
	return res, write(o.Out, res)
}

// throughput bulk loads the corpus into a fresh index per run, replica
// counts alternated round by round.
func throughput(ctx context.Context, c *client.Client, o *Options, res *Result, metrics []string) error {
	srcBytes := corpus.SourceBytes(o.Docs)
	per := map[int][]float64{}
	for round := range o.Rounds {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, replicas := range order {
			name := fmt.Sprintf("tp-%d-r%d", round, replicas)
			if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: name,
				Settings: &sluicev1.IndexSettings{NumberOfShards: int32(o.Shards), NumberOfReplicas: int32(replicas)},
				Mapping:  corpus.Mapping(), WaitForActiveShards: true}); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			if err := waitGreen(ctx, c, name); err != nil {
				return err
			}
			var profiled chan error
			if o.Profile != "" && round == o.Rounds-1 { // every round runs both counts
				profiled = make(chan error, 1)
				go func() { profiled <- profile(ctx, metrics, o.Profile, fmt.Sprintf("replicas%d", replicas)) }()
			}
			start := time.Now()
			if err := proccluster.BulkLoad(ctx, c, name, o.Docs, o.Workers); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			took := time.Since(start)
			if profiled != nil {
				if err := <-profiled; err != nil {
					fmt.Fprintf(o.Log, "profile: %v\n", err)
				}
			}
			if err := checkCount(ctx, c, name, len(o.Docs)); err != nil {
				return err
			}
			t := Throughput{Round: round, Replicas: replicas, Docs: len(o.Docs), Seconds: took.Seconds(),
				DocsPerSec: float64(len(o.Docs)) / took.Seconds(), MBPerSec: float64(srcBytes) / 1e6 / took.Seconds()}
			res.Throughput = append(res.Throughput, t)
			per[replicas] = append(per[replicas], t.DocsPerSec)
			fmt.Fprintf(o.Log, "round %d replicas=%d: %d docs in %.2fs = %.0f docs/s, %.1f MB/s\n",
				round, replicas, t.Docs, t.Seconds, t.DocsPerSec, t.MBPerSec)
			if _, err := c.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: name}); err != nil {
				return fmt.Errorf("delete %s: %w", name, err)
			}
		}
	}
	res.Ratio = report.Median(per[1]) / report.Median(per[0])
	fmt.Fprintf(o.Log, "bulk throughput replicas=1 / replicas=0 (medians): %.2f (target >= 0.8)\n", res.Ratio)
	return nil
}

// profile takes a 10 s CPU profile and a 5 s execution trace of every
// node at once.
func profile(ctx context.Context, metrics []string, dir, label string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2*len(metrics))
	for i, addr := range metrics {
		wg.Go(func() {
			errs[2*i] = proccluster.FetchProfile(ctx, addr, "profile", 10,
				filepath.Join(dir, fmt.Sprintf("%s-node-%d.pprof", label, i)))
		})
		wg.Go(func() {
			errs[2*i+1] = proccluster.FetchProfile(ctx, addr, "trace", 5,
				filepath.Join(dir, fmt.Sprintf("%s-node-%d.trace", label, i)))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitGreen waits until every copy of index is started.
func waitGreen(ctx context.Context, c *client.Client, index string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index})
		if err == nil && info.GetIndex().GetHealth() == sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("index %s not green after 60s (%v)", index, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkCount refreshes index and checks it holds want documents. The
// Refresh API refreshes primaries only and a search may go to a replica,
// which shows the refresh once it has installed the checkpoint: so the
// count is polled for a while.
func checkCount(ctx context.Context, c *client.Client, index string, want int) error {
	if _, err := c.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		return err
	}
	zero := int32(0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: &zero, TrackTotalHits: -1})
		if err != nil {
			return err
		}
		n := r.GetTotal().GetValue()
		if n == int64(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("index %s holds %d docs, want %d", index, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// copies returns the started primary and replica of shard 0 of index.
func copies(ctx context.Context, c *client.Client, index string) (uuid string, primary, replica *sluicev1.ShardRouting, err error) {
	info, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index})
	if err != nil {
		return "", nil, nil, err
	}
	for _, s := range info.GetIndex().GetShards() {
		if s.GetShard() != 0 || s.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED {
			continue
		}
		if s.GetPrimary() {
			primary = s
		} else if replica == nil && s.GetInSync() {
			replica = s
		}
	}
	if primary == nil || replica == nil {
		return "", nil, nil, fmt.Errorf("index %s: no started primary and in-sync replica", index)
	}
	return info.GetIndex().GetUuid(), primary, replica, nil
}

func dialNode(cl *proccluster.Cluster, name string) (nodev1.ReplicationClient, func() error, error) {
	n := cl.Node(name)
	if n == nil {
		return nil, nil, fmt.Errorf("no node %s", name)
	}
	conn, err := grpc.NewClient(n.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return nodev1.NewReplicationClient(conn), conn.Close, nil
}

// visibilityLag replaces random docs of a one-shard, one-replica index at
// RateMB while the primary refreshes every RefreshEvery (its periodic
// refresh), and times each refresh's seqNo becoming searchable on the
// replica: both copies' searchable seqNo (Replication.GetCopyState) are
// polled every millisecond; a lag runs from the poll that first sees the
// primary's reader at a new seqNo to the one that sees the replica's at
// or above it. (The Refresh API waits for the in-sync replicas, so its
// return cannot be the start.)
func visibilityLag(ctx context.Context, c *client.Client, cl *proccluster.Cluster, o *Options) (*Lag, error) {
	const index = "lag"
	if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1,
			RefreshInterval: durationpb.New(o.RefreshEvery)},
		Mapping: corpus.Mapping(), WaitForActiveShards: true}); err != nil {
		return nil, err
	}
	docs := o.Docs[:o.LagPreload]
	if err := proccluster.BulkLoad(ctx, c, index, docs, 0); err != nil {
		return nil, err
	}
	if err := waitGreen(ctx, c, index); err != nil {
		return nil, err
	}
	uuid, primary, replica, err := copies(ctx, c, index)
	if err != nil {
		return nil, err
	}
	prim, closeP, err := dialNode(cl, primary.GetNodeId())
	if err != nil {
		return nil, err
	}
	defer closeP()
	rep, closeR, err := dialNode(cl, replica.GetNodeId())
	if err != nil {
		return nil, err
	}
	defer closeR()
	shard := &nodev1.ShardID{IndexUuid: uuid, Shard: 0}
	visible := func(c nodev1.ReplicationClient, alloc string) (int64, error) {
		st, err := c.GetCopyState(ctx, &nodev1.GetCopyStateRequest{Shard: shard, AllocationId: alloc})
		return st.GetCheckpointSeqNo(), err
	}

	lag := &Lag{RateMB: o.RateMB, RefreshEvery: o.RefreshEvery.Seconds()}
	fmt.Fprintf(o.Log, "lag: %d docs preloaded; primary on %s, replica on %s; updates at %.1f MB/s for %s, primary refresh every %s\n",
		len(docs), primary.GetNodeId(), replica.GetNodeId(), o.RateMB, o.LagDuration, o.RefreshEvery)

	runCtx, cancel := context.WithTimeout(ctx, o.LagDuration)
	defer cancel()
	var wg sync.WaitGroup
	var sentBytes, updates int64
	var updErr error
	wg.Go(func() { sentBytes, updates, updErr = update(runCtx, c, index, docs, o.RateMB) })

	type seen struct {
		seq int64
		at  time.Time
	}
	var pending []seen // primary readers the replica does not show yet
	var lags []time.Duration
	start := time.Now()
	last, err := visible(prim, primary.GetAllocationId())
	if err != nil {
		return nil, fmt.Errorf("primary state: %w", err)
	}
	for runCtx.Err() == nil {
		p, err := visible(prim, primary.GetAllocationId())
		if err != nil {
			return nil, fmt.Errorf("primary state: %w", err)
		}
		now := time.Now()
		if p > last {
			pending, last = append(pending, seen{p, now}), p
		}
		if len(pending) > 0 {
			r, err := visible(rep, replica.GetAllocationId())
			if err != nil {
				return nil, fmt.Errorf("replica state: %w", err)
			}
			now = time.Now()
			for len(pending) > 0 && pending[0].seq <= r {
				d := now.Sub(pending[0].at)
				lags = append(lags, d)
				lag.ByTime = append(lag.ByTime, LagSample{AtS: pending[0].at.Sub(start).Seconds(), SeqNo: pending[0].seq, LagMS: float64(d) / 1e6})
				pending = pending[1:]
			}
			if len(pending) > 0 && now.Sub(pending[0].at) > 30*time.Second {
				return nil, fmt.Errorf("seqNo %d not visible on the replica after 30s (at %d)", pending[0].seq, r)
			}
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if updErr != nil && runCtx.Err() == nil { // the run's end fails the bulk in flight
		return nil, fmt.Errorf("updates: %w", updErr)
	}
	lag.UpdatesMB, lag.Updates = float64(sentBytes)/1e6, updates
	lag.Lag = report.Summarize(lags)
	fmt.Fprintf(o.Log, "lag: %d updates, %.1f MB in %s (%.2f MB/s)\n", updates, lag.UpdatesMB, o.LagDuration, lag.UpdatesMB/o.LagDuration.Seconds())
	fmt.Fprintf(o.Log, "lag: replica visibility %s (target p99 <= 250ms)\n", lag.Lag)
	return lag, nil
}

// update replaces random docs by id at rateMB MB/s of JSON, in a bulk every
// 50 ms, until ctx ends.
func update(ctx context.Context, c *client.Client, index string, docs []corpus.Doc, rateMB float64) (sent, n int64, err error) {
	const every = 50 * time.Millisecond
	perTick := rateMB * 1e6 * every.Seconds()
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(every)
	defer tick.Stop()
	var owed float64
	for {
		select {
		case <-ctx.Done():
			return sent, n, ctx.Err()
		case <-tick.C:
		}
		owed += perTick
		var items []*sluicev1.BulkItem
		for owed > 0 {
			d := docs[rng.IntN(len(docs))]
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: d.ID, Source: d.Source})
			owed -= float64(len(d.Source))
			sent += int64(len(d.Source))
		}
		r, err := c.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items})
		if err != nil {
			return sent, n, err
		}
		if r.GetErrors() {
			for _, it := range r.GetItems() {
				if it.GetError() != nil {
					return sent, n, fmt.Errorf("update %s: %s", it.GetId(), it.GetError().GetReason())
				}
			}
		}
		n += int64(len(items))
	}
}

// failover writes one document at a time to a one-shard, one-replica
// index, SIGKILLs the primary's node and measures the time to the first
// write acknowledged after the kill.
func failover(ctx context.Context, c *client.Client, cl *proccluster.Cluster, o *Options) (*Failover, error) {
	const index = "failover"
	if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1},
		Mapping:  corpus.Mapping(), WaitForActiveShards: true}); err != nil {
		return nil, err
	}
	if err := waitGreen(ctx, c, index); err != nil {
		return nil, err
	}
	_, primary, _, err := copies(ctx, c, index)
	if err != nil {
		return nil, err
	}
	f := &Failover{KilledNode: primary.GetNodeId(), TargetSeconds: (LeaseTTL + 2*time.Second).Seconds()}
	write := func(i int) error {
		d := o.Docs[i%len(o.Docs)]
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := c.Bulk(wctx, &sluicev1.BulkRequest{Index: index, Items: []*sluicev1.BulkItem{
			{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("f%d", i), Source: d.Source}}})
		if err != nil {
			return err
		}
		if e := r.GetItems()[0].GetError(); e != nil {
			return errors.New(e.GetReason())
		}
		return nil
	}
	for i := range 20 { // the write path is warm
		if err := write(i); err != nil {
			return nil, fmt.Errorf("write before the kill: %w", err)
		}
	}
	node := cl.Node(f.KilledNode)
	if node == nil {
		return nil, fmt.Errorf("primary on unknown node %s", f.KilledNode)
	}
	killed := time.Now()
	if err := node.Kill(); err != nil {
		return nil, err
	}
	for i := 20; ; i++ {
		err := write(i)
		if err == nil {
			break
		}
		f.FailedWrites++
		if time.Since(killed) > 2*time.Minute {
			return nil, fmt.Errorf("no write acknowledged 2 minutes after the kill: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	f.Seconds = time.Since(killed).Seconds()
	if _, p, _, err := copies(ctx, c, index); err == nil {
		f.NewPrimaryNode = p.GetNodeId()
	} else if info, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index}); err == nil {
		for _, s := range info.GetIndex().GetShards() {
			if s.GetPrimary() {
				f.NewPrimaryNode = s.GetNodeId()
			}
		}
	}
	fmt.Fprintf(o.Log, "failover: SIGKILL of %s → first acknowledged write (new primary on %s) after %.2fs, %d writes failed meanwhile (target <= %.0fs)\n",
		f.KilledNode, f.NewPrimaryNode, f.Seconds, f.FailedWrites, f.TargetSeconds)
	return f, nil
}

func write(out string, res *Result) error {
	if out == "" {
		return nil
	}
	if err := report.WriteJSON(out, "replication.json", res); err != nil {
		return err
	}
	var bars []report.Bar
	for _, t := range res.Throughput {
		bars = append(bars, report.Bar{Label: fmt.Sprintf("r%d replicas=%d", t.Round, t.Replicas), Value: t.DocsPerSec})
	}
	if err := report.BarChart(filepath.Join(out, "replication-bulk-docs-per-s.png"), "Bulk throughput by replica count (docs/s)", "docs/s", bars...); err != nil {
		return err
	}
	if res.Lag == nil || len(res.Lag.ByTime) == 0 {
		return nil
	}
	s := report.Series{Name: "replica visibility lag"}
	for _, p := range res.Lag.ByTime {
		s.X, s.Y = append(s.X, p.AtS), append(s.Y, p.LagMS)
	}
	return report.LinePlot(filepath.Join(out, "replication-lag.png"), "Replica visibility lag after each primary refresh", "s", "ms", false, s)
}
