package supervisor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/hostops"
)

// DefaultExecTimeoutMs is SPEC.md's timeoutMs default.
const DefaultExecTimeoutMs = 30000

// hostopsRoutes are SPEC.md's host operations. Auth is checked in wrap,
// before the body is read and before the worker is asked for anything.
func (s *Server) hostopsRoutes() []Route {
	// Every host operation can meet a worker that is down or busy restarting
	// (leaseError, workerCallError) and a path outside the allowed roots.
	workerErrors := openapi.Codes{
		http.StatusServiceUnavailable:  {"worker_unavailable", "worker_failed", "workers_disabled", "shutting_down", "worker_call_failed", "worker_crashed"},
		http.StatusForbidden:           {"path_not_allowed"},
		http.StatusUnprocessableEntity: {"missing_field"},
		// The caller left mid-call: the operation was cancelled (an answer
		// nobody reads, but counted and logged under this status).
		499: {"client_closed"},
	}
	h := func(path, name, kind, summary string, body []Field, fn HandlerFn) Route {
		return Route{Method: http.MethodPost, Path: path, Name: name, Area: "hostops", Scope: ScopeControl, Kind: kind, Auth: true, Local: true, Summary: summary, Body: body, Handle: fn,
			Errors: openapi.Codes{}.Add(workerErrors)}
	}
	write := h("/v1/files/write", "hostops.files.write", KindWrite,
		"Write a file atomically (temporary file, fsync, rename; an existing file keeps its mode). Outcome in data.ok.",
		[]Field{
			{Name: "path", Type: "string", Required: true, Note: "absolute, or relative to cwd"},
			{Name: "cwd", Type: "string", Note: "default: the daemon's working directory"},
			{Name: "content", Type: "string", Required: true, Note: fmt.Sprintf("at most %d bytes after decoding", s.cfg.FilesWriteCap)},
			{Name: "overwrite", Type: "boolean", Default: true, Note: "false: an existing file is left untouched and data.ok is false"},
			{Name: "createParents", Type: "boolean", Default: false, Note: "create missing folders"},
			{Name: "encoding", Type: "string", Default: hostops.EncodingUTF8, Note: "utf8 or base64 (content is base64 text)"},
		}, s.handleFilesWrite)
	write.MaxBody = s.filesWriteBodyCap()
	write.Request, write.Response = writeRequest{}, hostopsOutcome{Result: fileResult{}}
	write.Errors.Add(openapi.Codes{http.StatusRequestEntityTooLarge: {"content_too_large"}, http.StatusUnprocessableEntity: {"invalid_encoding", "invalid_base64"}})
	exec := h("/v1/exec", "hostops.exec", KindWrite,
		"Run a shell command (/bin/sh -c; plain words without the shell, with the shell's result: docs/hostops.md) in its own process group, stdin closed; data.result carries stdout, stderr, exitCode, signal, durationMs, startedAt, finishedAt, timedOut on every outcome.",
		[]Field{
			{Name: "command", Type: "string", Required: true},
			{Name: "cwd", Type: "string", Note: "default: the daemon's working directory"},
			{Name: "timeoutMs", Type: "integer", Default: DefaultExecTimeoutMs, Note: fmt.Sprintf("1 to %d; the whole process group is killed on timeout", s.execCfg().ExecTimeoutMaxMs)},
			{Name: "limits", Type: "object", Note: "sandbox cgroup limits for this command: {memoryBytes, pids, cpu}; each left out keeps exec_limits, each at most exec_limits_max; 0 is no limit"},
		}, s.handleExec)
	exec.Request, exec.Response = execRequest{}, hostopsOutcome{Result: execResult{}}
	exec.Errors.Add(openapi.Codes{http.StatusUnprocessableEntity: {"invalid_timeout", "invalid_limits"}, http.StatusTooManyRequests: {"exec_busy"}})
	read := h("/v1/files/read", "hostops.files.read", KindRead,
		"Read a file: content plus metadata (path, size, mode, modTime, encoding). Outcome in data.ok.",
		[]Field{
			{Name: "path", Type: "string", Required: true, Note: "absolute, or relative to cwd"},
			{Name: "cwd", Type: "string", Note: "default: the daemon's working directory"},
			{Name: "encoding", Type: "string", Default: hostops.EncodingUTF8, Note: fmt.Sprintf("utf8 (must be valid UTF-8) or base64; files over %d bytes are refused", s.cfg.FilesReadCap)},
		}, s.handleFilesRead)
	read.Request, read.Response = readRequest{}, hostopsOutcome{Result: fileResult{}}
	read.Errors.Add(openapi.Codes{http.StatusUnprocessableEntity: {"invalid_encoding"}})
	return []Route{exec, read, write}
}

// filesWriteBodyCap fits a request carrying content at the write cap: base64
// grows it by 4/3 and JSON escaping of ordinary text rarely by more, so twice
// the cap plus room for the other fields. It is never below the global cap.
func (s *Server) filesWriteBodyCap() int64 {
	n := 2*s.cfg.FilesWriteCap + 64<<10
	if n < s.cfg.MaxBodyBytes {
		n = s.cfg.MaxBodyBytes
	}
	return n
}

// hostopsOutcome is data for the three routes: the outcome and its payload.
type hostopsOutcome struct {
	OK     bool   `json:"ok"`
	Result any    `json:"result"`
	Error  string `json:"error,omitempty"`
	Code   string `json:"code,omitempty"`
}

// execResult is data.result of POST /v1/exec (SPEC.md's exact names).
type execResult struct {
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	ExitCode        int     `json:"exitCode"`
	Signal          *string `json:"signal"`
	DurationMs      int64   `json:"durationMs"`
	StartedAt       string  `json:"startedAt"`
	FinishedAt      string  `json:"finishedAt"`
	TimedOut        bool    `json:"timedOut"`
	StdoutTruncated bool    `json:"stdoutTruncated"`
	StderrTruncated bool    `json:"stderrTruncated"`
	StdoutBase64    string  `json:"stdoutBase64,omitempty"`
	StderrBase64    string  `json:"stderrBase64,omitempty"`
	Pid             int     `json:"pid,omitempty"`
	Error           string  `json:"error,omitempty"`
	ErrorCode       string  `json:"errorCode,omitempty"`
	// From the command's cgroup (the sandbox): absent where not known.
	OOMKilled       bool   `json:"oomKilled"`
	PidsLimitHit    bool   `json:"pidsLimitHit"`
	PeakMemoryBytes *int64 `json:"peakMemoryBytes,omitempty"`
	CPUTimeUs       *int64 `json:"cpuTimeUs,omitempty"`
}

type execRequest struct {
	Command   *string           `json:"command"`
	Cwd       string            `json:"cwd"`
	TimeoutMs *int64            `json:"timeoutMs"`
	Limits    *execLimitsFields `json:"limits"`
}

func (s *Server) handleExec(w http.ResponseWriter, r *http.Request) (err error) {
	var res hostops.ExecResult
	defer func() { s.hostopsMetrics.Done("exec", err, res.ErrorCode, res.StdoutTruncated || res.StderrTruncated) }()
	var req execRequest
	if err := s.decode(r, &req); err != nil {
		return err
	}
	if req.Command == nil || strings.TrimSpace(*req.Command) == "" {
		return api.Unprocessable("missing_field", "command is required and must not be blank")
	}
	timeout := int64(DefaultExecTimeoutMs)
	if req.TimeoutMs != nil {
		timeout = *req.TimeoutMs
		if timeout <= 0 {
			return api.Unprocessable("invalid_timeout", "timeoutMs must be a positive number of milliseconds, got %d", timeout)
		}
		if max := s.execCfg().ExecTimeoutMaxMs; timeout > max {
			return api.Unprocessable("invalid_timeout", "timeoutMs %d is over the maximum of %d (exec_timeout_max_ms)", timeout, max)
		}
	}
	limits, err := s.execLimits(req.Limits)
	if err != nil {
		return err
	}
	release, err := s.acquireExecSlot(w)
	if err != nil {
		return err
	}
	defer release()
	call := hostops.ExecRequest{Command: *req.Command, Cwd: req.Cwd, Timeout: time.Duration(timeout) * time.Millisecond, Limits: limits}
	err = workermgr.Call(r.Context(), s.workers, hostops.Name, func(h hostops.HostOps, l *workermgr.Lease) error {
		var started hostops.Started
		var err error
		res, err = h.Exec(r.Context(), call, func(st hostops.Started) { started = st })
		if err != nil {
			// The worker could not finish the call (it died, or the client
			// left). Its command must not outlive the call either way: its
			// whole cgroup goes (setsid and double forks included), and its
			// process group. When the client left and the worker lives, the
			// worker got the cancel and kills the command itself while the
			// command still holds its cgroup; a kill by path from here could
			// land after that, in a cgroup the worker already reuses for its
			// next command. Otherwise nobody else will: kill it here.
			if !errors.Is(err, hostops.ErrCancelSent) || !l.Alive() {
				started.Kill()
			}
			return s.workerCallError(r.Context(), l, err, started.Pid)
		}
		return nil
	})
	if err != nil {
		return leaseError(err)
	}
	if res.ErrorCode == hostops.CodeInvalidLimits {
		return api.Unprocessable("invalid_limits", "%s", res.Error)
	}
	if res.ErrorCode == hostops.CodePathNotAllowed {
		return api.NewError(http.StatusForbidden, "path_not_allowed", "%s", res.Error)
	}
	if s.log.IsInfo() { // skip building the arguments when nobody reads them
		reqid.Logger(r.Context(), s.log).Info("exec", "pid", res.Pid, "ok", res.OK, "exit_code", res.ExitCode,
			"signal", res.Signal, "timed_out", res.TimedOut, "duration_ms", res.FinishedAt.Sub(res.StartedAt).Milliseconds(), "error_code", res.ErrorCode)
	}
	api.WriteOK(w, hostopsOutcome{OK: res.OK, Result: toExecResult(res), Error: res.Error, Code: res.ErrorCode})
	return nil
}

// acquireExecSlot takes one of exec_max_concurrent places or answers 429 at
// once: queueing hundreds of commands behind each other only turns a burst
// into seconds of latency for everybody, and the caller can retry.
func (s *Server) acquireExecSlot(w http.ResponseWriter) (release func(), err error) {
	if s.execSlots == nil {
		return func() {}, nil
	}
	select {
	case s.execSlots <- struct{}{}:
		return func() { <-s.execSlots }, nil
	default:
		w.Header().Set("Retry-After", "1")
		return nil, api.NewError(http.StatusTooManyRequests, "exec_busy",
			"%d execs are already running (exec_max_concurrent); retry when one finishes", cap(s.execSlots)).
			WithDetails(map[string]any{"limit": cap(s.execSlots), "retry_after_ms": 1000})
	}
}

func toExecResult(res hostops.ExecResult) execResult {
	out := execResult{
		ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		StartedAt: apiTime(res.StartedAt), FinishedAt: apiTime(res.FinishedAt),
		DurationMs: res.FinishedAt.Sub(res.StartedAt).Milliseconds(),
		Pid:        res.Pid, Error: res.Error, ErrorCode: res.ErrorCode,
		OOMKilled: res.OOMKilled, PidsLimitHit: res.PidsLimitHit,
	}
	if res.PeakMemoryBytes >= 0 {
		v := res.PeakMemoryBytes
		out.PeakMemoryBytes = &v
	}
	if res.CPUTimeMicros >= 0 {
		v := res.CPUTimeMicros
		out.CPUTimeUs = &v
	}
	if res.Signal != "" {
		sig := res.Signal
		out.Signal = &sig
	}
	var lossy bool
	out.Stdout, lossy = hostops.OutputText(res.Stdout, res.StdoutTruncated)
	if lossy {
		out.StdoutBase64 = base64.StdEncoding.EncodeToString(res.Stdout)
	}
	out.Stderr, lossy = hostops.OutputText(res.Stderr, res.StderrTruncated)
	if lossy {
		out.StderrBase64 = base64.StdEncoding.EncodeToString(res.Stderr)
	}
	return out
}

// apiTime is RFC 3339 with milliseconds in UTC (DESIGN.md).
func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

type readRequest struct {
	Path     string `json:"path"`
	Cwd      string `json:"cwd"`
	Encoding string `json:"encoding"`
}

// fileResult is data.result of the two file routes.
type fileResult struct {
	Path      string `json:"path"`
	Content   string `json:"content,omitempty"`
	Encoding  string `json:"encoding,omitempty"`
	Size      int64  `json:"size"`
	Mode      string `json:"mode,omitempty"`
	ModTime   string `json:"modTime,omitempty"`
	Created   *bool  `json:"created,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"errorCode,omitempty"`
}

func fileResultOf(info hostops.FileInfo, errText, code string) fileResult {
	fr := fileResult{Path: info.Path, Size: info.Size, Error: errText, ErrorCode: code}
	if !info.ModTime.IsZero() {
		fr.Mode = fmt.Sprintf("%04o", unixMode(fs.FileMode(info.Mode)))
		fr.ModTime = apiTime(info.ModTime)
	}
	return fr
}

// unixMode turns an fs.FileMode's permission and special bits into the
// octal a person knows from chmod (04755 …).
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

func checkEncoding(enc string) (string, error) {
	switch enc {
	case "", hostops.EncodingUTF8, "utf-8":
		return hostops.EncodingUTF8, nil
	case hostops.EncodingBase64:
		return enc, nil
	}
	return "", api.Unprocessable("invalid_encoding", "encoding %q: want utf8 or base64", enc)
}

