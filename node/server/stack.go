package server

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/meta"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/shard"
)

// Stack is a data node's data path: the shard host the routing watch
// drives and the Node service over it. Build it before node.New (it gives
// node.Config.Host and Register), then Attach the node's store.
type Stack struct {
	Host   *shard.Host
	Server *Server
}

// NewStack opens a shard host under dataDir and its Node service.
func NewStack(dataDir string, opts Options, logger *slog.Logger) (*Stack, error) {
	h, err := shard.NewHost(shard.HostOptions{DataDir: dataDir, Logger: logger})
	if err != nil {
		return nil, err
	}
	opts.Logger = logger
	return &Stack{Host: h, Server: New(h, opts)}, nil
}

// ShardHost is the node.Config.Host.
func (s *Stack) ShardHost() node.ShardHost { return shard.NodeHost{Host: s.Host} }

// Register is the node.Config.Register.
func (s *Stack) Register(g grpc.ServiceRegistrar) { s.Server.Register(g) }

// Attach sends dynamic mapping updates to the cluster metadata in store.
func (s *Stack) Attach(store *meta.Store) {
	s.Host.SetUpdater(shard.MetadataUpdater{Service: metadata.New(store)})
}

// Close releases pinned readers and closes any shard still open (the node
// closes its shards on Stop; this is the backstop).
func (s *Stack) Close(ctx context.Context) error {
	s.Server.Close()
	return s.Host.CloseAll(ctx)
}
