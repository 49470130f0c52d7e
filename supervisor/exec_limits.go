package supervisor

import (
	"math"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// execLimitsFields is POST /v1/exec's "limits": per-command cgroup limits.
// A field left out keeps exec_limits' value; 0 is "no limit".
type execLimitsFields struct {
	MemoryBytes *int64   `json:"memoryBytes"`
	Pids        *int64   `json:"pids"`
	CPU         *float64 `json:"cpu"`
}

// execLimits checks a request's limits against exec_limits_max; nil when
// the request has none (the worker applies the defaults).
func (s *Server) execLimits(f *execLimitsFields) (*sandbox.Limits, error) {
	if f == nil {
		return nil, nil
	}
	def, max, err := s.execCfg().SandboxLimits()
	if err != nil {
		return nil, err
	}
	l := def
	if f.MemoryBytes != nil {
		if *f.MemoryBytes < 0 {
			return nil, api.Unprocessable("invalid_limits", "limits.memoryBytes must be 0 (no limit) or a positive number of bytes, got %d", *f.MemoryBytes)
		}
		l.MemoryBytes = *f.MemoryBytes
	}
	if f.Pids != nil {
		if *f.Pids < 0 {
			return nil, api.Unprocessable("invalid_limits", "limits.pids must be 0 (no limit) or a positive count, got %d", *f.Pids)
		}
		l.Pids = *f.Pids
	}
	if f.CPU != nil {
		if *f.CPU < 0 || math.IsNaN(*f.CPU) || math.IsInf(*f.CPU, 0) || *f.CPU > 4096 {
			return nil, api.Unprocessable("invalid_limits", "limits.cpu must be 0 (no cap) or a positive number of CPUs, got %g", *f.CPU)
		}
		l.CPU = *f.CPU
	}
	if err := l.Within(max); err != nil {
		return nil, api.Unprocessable("invalid_limits", "limits: %v", err)
	}
	return &l, nil
}