func (s *Server) handleFilesRead(w http.ResponseWriter, r *http.Request) (err error) {
	var res hostops.ReadResult
	defer func() { s.hostopsMetrics.Done("read", err, res.ErrorCode, false) }()
	var req readRequest
	if err := s.decode(r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return api.Unprocessable("missing_field", "path is required")
	}
	enc, err := checkEncoding(req.Encoding)
	if err != nil {
		return err
	}
	err = workermgr.Call(r.Context(), s.workers, hostops.Name, func(h hostops.HostOps, l *workermgr.Lease) error {
		var err error
		if res, err = h.ReadFile(r.Context(), hostops.ReadRequest{Path: req.Path, Cwd: req.Cwd, Encoding: enc}); err != nil {
			return s.workerCallError(r.Context(), l, err, 0)
		}
		return nil
	})
	if err != nil {
		return leaseError(err)
	}
	if res.ErrorCode == hostops.CodePathNotAllowed {
		return api.NewError(http.StatusForbidden, "path_not_allowed", "%s", res.Error)
	}
	fr := fileResultOf(res.Info, res.Error, res.ErrorCode)
	if res.OK {
		fr.Encoding = enc
		if enc == hostops.EncodingBase64 {
			fr.Content = base64.StdEncoding.EncodeToString(res.Content)
		} else {
			fr.Content = string(res.Content)
		}
	}
	reqid.Logger(r.Context(), s.log).Info("files.read", "path", res.Info.Path, "ok", res.OK, "size", res.Info.Size, "error_code", res.ErrorCode)
	api.WriteOK(w, hostopsOutcome{OK: res.OK, Result: fr, Error: res.Error, Code: res.ErrorCode})
	return nil
}

type writeRequest struct {
	Path          string  `json:"path"`
	Cwd           string  `json:"cwd"`
	Content       *string `json:"content"`
	Overwrite     *bool   `json:"overwrite"`
	CreateParents bool    `json:"createParents"`
	Encoding      string  `json:"encoding"`
}

func (s *Server) handleFilesWrite(w http.ResponseWriter, r *http.Request) (err error) {
	var res hostops.WriteResult
	defer func() { s.hostopsMetrics.Done("write", err, res.ErrorCode, false) }()
	var req writeRequest
	if err := api.DecodeJSON(r, &req, s.filesWriteBodyCap()); err != nil {
		return err
	}
	if req.Path == "" {
		return api.Unprocessable("missing_field", "path is required")
	}
	if req.Content == nil {
		return api.Unprocessable("missing_field", "content is required (an empty string writes an empty file)")
	}
	enc, err := checkEncoding(req.Encoding)
	if err != nil {
		return err
	}
	content := []byte(*req.Content)
	if enc == hostops.EncodingBase64 {
		if content, err = base64.StdEncoding.DecodeString(*req.Content); err != nil {
			return api.Unprocessable("invalid_base64", "content is not valid base64: %v", err)
		}
	}
	if int64(len(content)) > s.cfg.FilesWriteCap {
		return api.NewError(http.StatusRequestEntityTooLarge, "content_too_large", "content is %d bytes, over the write cap of %d bytes (files_write_cap_bytes)", len(content), s.cfg.FilesWriteCap)
	}
	overwrite := req.Overwrite == nil || *req.Overwrite
	err = workermgr.Call(r.Context(), s.workers, hostops.Name, func(h hostops.HostOps, l *workermgr.Lease) error {
		var err error
		res, err = h.WriteFile(r.Context(), hostops.WriteRequest{Path: req.Path, Cwd: req.Cwd, Content: content, Overwrite: overwrite, CreateParents: req.CreateParents})
		if err != nil {
			return s.workerCallError(r.Context(), l, err, 0)
		}
		return nil
	})
	if err != nil {
		return leaseError(err)
	}
	if res.ErrorCode == hostops.CodePathNotAllowed {
		return api.NewError(http.StatusForbidden, "path_not_allowed", "%s", res.Error)
	}
	fr := fileResultOf(res.Info, res.Error, res.ErrorCode)
	if res.OK {
		created := res.Created
		fr.Created = &created
	}
	reqid.Logger(r.Context(), s.log).Info("files.write", "path", res.Info.Path, "ok", res.OK, "bytes", len(content), "error_code", res.ErrorCode)
	api.WriteOK(w, hostopsOutcome{OK: res.OK, Result: fr, Error: res.Error, Code: res.ErrorCode})
	return nil
}

