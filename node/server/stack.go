package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/reindex"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Stack is a data node's data path: the shard host the routing watch
// drives and the Node service over it. Build it before node.New (it gives
// node.Config.Host and Register), then Attach the node's store.
type Stack struct {
	Host    *shard.Host
	Server  *Server
	Reindex *reindex.Runner // reindex slices and ingest (node/reindex)
	stop    context.CancelFunc
}

// NewStack opens a shard host under dataDir and its Node service.
func NewStack(dataDir string, opts Options, logger *slog.Logger) (*Stack, error) {
	if logger == nil {
		logger = slog.Default()
	}
	h, err := shard.NewHost(shard.HostOptions{DataDir: dataDir, Logger: logger})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go h.Run(ctx)
	return &Stack{Host: h, Server: New(h, opts), Reindex: reindex.NewRunner(h, reindex.Options{Logger: logger}), stop: cancel}, nil
}

// ShardHost is the node.Config.Host.
func (s *Stack) ShardHost() node.ShardHost { return shard.NodeHost{Host: s.Host} }

// Register is the node.Config.Register.
func (s *Stack) Register(g grpc.ServiceRegistrar) {
	sluicev1.RegisterNodeServer(g, reindex.Wrap(s.Server, s.Reindex))
}

// Attach sends dynamic mapping updates to the cluster metadata in store.
func (s *Stack) Attach(store *state.Store) {
	s.Host.SetUpdater(shard.MetadataUpdater{Service: metadata.New(store)})
}

// Close releases pinned readers and closes any shard still open (the node
// closes its shards on Stop; this is the backstop).
func (s *Stack) Close(ctx context.Context) error {
	s.stop()
	s.Reindex.Close()
	return s.Host.CloseAll(ctx)
}

// StackSet builds the Stacks of a dev cluster's nodes (devcluster's
// NodeHost), attaches them once the nodes exist and closes them.
type StackSet struct {
	Options Options
	Logger  *slog.Logger

	mu     sync.Mutex
	stacks []*Stack
}

// NodeHost is a devcluster.Config.NodeHost.
func (s *StackSet) NodeHost(dataDir string) (node.ShardHost, func(grpc.ServiceRegistrar), error) {
	st, err := NewStack(dataDir, s.Options, s.Logger)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.stacks = append(s.stacks, st)
	s.mu.Unlock()
	return st.ShardHost(), st.Register, nil
}

// Attach connects each node's stack (in creation order) to its store.
func (s *StackSet) Attach(nodes []*node.Node) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(nodes) != len(s.stacks) {
		return fmt.Errorf("server: %d nodes for %d stacks", len(nodes), len(s.stacks))
	}
	for i, n := range nodes {
		s.stacks[i].Attach(n.Store())
	}
	return nil
}

// Collector exposes the shards of every stack, those made after it too,
// for one metrics endpoint (shard.Collector).
func (s *StackSet) Collector() prometheus.Collector {
	return shard.Collector(func() []*shard.Host {
		s.mu.Lock()
		defer s.mu.Unlock()
		hosts := make([]*shard.Host, len(s.stacks))
		for i, st := range s.stacks {
			hosts[i] = st.Host
		}
		return hosts
	})
}

// Close closes every stack.
func (s *StackSet) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range s.stacks {
		errs = append(errs, st.Close(ctx))
	}
	return errors.Join(errs...)
}
