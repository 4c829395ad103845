package rpc

import (
	"context"
	"sync"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Local is the in-process client of the server's services: calls go
// straight to the handlers, through the same interceptors, with messages
// copied rather than encoded, and no socket, HTTP/2 framing or network
// poller in between. `sluice dev` reaches its own data nodes this way, as
// Elasticsearch's transport service short-cuts requests to the local node:
// a reply then wakes its caller directly, instead of waiting for a busy
// process to poll the network, which showed as search latency tail.
func (s *Server) Local() grpc.ClientConnInterface { return s.local.ch }

// local serves registered services in-process until stopped.
type local struct {
	ch *inprocgrpc.Channel

	mu       sync.RWMutex
	stopping bool
	calls    sync.WaitGroup
}

func newLocal(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) *local {
	l := &local{ch: &inprocgrpc.Channel{}}
	// The channel takes one interceptor of each kind: chain ours behind
	// the admission check, in the network server's order.
	l.ch.WithServerUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !l.enter() {
			return nil, errStopping
		}
		defer l.calls.Done()
		return chainUnary(unary, info, h)(ctx, req)
	})
	l.ch.WithServerStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if !l.enter() {
			return errStopping
		}
		defer l.calls.Done()
		return chainStream(stream, info, h)(srv, ss)
	})
	return l
}

var errStopping = status.Error(codes.Unavailable, "server is stopping")

// enter admits a call unless the server is stopping.
func (l *local) enter() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.stopping {
		return false
	}
	l.calls.Add(1)
	return true
}

// stop refuses new calls and waits for those in flight.
func (l *local) stop() {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	l.calls.Wait()
}

func chainUnary(ics []grpc.UnaryServerInterceptor, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) grpc.UnaryHandler {
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], h
		h = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, next) }
	}
	return h
}

func chainStream(ics []grpc.StreamServerInterceptor, info *grpc.StreamServerInfo, h grpc.StreamHandler) grpc.StreamHandler {
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], h
		h = func(srv any, ss grpc.ServerStream) error { return ic(srv, ss, info, next) }
	}
	return h
}