// workerCallError explains a call the worker did not finish.
func (s *Server) workerCallError(ctx context.Context, l *workermgr.Lease, err error, pgid int) error {
	if ctx.Err() != nil {
		return api.NewError(499, "client_closed", "the client closed the request; the operation was cancelled")
	}
	if exit, ok := l.Exited(500 * time.Millisecond); ok {
		reqid.Logger(ctx, s.log).Warn("worker died during a call", "worker", hostops.Name, "pid", exit.Pid, "exit", exit.Reason, "killed_pgid", pgid)
		return api.Unavailable("worker_crashed", "the %s worker (pid %d) exited during the call (%s); the call's processes were killed and the worker is being restarted; retry the request", hostops.Name, exit.Pid, exit.Reason).
			WithDetails(map[string]any{"worker": hostops.Name, "pid": exit.Pid, "retryable": true})
	}
	if errors.Is(err, hostops.ErrHopStuck) {
		s.restartStuckWorker(ctx, l.Pid())
		return api.Unavailable("worker_call_failed", "the %s worker (pid %d) stopped reading its exec connection and is being restarted; retry the request (%v)", hostops.Name, l.Pid(), err).
			WithDetails(map[string]any{"worker": hostops.Name, "pid": l.Pid(), "retryable": true})
	}
	return api.Unavailable("worker_call_failed", "the %s worker (pid %d) did not complete the call: %v", hostops.Name, l.Pid(), err).
		WithDetails(map[string]any{"worker": hostops.Name, "pid": l.Pid(), "retryable": true})
}

// restartStuckWorker replaces a hostops worker whose exec hop timed out a
// write (hostops.ErrHopStuck): its hop is closed, so every exec on it fails
// at once, and a worker that is only stopped would still answer health
// pings once it runs again. The rolling restart starts a new one; calls on
// the old one are failing already, so its drain is short.
func (s *Server) restartStuckWorker(ctx context.Context, pid int) {
	if !s.stuckRestart.CompareAndSwap(false, true) {
		return
	}
	reqid.Logger(ctx, s.log).Warn("worker stopped reading its exec hop; restarting it", "worker", hostops.Name, "pid", pid)
	go func() {
		defer s.stuckRestart.Store(false)
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.workers.Restart(rctx, hostops.Name); err != nil {
			s.log.Error("restart of a stuck worker failed", "worker", hostops.Name, "pid", pid, "error", err)
		}
	}()
}

// leaseError maps worker-manager failures onto API errors.
func leaseError(err error) error {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, workermgr.ErrFailed):
		return api.Unavailable("worker_failed", "%v", err)
	case errors.Is(err, workermgr.ErrUnavailable):
		return api.Unavailable("worker_unavailable", "%v", err)
	case errors.Is(err, workermgr.ErrNoWorkers):
		return api.Unavailable("workers_disabled", "this daemon runs no workers (worker_executable is empty)")
	case errors.Is(err, workermgr.ErrClosed):
		return api.Unavailable("shutting_down", "the daemon is shutting down")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return api.NewError(499, "client_closed", "the client closed the request")
	}
	return err
}

// hostopsLimits is the describe document's view of the host-operation caps.
func (s *Server) hostopsLimits() map[string]any {
	return map[string]any{
		"timeoutMs_default":      DefaultExecTimeoutMs,
		"timeoutMs_max":          s.execCfg().ExecTimeoutMaxMs,
		"exec_max_concurrent":    s.cfg.ExecMaxConcurrent,
		"exec_output_cap_bytes":  s.cfg.ExecOutputCap,
		"files_read_cap_bytes":   s.cfg.FilesReadCap,
		"files_write_cap_bytes":  s.cfg.FilesWriteCap,
		"files_write_body_cap":   s.filesWriteBodyCap(),
		"allowed_roots":          s.execCfg().HostopsRoots,
		"overwrite_default":      true,
		"create_parents_default": false,
		"encodings":              []string{hostops.EncodingUTF8, hostops.EncodingBase64},
	}
}

// hostopsNotes are the choices SPEC.md leaves open, stated for callers.
var hostopsNotes = []string{
	"exec runs /bin/sh -c in its own process group with stdin on /dev/null; timeout, client disconnect and the shell's exit kill the whole group",
	"data.result of exec always has stdout, stderr, exitCode (-1 when signalled), signal (null or e.g. SIGKILL), durationMs, startedAt, finishedAt, timedOut; stdoutTruncated/stderrTruncated flag the output cap; invalid UTF-8 is replaced and the exact bytes added as stdoutBase64/stderrBase64",
	"when data.ok is false, data.error and data.code say why (codes such as non_zero_exit, timed_out, not_found, is_directory, not_regular_file, too_large, not_utf8, exists, parent_not_found)",
	"writes are atomic (temporary file, fsync, rename) and keep an existing file's mode",
	"a 503 worker_crashed means the hostops worker died during the call; retry it",
}
