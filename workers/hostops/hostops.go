// Package hostops is the host-operations worker: run a shell command, read a
// file, write a file. The supervisor calls it through go-plugin over gRPC, so
// a command that wedges or crashes it never takes the listener down.
//
// Following go-plugin's gRPC example, this package holds the Go interface
// (HostOps), both gRPC halves (grpc_client.go, grpc_server.go), the plugin
// glue (plugin.go) and the implementation (Local).
package hostops

import (
	"context"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// Name is the worker's name in the plugin map, the worker manager and
// `svcd worker NAME`.
const Name = "hostops"

// HostOps is what the hostops worker offers. Operation failures (non-zero
// exit, missing file …) are reported inside the results with OK false; a
// returned error means the call itself failed (worker gone, transport).
type HostOps interface {
	// Exec runs req.Command under /bin/sh -c. started, when not nil, tells
	// the caller the child's pid (which is also its process group id) and
	// its cgroup: the local implementation and gRPC call it once the child
	// exists; the exec hop only before it returns an error (the worker died,
	// ctx ended), which is when the caller kills what it names.
	Exec(ctx context.Context, req ExecRequest, started func(Started)) (ExecResult, error)
	ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error)
	WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error)
	// Reconfigure applies cfg to operations that start after it returns
	// (SIGHUP, reconfigure.go); running commands keep what they started
	// with. An error means nothing changed; ErrRespawn, that only a new
	// worker process can take cfg.
	Reconfigure(ctx context.Context, cfg Config) error
}

// Error codes carried in results. They are stable: clients may branch on them.
const (
	CodeCwdNotFound        = "cwd_not_found"
	CodeCwdNotDirectory    = "cwd_not_directory"
	CodeSpawnFailed        = "spawn_failed"
	CodeNonZeroExit        = "non_zero_exit"
	CodeSignaled           = "signaled"
	CodeTimedOut           = "timed_out"
	CodeCanceled           = "canceled"
	CodePathNotAllowed     = "path_not_allowed"
	CodeNotFound           = "not_found"
	CodeIsDirectory        = "is_directory"
	CodeNotRegular         = "not_regular_file"
	CodeTooLarge           = "too_large"
	CodeNotUTF8            = "not_utf8"
	CodeExists             = "exists"
	CodeParentNotFound     = "parent_not_found"
	CodeParentNotDirectory = "parent_not_directory"
	CodeIOError            = "io_error"
	CodeOOMKilled          = "oom_killed"     // the memory limit's OOM killer ended it
	CodeInvalidLimits      = "invalid_limits" // over exec_limits_max
)

// ExecRequest is one command.
type ExecRequest struct {
	Command string
	Cwd     string
	Timeout time.Duration
	Limits  *sandbox.Limits // nil: the configured defaults
}

// Started is what the supervisor needs to kill a command should the worker
// die mid-call: its process group and its cgroup ("" without one).
type Started struct {
	Pid    int
	Cgroup string
}

// Kill ends the command's processes: the whole cgroup where there is one
// (setsid and double forks included), and the process group.
func (s Started) Kill() {
	sandbox.KillCgroup(s.Cgroup)
	KillGroup(s.Pid)
}

// ExecResult is a command's outcome. Every field is meaningful on every
// outcome: ExitCode is -1 when the process did not exit on its own.
type ExecResult struct {
	OK              bool
	Stdout          []byte
	Stderr          []byte
	StdoutTruncated bool
	StderrTruncated bool
	ExitCode        int
	Signal          string
	StartedAt       time.Time
	FinishedAt      time.Time
	TimedOut        bool
	Error           string
	ErrorCode       string
	Pid             int
	// From the command's cgroup (sandbox); -1: not known.
	OOMKilled       bool
	PidsLimitHit    bool
	PeakMemoryBytes int64
	CPUTimeMicros   int64
}

// ReadRequest reads one file. Encoding is "utf8" (checked) or "base64".
type ReadRequest struct {
	Path     string
	Cwd      string
	Encoding string
}

// FileInfo is the metadata returned with reads and writes.
type FileInfo struct {
	Path    string
	Size    int64
	Mode    uint32 // permission and special bits (fs.FileMode)
	ModTime time.Time
}

// ReadResult is a read's outcome; Content is the raw bytes.
type ReadResult struct {
	OK        bool
	Error     string
	ErrorCode string
	Info      FileInfo
	Content   []byte
}

// WriteRequest writes Content to Path atomically.
type WriteRequest struct {
	Path          string
	Cwd           string
	Content       []byte
	Overwrite     bool
	CreateParents bool
}

// WriteResult is a write's outcome.
type WriteResult struct {
	OK        bool
	Error     string
	ErrorCode string
	Info      FileInfo
	Created   bool
}
