package relay

import (
	"context"
	"time"

	pb "github.com/svcd/svcd/shared/proto"
)

// Lease over gRPC: the client half (supervisor) and the server half
// (worker), side by side.

var _ Leaser = (*GRPCClient)(nil)

func (c *GRPCClient) Lease(ctx context.Context, r LeaseRequest) (LeaseReply, error) {
	req := &pb.RelayLeaseRequest{Outcomes: make([]*pb.RelayReportRequest, len(r.Outcomes)),
		Returned: intsToPB(r.Returned), Want: intsToPB(r.Want)}
	for i, o := range r.Outcomes {
		req.Outcomes[i] = outcomeToPB(o)
	}
	res, err := c.client.Lease(ctx, req)
	if err != nil {
		return LeaseReply{}, err
	}
	return LeaseReply{Granted: intsFromPB(res.Granted), Changed: res.Changed, Revoked: res.Revoked,
		TTL: time.Duration(res.TtlMs) * time.Millisecond}, nil
}

func (s *GRPCServer) Lease(ctx context.Context, r *pb.RelayLeaseRequest) (*pb.RelayLeaseResponse, error) {
	l, ok := s.impl.(Leaser)
	if !ok {
		return &pb.RelayLeaseResponse{}, nil // nothing granted: every request goes through Admit
	}
	req := LeaseRequest{Outcomes: make([]Outcome, len(r.Outcomes)), Returned: intsFromPB(r.Returned), Want: intsFromPB(r.Want)}
	for i, o := range r.Outcomes {
		req.Outcomes[i] = outcomeFromPB(o)
	}
	reply, err := l.Lease(ctx, req)
	if err != nil {
		return nil, err
	}
	return &pb.RelayLeaseResponse{Granted: intsToPB(reply.Granted), Changed: reply.Changed, Revoked: reply.Revoked,
		TtlMs: reply.TTL.Milliseconds()}, nil
}

func outcomeToPB(o Outcome) *pb.RelayReportRequest {
	return &pb.RelayReportRequest{Target: o.Target, Status: int32(o.Status), RetryAfterMs: o.RetryAfterMs, Cancelled: o.Cancelled, Probe: o.Probe}
}

func outcomeFromPB(r *pb.RelayReportRequest) Outcome {
	return Outcome{Target: r.Target, Status: int(r.Status), RetryAfterMs: r.RetryAfterMs, Cancelled: r.Cancelled, Probe: r.Probe}
}

func intsToPB(m map[string]int) map[string]int32 {
	out := make(map[string]int32, len(m))
	for k, v := range m {
		out[k] = int32(v)
	}
	return out
}

func intsFromPB(m map[string]int32) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = int(v)
	}
	return out
}
