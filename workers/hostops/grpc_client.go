package hostops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/workers/pluginkit"
)

// GRPCClient is the supervisor's half: HostOps over gRPC.
type GRPCClient struct {
	client pb.HostOpsClient
	hop    *hopClient // nil: the worker was started without one
}

var (
	_ HostOps               = (*GRPCClient)(nil)
	_ pluginkit.HopAttacher = (*GRPCClient)(nil)
)

// AttachHop makes exec go over the worker's hop (hop_client.go); the worker
// manager calls it once, before the client is leased to any call.
func (c *GRPCClient) AttachHop(h *pluginkit.Hop, maxMsg int) { c.hop = newHopClient(h, maxMsg) }

// Exec goes over the hop when the worker has one (hopClient.takesExec);
// otherwise it streams the call over gRPC, where started fires on the
// worker's Started event so the caller knows which process group to kill
// should the worker die mid-call.
func (c *GRPCClient) Exec(ctx context.Context, req ExecRequest, started func(Started)) (ExecResult, error) {
	if c.hop != nil && c.hop.takesExec() {
		return c.hop.Exec(ctx, req, started)
	}
	pr := &pb.ExecRequest{Command: req.Command, Cwd: req.Cwd, TimeoutMs: req.Timeout.Milliseconds()}
	if l := req.Limits; l != nil {
		pr.HasLimits, pr.MemoryBytes, pr.Pids, pr.Cpu = true, l.MemoryBytes, l.Pids, l.CPU
	}
	stream, err := c.client.Exec(ctx, pr)
	if err != nil {
		return ExecResult{}, err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil { // gRPC reset the stream: the worker's context ends
				return ExecResult{}, fmt.Errorf("%w (%w)", err, ErrCancelSent)
			}
			return ExecResult{}, err
		}
		switch e := ev.Event.(type) {
		case *pb.ExecEvent_Started:
			if started != nil {
				started(Started{Pid: int(e.Started.Pid), Cgroup: e.Started.Cgroup})
			}
		case *pb.ExecEvent_Result:
			return execResultFromPB(e.Result), nil
		default:
			return ExecResult{}, errors.New("hostops: empty exec event")
		}
	}
}

func (c *GRPCClient) ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error) {
	resp, err := c.client.ReadFile(ctx, &pb.ReadFileRequest{Path: req.Path, Cwd: req.Cwd, Encoding: req.Encoding})
	if err != nil {
		return ReadResult{}, err
	}
	return ReadResult{OK: resp.Ok, Error: resp.Error, ErrorCode: resp.ErrorCode, Info: fileInfoFromPB(resp.Info), Content: resp.Content}, nil
}

func (c *GRPCClient) WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error) {
	resp, err := c.client.WriteFile(ctx, &pb.WriteFileRequest{Path: req.Path, Cwd: req.Cwd, Content: req.Content, Overwrite: req.Overwrite, CreateParents: req.CreateParents})
	if err != nil {
		return WriteResult{}, err
	}
	return WriteResult{OK: resp.Ok, Error: resp.Error, ErrorCode: resp.ErrorCode, Info: fileInfoFromPB(resp.Info), Created: resp.Created}, nil
}

// Reconfigure sends cfg as the JSON the worker starts from (ConfigEnv); a
// refusal comes back as an error, ErrRespawn when only a new worker
// process can take it.
func (c *GRPCClient) Reconfigure(ctx context.Context, cfg Config) error {
	enc, err := cfg.Encode()
	if err != nil {
		return err
	}
	resp, err := c.client.Reconfigure(ctx, &pb.ReconfigureRequest{ConfigJson: enc})
	if err != nil {
		return err
	}
	return c.mapReconfigureError(resp.Error)
}

// mapReconfigureError turns the response's error text back into an error.
func (c *GRPCClient) mapReconfigureError(msg string) error {
	switch {
	case strings.HasPrefix(msg, respawnPrefix):
		return fmt.Errorf("%w: %s", ErrRespawn, strings.TrimPrefix(msg, respawnPrefix))
	case msg != "":
		return errors.New(msg)
	}
	return nil
}

func execResultFromPB(r *pb.ExecResult) ExecResult {
	if r == nil {
		return ExecResult{ExitCode: -1, Error: "hostops: empty result", ErrorCode: CodeIOError}
	}
	return ExecResult{
		OK: r.Ok, Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		ExitCode: int(r.ExitCode), Signal: r.Signal,
		StartedAt: fromNano(r.StartedUnixNano), FinishedAt: fromNano(r.FinishedUnixNano),
		TimedOut: r.TimedOut, Error: r.Error, ErrorCode: r.ErrorCode, Pid: int(r.Pid),
		OOMKilled: r.OomKilled, PidsLimitHit: r.PidsLimitHit, PeakMemoryBytes: r.PeakMemoryBytes, CPUTimeMicros: r.CpuTimeUs,
	}
}

func fileInfoFromPB(fi *pb.FileInfo) FileInfo {
	if fi == nil {
		return FileInfo{}
	}
	return FileInfo{Path: fi.Path, Size: fi.Size, Mode: fi.Mode, ModTime: fromNano(fi.ModUnixNano)}
}

func fromNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// String keeps a %v of the client from printing the connection.
func (c *GRPCClient) String() string { return fmt.Sprintf("hostops.GRPCClient(%p)", c) }
