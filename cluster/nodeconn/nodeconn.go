// Package nodeconn hands out gRPC clients of data nodes' internal services
// (sluice.node.v1: Node, Reindex, Replication) by node id: it looks the node's address up in the
// cluster state cache and keeps one connection per address, shared by all callers.
// Coordinators use it to reach shards (route a bulk, fan out a search);
// nodes use it to reach each other (remote reindex, replication between
// a shard's copies).
//
// To find the primary of a shard: st := cache.State(); x, _ :=
// st.ResolveWrite(index); p := st.ActivePrimary(x, shard); then
// pool.Client(p.NodeId) — and expect NOT_FOUND "shard not open here" when
// the routing moved meanwhile.
package nodeconn

import (
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// Pool caches connections to data nodes.
type Pool struct {
	cache *state.Cache
	opts  []grpc.DialOption

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn // by address
	local  map[string]grpc.ClientConnInterface
	closed bool
}

// AddLocal makes calls to the node registered at addr go through cc, an
// in-process channel of a node living in this process (`sluice dev`),
// instead of a network connection.
func (p *Pool) AddLocal(addr string, cc grpc.ClientConnInterface) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.local[addr] = cc
}

// New returns a pool resolving node ids through cache. opts are added to
// the defaults (insecure transport, message limits, keep-alive).
func New(cache *state.Cache, opts ...grpc.DialOption) *Pool {
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(rpc.MaxMessageBytes), grpc.MaxCallSendMsgSize(rpc.MaxMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
	}
	return &Pool{cache: cache, opts: append(base, opts...), conns: map[string]*grpc.ClientConn{}, local: map[string]grpc.ClientConnInterface{}}
}

// Client returns a client of a live node's data path (the Node service);
// state.ErrNotFound if the node is not registered.
func (p *Pool) Client(nodeID string) (nodev1.NodeClient, error) {
	conn, err := p.node(nodeID)
	if err != nil {
		return nil, err
	}
	return nodev1.NewNodeClient(conn), nil
}

// Reindex returns a client of a live node's Reindex service.
func (p *Pool) Reindex(nodeID string) (nodev1.ReindexClient, error) {
	conn, err := p.node(nodeID)
	if err != nil {
		return nil, err
	}
	return nodev1.NewReindexClient(conn), nil
}

// Node returns the connection to a live node (for the services without
// a method here); state.ErrNotFound if it is not registered.
func (p *Pool) Node(nodeID string) (grpc.ClientConnInterface, error) { return p.node(nodeID) }

// node returns the connection to a live node.
func (p *Pool) node(nodeID string) (grpc.ClientConnInterface, error) {
	st := p.cache.State()
	if st == nil {
		return nil, fmt.Errorf("nodeconn: cluster state not loaded yet")
	}
	addr, ok := st.NodeAddress(nodeID)
	if !ok {
		return nil, fmt.Errorf("node [%s]: %w", nodeID, state.ErrNotFound)
	}
	return p.Conn(addr)
}

// Conn returns the connection to the node serving at addr (its registered
// address): an in-process channel for a node of this process, else one
// shared network connection. Call errors are rpc.RemoteErrors: a node's
// answer keeps its code and details when relayed, and its text unprefixed.
func (p *Pool) Conn(addr string) (grpc.ClientConnInterface, error) {
	c, err := p.conn(addr)
	if err != nil {
		return nil, err
	}
	return rpc.Relay(c), nil
}

func (p *Pool) conn(addr string) (grpc.ClientConnInterface, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("nodeconn: pool closed")
	}
	if c, ok := p.local[addr]; ok {
		return c, nil
	}
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, p.opts...)
	if err != nil {
		return nil, fmt.Errorf("nodeconn: %s: %w", addr, err)
	}
	p.conns[addr] = c
	return c, nil
}

// Close closes every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, c := range p.conns {
		c.Close()
		delete(p.conns, addr)
	}
}
