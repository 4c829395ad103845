// Package rpc builds the gRPC servers of Sluice's processes in one place
// (as zoekt's grpc/defaults does): message size limits, keep-alive policy,
// recovery and logging interceptors, the standard health service and
// reflection, so every server answers grpcurl and health probes the same way.
//
// A request whose bytes do not decode (invalid UTF-8 in a string, nesting
// beyond protobuf's limit) is answered INVALID_ARGUMENT naming the field
// where it can (codec.go), not INTERNAL as gRPC would.
//
// Options.Creds serves TLS; Options.Unary and Stream add interceptors
// innermost (a coordinator's authentication and authorization), which see
// in-process calls too, marked InProcess.
//
// Errors (errors.go) is the mechanism of a process's one error table: the
// server turns every error a handler returns into a status through it, and
// Relay keeps another process's answer as a RemoteError, so a relayed
// error keeps its code and details and is never re-worded.
package rpc

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// MaxMessageBytes is the default limit of one message in either direction:
// bulk requests and search responses carry document sources.
const MaxMessageBytes = 64 << 20

// Options configure a server.
type Options struct {
	Logger *slog.Logger
	// MaxMessageBytes limits received and sent messages. Default MaxMessageBytes.
	MaxMessageBytes int
	// MaxRecvMessageBytes, if set, limits received messages instead (a
	// coordinator keeps each request within its memory budgets).
	MaxRecvMessageBytes int
	// SlowCall logs calls taking longer at info level. Default 1s.
	SlowCall time.Duration
	// Metrics, if set, counts and times every call for Prometheus.
	Metrics *grpcprom.ServerMetrics
	// Errors is the process's error table: every error a handler returns
	// becomes a status through it. Nil has no rules (INTERNAL, but for
	// contexts and relayed statuses).
	Errors *Errors
	// Enums, if set, refuses requests holding an enum number their enum
	// does not declare, as INVALID_ARGUMENT naming the field: a public
	// server's, whose clients are not Sluice's own.
	Enums *EnumCheck
	// Admit, if set, sees each call before any of its messages is read:
	// an error refuses the call with the error's status (through Errors);
	// the context it returns is the call's, and ends with the call.
	// In-process calls (Local) do not pass through it.
	Admit func(ctx context.Context, method string) (context.Context, error)
	// Creds, if set, are the server's transport credentials (TLS); nil
	// serves plaintext.
	Creds credentials.TransportCredentials
	// Unary and Stream, if set, run innermost, after the request checks:
	// authentication and authorization, which see decoded, well-formed
	// requests. In-process calls (Local) pass through them too, marked
	// InProcess.
	Unary  []grpc.UnaryServerInterceptor
	Stream []grpc.StreamServerInterceptor
}

// Server is a gRPC server with its health service. Services registered on
// it are also served in-process by Local, for callers in the same process.
type Server struct {
	*grpc.Server
	Health *health.Server
	local  *local
}

// RegisterService registers a service on the network server and on the
// in-process channel (so `Register(s)` helpers serve both).
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.Server.RegisterService(desc, impl)
	s.local.register(desc, impl)
}

// NewServer returns a server with Sluice's defaults, health (NOT_SERVING
// until the process calls Health.SetServingStatus) and reflection. Register
// services on it, then Serve.
func NewServer(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = MaxMessageBytes
	}
	if o.MaxRecvMessageBytes <= 0 {
		o.MaxRecvMessageBytes = o.MaxMessageBytes
	}
	if o.SlowCall <= 0 {
		o.SlowCall = time.Second
	}
	l := &callLogger{log: o.Logger, slow: o.SlowCall}
	// The error table innermost: the logger and metrics see the codes.
	checkUnary, checkStream := requestChecks(o.Enums)
	unary := append([]grpc.UnaryServerInterceptor{l.unary, recoverUnary(o.Logger), o.Errors.unary, checkUnary}, o.Unary...)
	stream := append([]grpc.StreamServerInterceptor{l.stream, recoverStream(o.Logger), o.Errors.stream, checkStream}, o.Stream...)
	if o.Metrics != nil {
		// Outermost, so a recovered panic is counted with its INTERNAL code.
		unary = append([]grpc.UnaryServerInterceptor{o.Metrics.UnaryServerInterceptor()}, unary...)
		stream = append([]grpc.StreamServerInterceptor{o.Metrics.StreamServerInterceptor()}, stream...)
	}
	opts := []grpc.ServerOption{
		// A request that does not decode is the client's fault, not INTERNAL.
		grpc.ForceServerCodecV2(codec{encoding.GetCodecV2(grpcproto.Name)}),
		grpc.MaxRecvMsgSize(o.MaxRecvMessageBytes),
		grpc.MaxSendMsgSize(o.MaxMessageBytes),
		// Clients ping idle connections (client.Dial does, every 30s);
		// allow it rather than closing their connections.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.ChainUnaryInterceptor(unary...),
		// Reused handler goroutines keep their grown stacks: a goroutine per
		// call regrew its stack through the search path every time (see
		// package fanout). Busy workers never delay a call: grpc-go then
		// starts a goroutine for it.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		grpc.ChainStreamInterceptor(stream...),
	}
	if o.Creds != nil {
		opts = append(opts, grpc.Creds(o.Creds))
	}
	if o.Admit != nil {
		opts = append(opts, grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			ctx, err := o.Admit(ctx, info.FullMethodName)
			return ctx, o.Errors.Err(err)
		}))
	}
	g := grpc.NewServer(opts...)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s := &Server{Server: g, Health: h, local: newLocal(unary, stream)}
	// Health in-process too: the allocator's follower checks reach the
	// nodes of its own process (`sluice dev`) that way.
	s.RegisterService(&healthpb.Health_ServiceDesc, h)
	reflection.Register(g)
	return s
}

// SetServing marks every registered service and the server as serving (or not).
func (s *Server) SetServing(serving bool) {
	s.SetHealth("", serving)
	for name := range s.GetServiceInfo() {
		s.SetHealth(name, serving)
	}
}

// SetHealth sets the health status of one service name, which need not
// be a registered service (a data node's readiness is one).
func (s *Server) SetHealth(service string, serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.Health.SetServingStatus(service, st)
}

// Stop stops gracefully, giving in-flight calls up to timeout before
// cutting them off. In-process calls are refused from now on and waited
// for; they cannot be cut off, and end with their callers' contexts (in
// `sluice dev` the coordinator, their only caller, stops first).
func (s *Server) Stop(timeout time.Duration) {
	s.SetServing(false)
	done := make(chan struct{})
	go func() { s.GracefulStop(); s.local.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		s.Server.Stop()
		<-done
	}
}

type callLogger struct {
	log  *slog.Logger
	slow time.Duration
}

func (l *callLogger) done(ctx context.Context, method string, start time.Time, err error) {
	d := time.Since(start)
	code := status.Code(err)
	switch {
	case code == codes.Internal || code == codes.Unknown || code == codes.DataLoss:
		l.log.ErrorContext(ctx, "rpc failed", "method", method, "code", code.String(), "err", err, "took", d)
	case d > l.slow:
		l.log.InfoContext(ctx, "slow rpc", "method", method, "code", code.String(), "took", d)
	default:
		l.log.DebugContext(ctx, "rpc", "method", method, "code", code.String(), "took", d)
	}
}

func (l *callLogger) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	l.done(ctx, info.FullMethod, start, err)
	return resp, err
}

func (l *callLogger) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := time.Now()
	err := h(srv, ss)
	l.done(ss.Context(), info.FullMethod, start, err)
	return err
}

// recoverUnary turns a handler panic into INTERNAL instead of killing the
// process, logging the stack.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.ErrorContext(ctx, "rpc panic", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
		}()
		return h(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				log.ErrorContext(ss.Context(), "rpc panic", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
		}()
		return h(srv, ss)
	}
}
