package rpc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// getServer answers ShardGet by id: "panic" panics, "block" waits for
// release, anything else is found with the id as source.
type getServer struct {
	sluicev1.UnimplementedNodeServer
	entered chan struct{}
	release chan struct{}
}

func (g *getServer) ShardGet(ctx context.Context, r *sluicev1.ShardGetRequest) (*sluicev1.ShardGetResponse, error) {
	switch r.Id {
	case "panic":
		panic("boom")
	case "block":
		close(g.entered)
		<-g.release
	}
	r.Id = "mutated by the handler"
	return &sluicev1.ShardGetResponse{Found: true, Source: []byte(r.Id)}, nil
}

func TestLocal(t *testing.T) {
	s := NewServer(Options{Logger: slog.New(slog.DiscardHandler)})
	g := &getServer{entered: make(chan struct{}), release: make(chan struct{})}
	sluicev1.RegisterNodeServer(s, g)
	if _, ok := s.GetServiceInfo()["sluice.v1.Node"]; !ok {
		t.Fatal("service not registered on the network server")
	}
	c := sluicev1.NewNodeClient(s.Local())
	ctx := context.Background()

	req := &sluicev1.ShardGetRequest{Id: "a"}
	resp, err := c.ShardGet(ctx, req)
	if err != nil || !resp.Found || string(resp.Source) != "mutated by the handler" {
		t.Fatalf("get: %v %v", resp, err)
	}
	if req.Id != "a" {
		t.Errorf("the handler changed the caller's request: %q", req.Id)
	}
	// The network server's interceptors apply: a panic is INTERNAL.
	if _, err := c.ShardGet(ctx, &sluicev1.ShardGetRequest{Id: "panic"}); status.Code(err) != codes.Internal {
		t.Errorf("panic: %v", err)
	}
	if _, err := c.ShardSearch(ctx, &sluicev1.ShardSearchRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("unimplemented: %v", err)
	}

	// Stop waits for a call in flight and refuses new ones.
	done := make(chan error, 1)
	go func() {
		_, err := c.ShardGet(ctx, &sluicev1.ShardGetRequest{Id: "block"})
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
	if _, err := c.ShardGet(ctx, &sluicev1.ShardGetRequest{Id: "b"}); status.Code(err) != codes.Unavailable {
		t.Errorf("after stop: %v", err)
	}
}
