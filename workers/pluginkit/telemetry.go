package pluginkit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Telemetry is a worker's own metrics: a registry of its own (no process
// global), the gRPC call series every worker gets from interceptors, and
// whatever the worker's engine registers on Registry. The supervisor reads
// it over the worker's go-plugin connection (the Telemetry service below,
// served on the same gRPC server as the worker's own service), so a worker
// opens no second listener.
type Telemetry struct {
	Registry *prometheus.Registry
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewTelemetry makes a worker's registry with the gRPC call series on it.
// Label values are gRPC method names and status codes: a fixed set.
func NewTelemetry() *Telemetry {
	t := &Telemetry{
		Registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svcd_worker_grpc_calls_total",
			Help: "gRPC calls served by the worker, by method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svcd_worker_grpc_call_duration_seconds",
			Help:    "gRPC call duration in the worker, by method (streams: until the stream ends).",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"method"}),
	}
	t.Registry.MustRegister(t.calls, t.latency)
	return t
}

func (t *Telemetry) observe(method string, start time.Time, err error) {
	if method == gatherMethod {
		return // the supervisor's scrape is not the worker's work
	}
	t.calls.WithLabelValues(method, status.Code(err).String()).Inc()
	t.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// ServerOptions are the interceptors that count and time every call.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			t.observe(info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			t.observe(info.FullMethod, start, err)
			return err
		}),
	}
}

// The service is one unary method with well-known message types, so it
// needs no generated code: Empty in, the registry's families out as
// length-delimited dto.MetricFamily protobufs in one BytesValue.
const gatherMethod = "/svcd.telemetry.Telemetry/Gather"

type gatherer interface {
	gather(ctx context.Context) ([]byte, error)
}

var telemetryDesc = grpc.ServiceDesc{
	ServiceName: "svcd.telemetry.Telemetry",
	HandlerType: (*gatherer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Gather",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			b, err := srv.(gatherer).gather(ctx)
			return wrapperspb.Bytes(b), err
		}}},
}

// Register serves the Telemetry service on s.
func (t *Telemetry) Register(s *grpc.Server) { s.RegisterService(&telemetryDesc, t) }

func (t *Telemetry) gather(context.Context) ([]byte, error) {
	mfs, err := t.Registry.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// GatherFrom asks the worker behind conn for its metric families.
func GatherFrom(ctx context.Context, conn *grpc.ClientConn) ([]*dto.MetricFamily, error) {
	out := new(wrapperspb.BytesValue)
	if err := conn.Invoke(ctx, gatherMethod, &emptypb.Empty{}, out); err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(out.GetValue()))
	var mfs []*dto.MetricFamily
	for {
		mf := new(dto.MetricFamily)
		err := protodelim.UnmarshalFrom(r, mf)
		if errors.Is(err, io.EOF) {
			return mfs, nil
		}
		if err != nil {
			return nil, err
		}
		mfs = append(mfs, mf)
	}
}
