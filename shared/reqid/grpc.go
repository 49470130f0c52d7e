package reqid

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// outgoing adds ctx's id to the call's metadata.
func outgoing(ctx context.Context) context.Context {
	if id := From(ctx); id != "" {
		return metadata.AppendToOutgoingContext(ctx, MetadataKey, id)
	}
	return ctx
}

// incoming takes the id from the call's metadata. The worker checks it
// again: it writes it into its logs and trusts no peer's bytes for that.
func incoming(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	if ids := md.Get(MetadataKey); len(ids) > 0 && Valid(ids[0]) {
		return With(ctx, ids[0])
	}
	return ctx
}

// ClientInterceptors pass the request id of a call's context to the worker
// (the supervisor's gRPC client halves).
func ClientInterceptors() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(outgoing(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(outgoing(ctx), desc, cc, method, opts...)
		}),
	}
}

// ServerInterceptors put the caller's request id into each call's context
// (the workers' gRPC server halves) and log each call that carries one at
// debug level with it, so the worker's side of a request is in the logs
// even where its handler writes nothing.
func ServerInterceptors(log hclog.Logger) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx = incoming(ctx)
			start := time.Now()
			resp, err := handler(ctx, req)
			logCall(ctx, log, info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx := incoming(ss.Context())
			start := time.Now()
			err := handler(srv, &stream{ServerStream: ss, ctx: ctx})
			logCall(ctx, log, info.FullMethod, start, err)
			return err
		}),
	}
}

func logCall(ctx context.Context, log hclog.Logger, method string, start time.Time, err error) {
	id := From(ctx)
	if id == "" || !log.IsDebug() {
		return
	}
	log.Debug("grpc call", LogKey, id, "method", method, "code", status.Code(err).String(), "duration_ms", time.Since(start).Milliseconds())
}

// stream is a server stream whose context carries the request id.
type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }
