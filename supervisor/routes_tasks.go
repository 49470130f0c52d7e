package supervisor

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/tasks"
)

func (s *Server) taskRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/v1/tasks", Name: "tasks.list", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{
				{Name: "status", Type: "string", Note: "queued, running, succeeded, failed, canceled or skipped"},
				{Name: "limit", Type: "integer", Default: tasks.DefaultLimit, Note: "1 to 500 (over: 422; not a number: 400)"},
				{Name: "cursor", Type: "string", Note: "next_cursor of the previous page (422 invalid_cursor if it is not one)"},
			},
			Response: map[string]any{}, Errors: openapi.Codes{http.StatusUnprocessableEntity: {"invalid_query", "invalid_cursor"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "Tasks newest first (start order): task_id, kind (instruction_batch …), status, source, local_conversation_id, summary, timestamps, run_ids; next_cursor pages on (absent on the last page). Finished tasks beyond the newest 1000 are compacted away.",
			Handle:  s.handleTaskList},
		{Method: http.MethodGet, Path: "/v1/tasks/{task_id}", Name: "tasks.get", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Response: raftstore.Task{}, Errors: openapi.Codes{http.StatusNotFound: {"unknown_task"}},
			Summary: "One task with its runs (run_id, status, started_at, finished_at, dropped_lines). 404 unknown_task.",
			Handle:  s.handleTaskGet},
		{Method: http.MethodGet, Path: "/v1/tasks/{task_id}/logs", Name: "tasks.logs", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{
				{Name: "limit", Type: "integer", Default: tasks.DefaultLogLimit, Note: "last N lines per run, 1 to 200"},
				{Name: "run_id", Type: "string", Note: "one run (404 unknown_run)"},
			},
			Response: taskLogsAnswer{}, Errors: openapi.Codes{http.StatusNotFound: {"unknown_task", "unknown_run"}, http.StatusUnprocessableEntity: {"invalid_query"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "Log lines of a task's runs (each run keeps its last 200 lines; dropped_lines counts the rest).",
			Handle:  s.handleTaskLogs},
		{Method: http.MethodGet, Path: "/v1/controllers", Name: "controllers", Area: "tasks", Scope: ScopeBusiness, Kind: KindRead,
			Query:    []Field{{Name: "limit", Type: "integer", Default: 50, Note: "1 to 100"}},
			Response: controllersAnswer{}, Errors: openapi.Codes{http.StatusServiceUnavailable: {"store_unavailable"}, http.StatusUnprocessableEntity: {"invalid_query"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "The daemon nodes: node_id, api_addr, raft_addr, kind, role, version, last heartbeat (seen_at), with the active leader hint.",
			Handle:  s.handleControllers},
	}
}

func (s *Server) handleTaskList(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, "limit", tasks.DefaultLimit, tasks.MaxLimit)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && !raftstore.ValidTaskStatus(status) {
		return api.Unprocessable("invalid_query", "status must be queued, running, succeeded, failed, canceled or skipped")
	}
	cursor := r.URL.Query().Get("cursor")
	if _, given := r.URL.Query()["cursor"]; given && !tasks.ValidCursor(cursor) {
		return api.Unprocessable("invalid_cursor", "cursor must be the next_cursor of a previous page (a task_id such as task-42)")
	}
	list, next := s.tasks.List(status, limit, cursor)
	return s.writeTaskList(w, list, limit, next)
}

func (s *Server) handleTaskGet(w http.ResponseWriter, r *http.Request) error {
	t, ok := s.tasks.Get(mux.Vars(r)["task_id"])
	if !ok {
		return api.NotFound("unknown_task", "no task with that id; GET /v1/tasks lists them")
	}
	api.WriteOK(w, t)
	return nil
}

func (s *Server) handleTaskLogs(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, "limit", tasks.DefaultLogLimit, tasks.MaxLogLimit)
	if err != nil {
		return err
	}
	id, run := mux.Vars(r)["task_id"], r.URL.Query().Get("run_id")
	if _, ok := s.tasks.Get(id); !ok {
		return api.NotFound("unknown_task", "no task with that id; GET /v1/tasks lists them")
	}
	logs, ok := s.tasks.Logs(id, run, limit)
	if !ok {
		return api.NotFound("unknown_run", "task %s has no run with that id", id)
	}
	api.WriteOK(w, taskLogsAnswer{Runs: logs, TaskID: id})
	return nil
}

// taskLogsAnswer is GET /v1/tasks/{task_id}/logs's data. Fields here and
// below in the order the maps they replaced encoded them.
type taskLogsAnswer struct {
	Runs   []tasks.RunLogs `json:"runs"`
	TaskID string          `json:"task_id"`
}

// controllersAnswer is GET /v1/controllers's data.
type controllersAnswer struct {
	Controllers []controller     `json:"controllers"`
	Leader      controllerLeader `json:"leader"`
}

// controller is one raft server and the version it reported when it joined.
type controller struct {
	raftstore.Server
	Version string `json:"version,omitempty"`
}

type controllerLeader struct {
	APIAddr string `json:"api_addr"`
	NodeID  string `json:"node_id"`
	Term    uint64 `json:"term"`
}

func (s *Server) handleControllers(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, "limit", 50, 100)
	if err != nil {
		return err
	}
	members, err := s.node.Members()
	if err != nil {
		return api.Unavailable("store_unavailable", "raft configuration unreadable: %v", err)
	}
	meta := map[string]raftstore.ClusterMember{}
	s.node.Read(func(st *raftstore.State) {
		for id, m := range st.Cluster.Members {
			meta[id] = *m
		}
	})
	out := []controller{}
	for _, m := range members {
		if len(out) == limit {
			break
		}
		out = append(out, controller{Server: m, Version: meta[m.NodeID].Version})
	}
	v := s.roleView()
	api.WriteOK(w, controllersAnswer{Controllers: out, Leader: controllerLeader{NodeID: v.LeaderID, APIAddr: v.LeaderAPI, Term: v.Term}})
	return nil
}
