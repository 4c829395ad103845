package rpc

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// getServer answers ShardGet by id: "panic" panics, "block" waits for
// release, anything else is found with the id as source.
type getServer struct {
	nodev1.UnimplementedNodeServer
	entered chan struct{}
	release chan struct{}
	shared  []byte
}

func (g *getServer) ShardGet(ctx context.Context, r *nodev1.ShardGetRequest) (*nodev1.ShardGetResponse, error) {
	switch r.Id {
	case "panic":
		panic("boom")
	case "block":
		close(g.entered)
		<-g.release
	case "canceled":
		return nil, context.Canceled
	case "meta":
		md, _ := metadata.FromIncomingContext(ctx)
		method, _ := grpc.Method(ctx)
		return &nodev1.ShardGetResponse{Found: true, Routing: method, Source: []byte(strings.Join(md.Get("x-test"), ","))}, nil
	case "shared":
		return &nodev1.ShardGetResponse{Found: true, Source: g.shared}, nil
	}
	r.Id = "mutated by the handler"
	return &nodev1.ShardGetResponse{Found: true, Source: []byte(r.Id)}, nil
}

func TestLocal(t *testing.T) {
	s := NewServer(Options{Logger: slog.New(slog.DiscardHandler)})
	g := &getServer{entered: make(chan struct{}), release: make(chan struct{})}
	nodev1.RegisterNodeServer(s, g)
	if _, ok := s.GetServiceInfo()["sluice.node.v1.Node"]; !ok {
		t.Fatal("service not registered on the network server")
	}
	c := nodev1.NewNodeClient(s.Local())
	ctx := context.Background()

	req := &nodev1.ShardGetRequest{Id: "a"}
	resp, err := c.ShardGet(ctx, req)
	if err != nil || !resp.Found || string(resp.Source) != "mutated by the handler" {
		t.Fatalf("get: %v %v", resp, err)
	}
	if req.Id != "a" {
		t.Errorf("the handler changed the caller's request: %q", req.Id)
	}
	// The network server's interceptors apply: a panic is INTERNAL.
	if _, err := c.ShardGet(ctx, &nodev1.ShardGetRequest{Id: "panic"}); status.Code(err) != codes.Internal {
		t.Errorf("panic: %v", err)
	}
	if _, err := c.ShardSearch(ctx, &nodev1.ShardSearchRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("unimplemented: %v", err)
	}
	if err := s.Local().Invoke(ctx, "/sluice.node.v1.Node/NoSuchMethod", &nodev1.ShardGetRequest{}, &nodev1.ShardGetResponse{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown method: %v", err)
	}
	// A plain context error from a handler keeps its code, as over the network.
	if _, err := c.ShardGet(ctx, &nodev1.ShardGetRequest{Id: "canceled"}); status.Code(err) != codes.Canceled {
		t.Errorf("context error: %v", err)
	}
	// Outgoing metadata arrives as incoming; the handler sees its own method.
	mctx := metadata.AppendToOutgoingContext(ctx, "x-test", "v1")
	if resp, err := c.ShardGet(mctx, &nodev1.ShardGetRequest{Id: "meta"}); err != nil || string(resp.Source) != "v1" || resp.Routing != "/sluice.node.v1.Node/ShardGet" {
		t.Errorf("metadata: %v %v", resp, err)
	}
	// Replies are handed over, not copied: the source bytes are the handler's.
	g.shared = []byte("a large source")
	if resp, err := c.ShardGet(ctx, &nodev1.ShardGetRequest{Id: "shared"}); err != nil || &resp.Source[0] != &g.shared[0] {
		t.Errorf("reply was copied or failed: %v", err)
	}
	// A canceled caller does not reach the handler.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.ShardGet(cctx, &nodev1.ShardGetRequest{Id: "panic"}); status.Code(err) != codes.Canceled {
		t.Errorf("canceled caller: %v", err)
	}

	// Stop waits for a call in flight and refuses new ones.
	done := make(chan error, 1)
	go func() {
		_, err := c.ShardGet(ctx, &nodev1.ShardGetRequest{Id: "block"})
		done <- err
	}()
	<-g.entered
	stopped := make(chan struct{})
	go func() { s.Stop(10 * time.Second); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned with a call in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Errorf("call in flight: %v", err)
	}
	<-stopped
	if _, err := c.ShardGet(ctx, &nodev1.ShardGetRequest{Id: "b"}); status.Code(err) != codes.Unavailable {
		t.Errorf("after stop: %v", err)
	}
}
