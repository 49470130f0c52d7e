package hostops

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/workers/hostops/sandbox"
	"github.com/svcd/svcd/workers/pluginkit"
)

// HopNotesOffEnv set makes the worker put Started frames on the hop's
// stream instead of its notes (benchmarks only: what the notes save).
const HopNotesOffEnv = "SVCD_EXEC_HOP_NOTES_OFF"

// serveHop answers exec calls on the worker's hop (pluginkit.TakeHop) until
// the connection ends. Each call runs in its own goroutine through impl,
// the same (metered) HostOps the gRPC server calls, so one code path runs
// the command and counts it. When the connection ends (the supervisor is
// gone) every call's context is cancelled, which kills its command, as a
// gRPC stream's end does.
func serveHop(hop *pluginkit.Hop, impl HostOps, maxMsg int, log hclog.Logger) {
	conn := hop.Conn
	s := &hopServer{conn: conn, notes: hop.Notes, impl: impl, log: log, calls: map[uint32]context.CancelFunc{}}
	defer hop.Close()
	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	r := bufio.NewReader(conn)
	var scratch []byte
	for {
		var f hopFrame
		var err error
		f, scratch, err = readHopFrame(r, maxMsg, scratch)
		if err != nil {
			if ctx.Err() == nil {
				log.Debug("exec hop closed", "error", err)
			}
			return
		}
		switch f.kind {
		case hopExec:
			id, reqBytes, err := splitHopExecPayload(f.payload)
			if err != nil {
				log.Warn("exec hop: dropping a bad call", "error", err)
				return
			}
			var req pb.ExecRequest
			if err := proto.Unmarshal(reqBytes, &req); err != nil {
				log.Warn("exec hop: dropping a bad call", "error", err)
				return
			}
			callCtx, cancel := context.WithCancel(ctx)
			if reqid.Valid(id) {
				callCtx = reqid.With(callCtx, id)
			}
			s.mu.Lock()
			s.calls[f.id] = cancel
			s.mu.Unlock()
			go s.exec(callCtx, cancel, f.id, &req)
		case hopCancel:
			s.mu.Lock()
			cancel := s.calls[f.id]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		default:
			log.Warn("exec hop: unexpected frame from the supervisor", "kind", f.kind)
			return
		}
	}
}

type hopServer struct {
	conn  net.Conn
	notes int // -1: none
	impl  HostOps
	log   hclog.Logger

	wmu sync.Mutex // one frame per Write, whole

	mu    sync.Mutex
	calls map[uint32]context.CancelFunc
}

func (s *hopServer) exec(ctx context.Context, cancel context.CancelFunc, id uint32, req *pb.ExecRequest) {
	defer func() {
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
		cancel()
	}()
	start := time.Now()
	call := ExecRequest{Command: req.Command, Cwd: req.Cwd, Timeout: time.Duration(req.TimeoutMs) * time.Millisecond}
	if req.HasLimits {
		call.Limits = &sandbox.Limits{MemoryBytes: req.MemoryBytes, Pids: req.Pids, CPU: req.Cpu}
	}
	res, err := s.impl.Exec(ctx, call, func(st Started) {
		// Before the command can outlive a worker crash, the supervisor's
		// socket holds what kills it. A failed write means it is gone; the
		// read loop then ends and cancels this call, which kills the command.
		s.started(id, &pb.ExecStarted{Pid: int32(st.Pid), Pgid: int32(st.Pid), Cgroup: st.Cgroup})
	})
	if err != nil {
		res = ExecResult{ExitCode: -1, ErrorCode: CodeIOError, Error: err.Error(), PeakMemoryBytes: -1, CPUTimeMicros: -1}
	}
	s.send(hopResult, id, execResultToPB(res))
	if rid := reqid.From(ctx); rid != "" && s.log.IsDebug() {
		s.log.Debug("hop call", reqid.LogKey, rid, "method", "exec", "duration_ms", time.Since(start).Milliseconds())
	}
}

// started puts the frame on the notes, where it wakes nobody; when they are
// full (the supervisor drains them now and then) or missing, on the stream.
func (s *hopServer) started(id uint32, m *pb.ExecStarted) {
	if s.notes >= 0 {
		payload, err := proto.Marshal(m)
		if err == nil && unix.Sendto(s.notes, appendHopFrame(make([]byte, 0, hopHeader+len(payload)), hopStarted, id, payload), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil) == nil {
			return
		}
	}
	s.send(hopStarted, id, m)
}

func (s *hopServer) send(kind byte, id uint32, m proto.Message) {
	payload, err := proto.Marshal(m)
	if err != nil {
		s.log.Error("exec hop: encode", "error", err)
		return
	}
	buf := appendHopFrame(make([]byte, 0, hopHeader+len(payload)), kind, id, payload)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.conn.Write(buf)
}
