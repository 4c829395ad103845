package rpc

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Local is the in-process client of the server's services: calls go
// straight to the handlers, through the same interceptors, with no
// encoding, socket, HTTP/2 framing or network poller in between. `sluice
// dev` reaches its own data nodes this way, as Elasticsearch's transport
// service short-cuts requests to the local node: a reply then wakes its
// caller directly, instead of waiting for a busy process to poll the
// network, which showed as search latency tail.
//
// A unary call runs its handler in the caller's goroutine and hands
// messages over rather than copying them (see moveMessage): as in
// Elasticsearch's local execution, the caller must not change a request
// while its call runs, and handlers must not keep or share the messages
// they return. Streams go through grpchan's in-process channel.
func (s *Server) Local() grpc.ClientConnInterface { return s.local }

// local serves registered services in-process until stopped.
type local struct {
	ch    *inprocgrpc.Channel         // streams
	chain grpc.UnaryServerInterceptor // the network server's unary interceptors

	methods sync.Map // full method name -> *localMethod

	mu       sync.RWMutex
	stopping bool
	calls    sync.WaitGroup
}

type localMethod struct {
	impl any
	h    grpc.MethodHandler
}

func newLocal(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) *local {
	l := &local{ch: &inprocgrpc.Channel{}}
	l.chain = func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return chainUnary(unary, info, h)(ctx, req)
	}
	// The channel takes one interceptor: chain ours behind the admission
	// check, in the network server's order.
	l.ch.WithServerStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if !l.enter() {
			return errStopping
		}
		defer l.calls.Done()
		ctx := context.WithValue(ss.Context(), inProcessKey{}, true)
		// grpchan hides the caller's context values from the handler; the
		// one a guard reads is carried over.
		if leaf, ok := ClientCertificate(inprocgrpc.ClientContext(ss.Context())); ok {
			ctx = WithClientCertificate(ctx, leaf)
		}
		return chainStream(stream, info, h)(srv, inProcessStream{ss, ctx})
	})
	return l
}

func (l *local) register(desc *grpc.ServiceDesc, impl any) {
	l.ch.RegisterService(desc, impl)
	for _, m := range desc.Methods {
		name := "/" + desc.ServiceName + "/" + m.MethodName
		l.methods.Store(name, &localMethod{impl: impl, h: m.Handler})
	}
}

// Invoke implements grpc.ClientConnInterface: the handler runs in this
// goroutine, under the caller's deadline and cancellation, with the
// caller's outgoing metadata as incoming.
func (l *local) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	v, ok := l.methods.Load(method)
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	m := v.(*localMethod)
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if !l.enter() {
		return errStopping
	}
	defer l.calls.Done()
	md, _ := metadata.FromOutgoingContext(ctx)
	sctx := metadata.NewIncomingContext(context.WithValue(ctx, inProcessKey{}, true), md.Copy())
	// The caller may itself be a handler: its own call's stream must not
	// answer for this one (grpc.Method, SetHeader).
	sctx = grpc.NewContextWithServerTransportStream(sctx, localStream{method})
	out, err := m.h(m.impl, sctx, func(in any) error { return moveMessage(in, args) }, l.chain)
	if err != nil {
		// As the network server answers: a status as it is, a context
		// error as its code, anything else Unknown.
		if _, ok := status.FromError(err); !ok {
			err = status.FromContextError(err).Err()
		}
		return err
	}
	if err := moveMessage(reply, out); err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return nil
}

type inProcessKey struct{}

// InProcess says whether ctx is that of a call served in-process (Local):
// its caller is this process. Such a call carries no peer of its own (its
// context may carry its caller's, if the caller serves a network call), so
// peer-based checks skip it.
func InProcess(ctx context.Context) bool {
	v, _ := ctx.Value(inProcessKey{}).(bool)
	return v
}

type clientCertKey struct{}

// WithClientCertificate says that the in-process calls made with ctx are
// made for a network caller whose client certificate (leaf) the calling
// server verified against its trusted CAs: the HTTP API, calling its own
// coordinator for a client that authenticated with a certificate. A guard
// reads it (ClientCertificate) on in-process calls only, which carry no
// TLS peer of their own; a network caller cannot set it.
func WithClientCertificate(ctx context.Context, leaf *x509.Certificate) context.Context {
	return context.WithValue(ctx, clientCertKey{}, leaf)
}

// ClientCertificate is the verified client certificate an in-process call
// is made for (WithClientCertificate); ctx may be nil.
func ClientCertificate(ctx context.Context) (*x509.Certificate, bool) {
	if ctx == nil {
		return nil, false
	}
	leaf, ok := ctx.Value(clientCertKey{}).(*x509.Certificate)
	return leaf, ok && leaf != nil
}

// inProcessStream is a local stream with its context marked InProcess.
type inProcessStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s inProcessStream) Context() context.Context { return s.ctx }

// localStream is the server transport stream of a local unary call: it
// names the method and has no headers to send.
type localStream struct{ method string }

func (s localStream) Method() string { return s.method }

func (s localStream) SetHeader(metadata.MD) error  { return errNoHeaders }
func (s localStream) SendHeader(metadata.MD) error { return errNoHeaders }
func (s localStream) SetTrailer(metadata.MD) error { return errNoHeaders }

var errNoHeaders = status.Error(codes.Unimplemented, "in-process calls carry no headers or trailers")

// NewStream implements grpc.ClientConnInterface.
func (l *local) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return l.ch.NewStream(ctx, desc, method, opts...)
}

// moveMessage makes dst hold src's fields, sharing their values: lists,
// maps, sub-messages and bytes are not copied, so neither side may change
// them afterwards (top-level fields are dst's own). Messages of different
// Go types are deep-copied instead.
func moveMessage(dst, src any) error {
	d, ok := dst.(proto.Message)
	if !ok {
		return fmt.Errorf("local call: %T is not a protobuf message", dst)
	}
	sm, ok := src.(proto.Message)
	if !ok {
		return fmt.Errorf("local call: %T is not a protobuf message", src)
	}
	dr, sr := d.ProtoReflect(), sm.ProtoReflect()
	if dr.Descriptor().FullName() != sr.Descriptor().FullName() {
		return fmt.Errorf("local call: %s answered where %s was expected", sr.Descriptor().FullName(), dr.Descriptor().FullName())
	}
	proto.Reset(d)
	if dr.Type() != sr.Type() {
		proto.Merge(d, sm)
		return nil
	}
	sr.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dr.Set(fd, v)
		return true
	})
	if u := sr.GetUnknown(); len(u) > 0 {
		dr.SetUnknown(u)
	}
	return nil
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
