package supervisor

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/tasks"
)

// controllerHeartbeat is how often each supervisor refreshes its own
// controller record.
const controllerHeartbeat = 5 * time.Second

// tasksSvc is the task and controller area, built on first use.
func (s *Server) tasksSvc() *tasks.Service {
	s.tasksOnce.Do(func() { s.tasks = tasks.New(bridgeHost{s}, s.log.Named("tasks")) })
	return s.tasks
}

// startTasks runs this supervisor's controller heartbeat until Close.
func (s *Server) startTasks() {
	if s.node.IsLeader() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if n, err := s.tasksSvc().Recover(rctx); err != nil {
			s.log.Warn("task recovery failed", "error", err)
		} else if n > 0 {
			s.log.Info("marked tasks left running as interrupted", "tasks", n)
		}
		rcancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := time.Now().UTC()
	go func() {
		defer close(done)
		s.tasksSvc().RunHeartbeats(ctx, controllerHeartbeat, func() (raftstore.Controller, bool) {
			if !s.node.IsLeader() {
				return raftstore.Controller{}, false
			}
			return raftstore.Controller{NodeID: s.cfg.NodeID, APIAddr: s.cfg.Listen, RaftAddr: s.cfg.RaftAddr,
				Role: s.node.Role().Role, Version: version.Get().Version, StartedAt: started}, true
		})
	}()
	s.onClose(func() error {
		cancel()
		<-done
		return nil
	})
}

func (s *Server) taskRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/v1/tasks", Name: "tasks.list", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Query:   []Field{{Name: "limit", Type: "integer", Default: 50, Note: "1-500"}},
			Summary: "Recent tasks (instruction batches, renewals), newest first, with their run, status and log size.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				limit := 50
				if v := r.URL.Query().Get("limit"); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil || n < 1 || n > raftstore.MaxFinishedTasks {
						return api.Unprocessable("invalid_limit", "limit must be an integer from 1 to %d", raftstore.MaxFinishedTasks)
					}
					limit = n
				}
				list := s.tasksSvc().List(limit)
				for i := range list {
					list[i].Logs = nil // the log is read per task
				}
				api.WriteOK(w, map[string]any{"tasks": list})
				return nil
			}},
		{Method: http.MethodGet, Path: "/v1/tasks/{task_id}", Name: "tasks.get", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Summary: "One task with its run and its log.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				t, err := s.taskOf(r)
				if err != nil {
					return err
				}
				api.WriteOK(w, t)
				return nil
			}},
		{Method: http.MethodGet, Path: "/v1/tasks/{task_id}/logs", Name: "tasks.logs", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Summary: fmt.Sprintf("A task's run log: at most %d lines of at most %d bytes; dropped_log_lines counts the rest.", raftstore.MaxRunLogLines, raftstore.MaxLogLineBytes),
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				t, err := s.taskOf(r)
				if err != nil {
					return err
				}
				api.WriteOK(w, map[string]any{"task_id": t.ID, "run_id": t.RunID, "logs": t.Logs, "dropped_log_lines": t.DroppedLogLines})
				return nil
			}},
		{Method: http.MethodGet, Path: "/v1/controllers", Name: "controllers.list", Area: "tasks", Scope: ScopeControl, Kind: KindRead,
			Summary: "Registered controllers (node id, API and raft address, role, version, last heartbeat) and the active leader hint.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				id, addr := s.node.Leader()
				api.WriteOK(w, map[string]any{"controllers": s.tasksSvc().Controllers(), "leader": map[string]string{"node_id": id, "raft_addr": addr}})
				return nil
			}},
	}
}

func (s *Server) taskOf(r *http.Request) (raftstore.Task, error) {
	id := mux.Vars(r)["task_id"]
	t, ok := s.tasksSvc().Get(id)
	if !ok {
		return raftstore.Task{}, api.NotFound("task_not_found", "no task %q (finished tasks beyond the newest %d are compacted)", clipForMsg(id), raftstore.MaxFinishedTasks)
	}
	return t, nil
}

func clipForMsg(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
