package hostops

import (
	"context"
	"time"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// GRPCServer is the worker's half: gRPC onto the real HostOps.
type GRPCServer struct {
	pb.UnimplementedHostOpsServer
	impl HostOps
}

// Exec runs the command with the stream's context, so a supervisor that
// cancels the call (its HTTP client went away) kills the command.
func (s *GRPCServer) Exec(req *pb.ExecRequest, stream pb.HostOps_ExecServer) error {
	started := func(st Started) {
		// A failed send means the supervisor is gone; the context then
		// ends and Exec kills the command, so the error needs no handling.
		_ = stream.Send(&pb.ExecEvent{Event: &pb.ExecEvent_Started{Started: &pb.ExecStarted{Pid: int32(st.Pid), Pgid: int32(st.Pid), Cgroup: st.Cgroup}}})
	}
	call := ExecRequest{Command: req.Command, Cwd: req.Cwd, Timeout: time.Duration(req.TimeoutMs) * time.Millisecond}
	if req.HasLimits {
		call.Limits = &sandbox.Limits{MemoryBytes: req.MemoryBytes, Pids: req.Pids, CPU: req.Cpu}
	}
	res, err := s.impl.Exec(stream.Context(), call, started)
	if err != nil {
		return err
	}
	return stream.Send(&pb.ExecEvent{Event: &pb.ExecEvent_Result{Result: execResultToPB(res)}})
}

func (s *GRPCServer) ReadFile(ctx context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error) {
	res, err := s.impl.ReadFile(ctx, ReadRequest{Path: req.Path, Cwd: req.Cwd, Encoding: req.Encoding})
	if err != nil {
		return nil, err
	}
	return &pb.ReadFileResponse{Ok: res.OK, Error: res.Error, ErrorCode: res.ErrorCode, Info: fileInfoToPB(res.Info), Content: res.Content}, nil
}

func (s *GRPCServer) WriteFile(ctx context.Context, req *pb.WriteFileRequest) (*pb.WriteFileResponse, error) {
	res, err := s.impl.WriteFile(ctx, WriteRequest{Path: req.Path, Cwd: req.Cwd, Content: req.Content, Overwrite: req.Overwrite, CreateParents: req.CreateParents})
	if err != nil {
		return nil, err
	}
	return &pb.WriteFileResponse{Ok: res.OK, Error: res.Error, ErrorCode: res.ErrorCode, Info: fileInfoToPB(res.Info), Created: res.Created}, nil
}

// Reconfigure decodes the config as the worker's start does (ConfigEnv) and
// hands it to the implementation; a refusal travels as the response's error.
func (s *GRPCServer) Reconfigure(ctx context.Context, req *pb.ReconfigureRequest) (*pb.ReconfigureResponse, error) {
	cfg, err := DecodeConfig(req.ConfigJson)
	if err == nil {
		err = s.impl.Reconfigure(ctx, cfg)
	}
	if err != nil {
		return &pb.ReconfigureResponse{Error: err.Error()}, nil
	}
	return &pb.ReconfigureResponse{}, nil
}

func execResultToPB(r ExecResult) *pb.ExecResult {
	return &pb.ExecResult{
		Ok: r.OK, Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		ExitCode: int32(r.ExitCode), Signal: r.Signal,
		StartedUnixNano: toNano(r.StartedAt), FinishedUnixNano: toNano(r.FinishedAt),
		TimedOut: r.TimedOut, Error: r.Error, ErrorCode: r.ErrorCode, Pid: int32(r.Pid),
		OomKilled: r.OOMKilled, PidsLimitHit: r.PidsLimitHit, PeakMemoryBytes: r.PeakMemoryBytes, CpuTimeUs: r.CPUTimeMicros,
	}
}

func fileInfoToPB(fi FileInfo) *pb.FileInfo {
	return &pb.FileInfo{Path: fi.Path, Size: fi.Size, Mode: fi.Mode, ModUnixNano: toNano(fi.ModTime)}
}

func toNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
