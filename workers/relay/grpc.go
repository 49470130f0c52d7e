package relay

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/svcd/svcd/shared/keyrange"
	pb "github.com/svcd/svcd/shared/proto"
)

// Name is the worker's name: `svcd worker relay` and the manager's key.
const Name = "relay"

// Plugin is the go-plugin glue: in the worker Impl is the Engine; in the
// supervisor Impl is nil and GRPCClient hands out the client half.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Relay
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the server half on the worker's gRPC server.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterRelayServer(s, &GRPCServer{impl: p.Impl})
	return nil
}

// GRPCClient returns the client half over the supervisor's connection.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &GRPCClient{client: pb.NewRelayClient(c)}, nil
}

// GRPCClient is the supervisor's half: Relay over gRPC.
type GRPCClient struct{ client pb.RelayClient }

var _ Relay = (*GRPCClient)(nil)

func (c *GRPCClient) Admit(ctx context.Context, target string) (Decision, error) {
	r, err := c.client.Admit(ctx, &pb.RelayAdmitRequest{Target: target})
	if err != nil {
		return Decision{}, err
	}
	return Decision{Allowed: r.Allowed, Reason: r.Reason, RetryAfterMs: r.RetryAfterMs, Changed: r.Changed, Probe: r.Probe}, nil
}

func (c *GRPCClient) Report(ctx context.Context, o Outcome) (bool, error) {
	r, err := c.client.Report(ctx, &pb.RelayReportRequest{Target: o.Target, Status: int32(o.Status), RetryAfterMs: o.RetryAfterMs, Cancelled: o.Cancelled, Probe: o.Probe})
	if err != nil {
		return false, err
	}
	return r.Changed, nil
}

// Status asks for the targets of keys only. A worker built before ranged
// Status answers with every target: the caller keeps those of its range.
func (c *GRPCClient) Status(ctx context.Context, keys keyrange.Range) (Status, error) {
	r, err := c.client.Status(ctx, &pb.RelayStatusRequest{Keys: &pb.RelayKeyRange{None: keys.None, After: keys.After, Through: keys.Through, Bounded: keys.Bounded}})
	if err != nil {
		return Status{}, err
	}
	st := Status{Policy: policyFromPB(r.Policy), Live: map[string]Live{}, Targets: map[string]TargetState{}}
	for k, v := range r.Live {
		st.Live[k] = Live{InFlight: int(v.InFlight), Waiting: int(v.Waiting)}
	}
	for k, v := range r.Targets {
		st.Targets[k] = stateFromPB(v)
	}
	return st, nil
}

func (c *GRPCClient) TakeDirty(ctx context.Context) ([]TargetState, error) {
	r, err := c.client.TakeDirty(ctx, &pb.RelayTakeDirtyRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]TargetState, len(r.States))
	for i, s := range r.States {
		out[i] = stateFromPB(s)
	}
	return out, nil
}

func (c *GRPCClient) Restore(ctx context.Context, states []TargetState) error {
	_, err := c.client.Restore(ctx, statesToPB(states))
	return err
}

// GRPCServer is the worker's half around the Engine.
type GRPCServer struct {
	pb.UnimplementedRelayServer
	impl Relay
}

func (s *GRPCServer) Admit(ctx context.Context, r *pb.RelayAdmitRequest) (*pb.RelayAdmitResponse, error) {
	d, err := s.impl.Admit(ctx, r.Target)
	if err != nil {
		return nil, err
	}
	return &pb.RelayAdmitResponse{Allowed: d.Allowed, Reason: d.Reason, RetryAfterMs: d.RetryAfterMs, Changed: d.Changed, Probe: d.Probe}, nil
}

func (s *GRPCServer) Report(ctx context.Context, r *pb.RelayReportRequest) (*pb.RelayReportResponse, error) {
	changed, err := s.impl.Report(ctx, Outcome{Target: r.Target, Status: int(r.Status), RetryAfterMs: r.RetryAfterMs, Cancelled: r.Cancelled, Probe: r.Probe})
	if err != nil {
		return nil, err
	}
	return &pb.RelayReportResponse{Changed: changed}, nil
}

