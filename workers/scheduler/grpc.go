package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/svcd/svcd/shared/proto"
)

// Plugin is the go-plugin glue: in the worker Impl is the Engine; in the
// supervisor Impl is nil and GRPCClient hands out the client half, which
// keeps the broker to lend host services on.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Scheduler
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the worker's half.
func (p *Plugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterSchedulerServer(s, &GRPCServer{impl: p.Impl, broker: broker})
	return nil
}

// GRPCClient returns the supervisor's half.
func (p *Plugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &GRPCClient{client: pb.NewSchedulerClient(c), broker: broker}, nil
}

// GRPCClient is the supervisor's half: each Tick serves the given Host on a
// fresh broker stream for as long as the tick runs.
type GRPCClient struct {
	client pb.SchedulerClient
	broker *plugin.GRPCBroker
}

var _ Scheduler = (*GRPCClient)(nil)

func (c *GRPCClient) Tick(ctx context.Context, host Host, now time.Time, s Settings) (Result, error) {
	settings, err := json.Marshal(s)
	if err != nil {
		return Result{}, err
	}
	var srv *grpc.Server
	ready := make(chan struct{})
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		srv = grpc.NewServer(opts...)
		pb.RegisterHostStateServer(srv, &hostStateServer{host: host})
		pb.RegisterHostBridgeServer(srv, &hostBridgeServer{host: host})
		close(ready)
		return srv
	})
	defer func() {
		select {
		case <-ready:
			srv.Stop()
		default:
		}
	}()
	r, err := c.client.Tick(ctx, &pb.SchedulerTickRequest{BrokerId: id, NowUnixMs: now.UnixMilli(), Settings: settings})
	if err != nil {
		return Result{}, err
	}
	return Result{Projected: int(r.Projected), Dispatched: int(r.Dispatched), Done: int(r.Done), Failed: int(r.Failed),
		SkippedSystemPaused: r.SkippedSystemPaused, Errors: r.Errors}, nil
}

// GRPCServer is the worker's half: it dials the host services the tick
// names and runs the Engine against them.
type GRPCServer struct {
	pb.UnimplementedSchedulerServer
	impl   Scheduler
	broker *plugin.GRPCBroker
}

func (s *GRPCServer) Tick(ctx context.Context, r *pb.SchedulerTickRequest) (*pb.SchedulerTickResponse, error) {
	var set Settings
	if err := json.Unmarshal(r.Settings, &set); err != nil {
		return nil, err
	}
	conn, err := s.broker.Dial(r.BrokerId)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	host := &hostClient{state: pb.NewHostStateClient(conn), bridge: pb.NewHostBridgeClient(conn)}
	res, err := s.impl.Tick(ctx, host, time.UnixMilli(r.NowUnixMs), set)
	if err != nil {
		return nil, err
	}
	return &pb.SchedulerTickResponse{Projected: int32(res.Projected), Dispatched: int32(res.Dispatched), Done: int32(res.Done),
		Failed: int32(res.Failed), SkippedSystemPaused: res.SkippedSystemPaused, Errors: res.Errors}, nil
}

// hostClient is Host as the worker sees it: gRPC calls back to the supervisor.
type hostClient struct {
	state  pb.HostStateClient
	bridge pb.HostBridgeClient
}

func (h *hostClient) Apply(ctx context.Context, typ string, payload any) ([]byte, bool, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, false, err
	}
	r, err := h.state.Apply(ctx, &pb.HostApplyRequest{Type: typ, Payload: b})
	if err != nil {
		return nil, false, err
	}
	if r.Refused {
		return nil, true, nil
	}
	if r.Error != "" {
		return nil, false, errors.New(r.Error)
	}
	return r.Value, false, nil
}

func (h *hostClient) View(ctx context.Context, now time.Time) (View, error) {
	r, err := h.state.Read(ctx, &pb.HostReadRequest{View: "renewal", NowUnixMs: now.UnixMilli()})
	if err != nil {
		return View{}, err
	}
	var v View
	return v, json.Unmarshal(r.Value, &v)
}

func (h *hostClient) Deliver(ctx context.Context, jobID string) (Delivery, error) {
	r, err := h.bridge.Deliver(ctx, &pb.HostDeliverRequest{JobId: jobID})
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{OK: r.Ok, InjectID: r.InjectId, Level: int(r.Level), StatusCode: int(r.StatusCode), Error: r.Error}, nil
}

// hostStateServer and hostBridgeServer serve a Host in the supervisor.
type hostStateServer struct {
	pb.UnimplementedHostStateServer
	host Host
}

func (s *hostStateServer) Apply(ctx context.Context, r *pb.HostApplyRequest) (*pb.HostApplyResponse, error) {
	v, refused, err := s.host.Apply(ctx, r.Type, json.RawMessage(r.Payload))
	if refused {
		return &pb.HostApplyResponse{Refused: true}, nil
	}
	if err != nil {
		return &pb.HostApplyResponse{Error: err.Error()}, nil
	}
	return &pb.HostApplyResponse{Value: v}, nil
}

func (s *hostStateServer) Read(ctx context.Context, r *pb.HostReadRequest) (*pb.HostReadResponse, error) {
	if r.View != "renewal" {
		return nil, errors.New("unknown view " + r.View)
	}
	now := time.Now()
	if r.NowUnixMs != 0 {
		now = time.UnixMilli(r.NowUnixMs)
	}
	v, err := s.host.View(ctx, now)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	return &pb.HostReadResponse{Value: b}, err
}

type hostBridgeServer struct {
	pb.UnimplementedHostBridgeServer
	host Host
}

func (s *hostBridgeServer) Deliver(ctx context.Context, r *pb.HostDeliverRequest) (*pb.HostDeliverResponse, error) {
	d, err := s.host.Deliver(ctx, r.JobId)
	if err != nil {
		return nil, err
	}
	return &pb.HostDeliverResponse{Ok: d.OK, InjectId: d.InjectID, Level: int32(d.Level), StatusCode: int32(d.StatusCode), Error: d.Error}, nil
}
