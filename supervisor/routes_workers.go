package supervisor

import (
	"errors"
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/workermgr"
)

// workerRoutes are the worker manager's read and restart routes.
func (s *Server) workerRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/v1/workers", Name: "workers.list", Area: "workers", Scope: ScopeControl, Kind: KindDiagnostic, Response: workersAnswer{},
			Summary: "Worker processes: name, pid, state (starting, running, restarting, failed, stopped), start time, restart count, last exit (code or signal, time).",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				api.WriteOK(w, workersAnswer{Workers: s.workerList()})
				return nil
			}},
		{Method: http.MethodPost, Path: "/v1/workers/restart", Name: "workers.restart", Area: "workers", Scope: ScopeControl, Kind: KindWrite, Auth: true, Local: true,
			Request: restartRequest{}, Response: restartAnswer{},
			Errors:  openapi.Codes{http.StatusServiceUnavailable: {"workers_disabled", "shutting_down", "restart_failed"}, http.StatusUnprocessableEntity: {"missing_field", "unknown_worker"}},
			Summary: "Rolling restart: start a new instance, wait until healthy, switch new calls to it, let calls on the old one finish (bounded), stop it. Also revives a failed worker.",
			Body:    []Field{{Name: "worker", Type: "string", Required: true, Note: "a worker name from GET /v1/workers, or all"}},
			Handle:  s.handleWorkersRestart},
	}
}

// restartRequest is the body of POST /v1/workers/restart.
type restartRequest struct {
	Worker string `json:"worker"`
}

func (s *Server) handleWorkersRestart(w http.ResponseWriter, r *http.Request) error {
	var req restartRequest
	if err := s.decode(r, &req); err != nil {
		return err
	}
	if s.workers == nil {
		return api.Unavailable("workers_disabled", "this daemon runs no workers")
	}
	names := s.workers.Names()
	var targets []string
	switch req.Worker {
	case "":
		return api.Unprocessable("missing_field", "worker is required: one of %s, or all", strings.Join(names, ", "))
	case "all":
		targets = names
	default:
		if _, ok := s.workers.Get(req.Worker); !ok {
			return api.Unprocessable("unknown_worker", "no worker %q; known: %s, or all", req.Worker, strings.Join(names, ", "))
		}
		targets = []string{req.Worker}
	}
	// One at a time: a rolling restart of all never leaves two workers
	// switching at once.
	var done []workermgr.Info
	for _, name := range targets {
		info, err := s.workers.Restart(r.Context(), name)
		if err != nil {
			if errors.Is(err, workermgr.ErrClosed) {
				return api.Unavailable("shutting_down", "the daemon is shutting down")
			}
			return api.Unavailable("restart_failed", "rolling restart of %s failed; the previous instance (if any) keeps serving: %v", name, err).
				WithDetails(map[string]any{"worker": name, "restarted": done})
		}
		reqid.Logger(r.Context(), s.log).Info("worker restarted on request", "worker", name, "pid", info.Pid)
		done = append(done, info)
	}
	api.WriteOK(w, restartAnswer{Restarted: done})
	return nil
}

// workersAnswer is GET /v1/workers's data.
type workersAnswer struct {
	Workers []workermgr.Info `json:"workers"`
}

// restartAnswer is POST /v1/workers/restart's data: the instances now
// serving, in restart order.
type restartAnswer struct {
	Restarted []workermgr.Info `json:"restarted"`
}