func (s *GRPCServer) Status(ctx context.Context, r *pb.RelayStatusRequest) (*pb.RelayStatusResponse, error) {
	var keys keyrange.Range // every target, for a caller that names no range
	if k := r.GetKeys(); k != nil {
		keys = keyrange.Range{None: k.None, After: k.After, Through: k.Through, Bounded: k.Bounded}
	}
	st, err := s.impl.Status(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := &pb.RelayStatusResponse{Policy: policyToPB(st.Policy), Live: map[string]*pb.RelayLive{}, Targets: map[string]*pb.RelayTargetState{}}
	for k, v := range st.Live {
		out.Live[k] = &pb.RelayLive{InFlight: int32(v.InFlight), Waiting: int32(v.Waiting)}
	}
	for k, v := range st.Targets {
		out.Targets[k] = stateToPB(v)
	}
	return out, nil
}

func (s *GRPCServer) TakeDirty(ctx context.Context, _ *pb.RelayTakeDirtyRequest) (*pb.RelayTargetStates, error) {
	states, err := s.impl.TakeDirty(ctx)
	if err != nil {
		return nil, err
	}
	return statesToPB(states), nil
}

func (s *GRPCServer) Restore(ctx context.Context, r *pb.RelayTargetStates) (*pb.RelayRestoreResponse, error) {
	states := make([]TargetState, len(r.States))
	for i, st := range r.States {
		states[i] = stateFromPB(st)
	}
	return &pb.RelayRestoreResponse{}, s.impl.Restore(ctx, states)
}

func statesToPB(states []TargetState) *pb.RelayTargetStates {
	out := &pb.RelayTargetStates{States: make([]*pb.RelayTargetState, len(states))}
	for i, s := range states {
		out.States[i] = stateToPB(s)
	}
	return out
}

func stateToPB(s TargetState) *pb.RelayTargetState {
	return &pb.RelayTargetState{
		Target: s.Target, WindowStartMs: s.WindowStartMs, WindowCount: int32(s.WindowCount),
		BackoffUntilMs: s.BackoffUntilMs, BackoffLevel: int32(s.BackoffLevel), Breaker: s.Breaker,
		BreakerFailures: int32(s.BreakerFailures), BreakerOpenedMs: s.BreakerOpenedMs,
		LastStatus: int32(s.LastStatus), LastOutcomeMs: s.LastOutcomeMs, Admitted: s.Admitted, Refused: s.Refused,
	}
}

func stateFromPB(s *pb.RelayTargetState) TargetState {
	if s == nil {
		return TargetState{}
	}
	return TargetState{
		Target: s.Target, WindowStartMs: s.WindowStartMs, WindowCount: int(s.WindowCount),
		BackoffUntilMs: s.BackoffUntilMs, BackoffLevel: int(s.BackoffLevel), Breaker: s.Breaker,
		BreakerFailures: int(s.BreakerFailures), BreakerOpenedMs: s.BreakerOpenedMs,
		LastStatus: int(s.LastStatus), LastOutcomeMs: s.LastOutcomeMs, Admitted: s.Admitted, Refused: s.Refused,
	}
}

func policyToPB(p Policy) *pb.RelayPolicy {
	return &pb.RelayPolicy{
		WindowMs: p.WindowMs, WindowMax: int32(p.WindowMax), MaxInFlight: int32(p.MaxInFlight), MaxWaitMs: p.MaxWaitMs,
		BackoffBaseMs: p.BackoffBaseMs, BackoffMaxMs: p.BackoffMaxMs, BreakerFailures: int32(p.BreakerFailures),
		BreakerOpenMs: p.BreakerOpenMs, FlushIntervalMs: p.FlushIntervalMs,
	}
}

func policyFromPB(p *pb.RelayPolicy) Policy {
	if p == nil {
		return Policy{}
	}
	return Policy{
		WindowMs: p.WindowMs, WindowMax: int(p.WindowMax), MaxInFlight: int(p.MaxInFlight), MaxWaitMs: p.MaxWaitMs,
		BackoffBaseMs: p.BackoffBaseMs, BackoffMaxMs: p.BackoffMaxMs, BreakerFailures: int(p.BreakerFailures),
		BreakerOpenMs: p.BreakerOpenMs, FlushIntervalMs: p.FlushIntervalMs,
	}
}
