package supervisor

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/shared/systemstate"
	"github.com/svcd/svcd/supervisor/openapi"
)

// maxReasonLen bounds requested_by and reason: they are labels, not documents.
const maxReasonLen = 1024

func (s *Server) systemRoutes() []Route {
	who := []Field{
		{Name: "requested_by", Type: "string", Note: "who asks (default \"api\")"},
		{Name: "reason", Type: "string", Note: "why; shown in state and status"},
	}
	set := func(mode string) HandlerFn {
		return func(w http.ResponseWriter, r *http.Request) error { return s.handleSetMode(w, r, mode) }
	}
	// The fixed-mode routes take mode too (handleSetMode refuses another).
	fixedMode := func(mode string) []Field {
		return append([]Field{{Name: "mode", Type: "string", Note: "optional; when given it must be " + mode}}, who...)
	}
	modeErrors := openapi.Codes{http.StatusUnprocessableEntity: {"missing_field", "invalid_mode", "invalid_field"}}
	return []Route{
		{Method: http.MethodGet, Path: "/v1/system/state", Name: "system.state", Area: "system", Scope: ScopeControl, Kind: KindRead,
			Summary:  "System state: automation mode (running, paused, draining), who set it, why and when, the leader, the queue summary and the active runs.",
			Response: systemstate.State{},
			Handle:   func(w http.ResponseWriter, r *http.Request) error { s.writeSystemState(w); return nil }},
		{Method: http.MethodPost, Path: "/v1/system/pause", Name: "system.pause", Area: "system", Scope: ScopeControl, Kind: KindWrite, Body: fixedMode(raftstore.ModePaused), Request: modeRequest{}, Response: systemstate.State{}, Errors: modeErrors,
			Summary: "Set the mode to paused: ordinary instructions are recorded, not run; scheduler ticks are skipped. Answers the latest system state.", Handle: set(raftstore.ModePaused)},
		{Method: http.MethodPost, Path: "/v1/system/resume", Name: "system.resume", Area: "system", Scope: ScopeControl, Kind: KindWrite, Body: fixedMode(raftstore.ModeRunning), Request: modeRequest{}, Response: systemstate.State{}, Errors: modeErrors,
			Summary: "Set the mode to running. Conversations that are manual or paused stay so. Answers the latest system state.", Handle: set(raftstore.ModeRunning)},
		{Method: http.MethodPost, Path: "/v1/system/drain", Name: "system.drain", Area: "system", Scope: ScopeControl, Kind: KindWrite, Body: fixedMode(raftstore.ModeDraining), Request: modeRequest{}, Response: systemstate.State{}, Errors: modeErrors,
			Summary: "Set the mode to draining: work in progress finishes, nothing new starts. Answers the latest system state.", Handle: set(raftstore.ModeDraining)},
		{Method: http.MethodPost, Path: "/v1/system/mode", Name: "system.mode", Area: "system", Scope: ScopeControl, Kind: KindWrite, Request: modeRequest{}, Response: systemstate.State{}, Errors: modeErrors,
			Body:    append([]Field{{Name: "mode", Type: "string", Required: true, Note: "running, paused or draining"}}, who...),
			Summary: "Set the mode by name (one route for scripts); same effect as pause, resume and drain.", Handle: set("")},
	}
}

// modeRequest is the body of the mode-setting routes.
type modeRequest struct {
	Mode        *string `json:"mode"`
	RequestedBy string  `json:"requested_by"`
	Reason      string  `json:"reason"`
}

// handleSetMode validates, commits the mode through raft and answers the
// latest system state. fixed is the route's mode, or "" to take it from body.
func (s *Server) handleSetMode(w http.ResponseWriter, r *http.Request, fixed string) error {
	var req modeRequest
	if err := s.decode(r, &req); err != nil {
		return err
	}
	mode := fixed
	if mode == "" {
		if req.Mode == nil {
			return api.Unprocessable("missing_field", "field \"mode\" is required: running, paused or draining")
		}
		mode = strings.TrimSpace(*req.Mode)
	} else if req.Mode != nil && *req.Mode != fixed {
		return api.Unprocessable("invalid_mode", "this route sets %q; the body asks for %q", fixed, *req.Mode)
	}
	if !raftstore.ValidMode(mode) {
		return api.Unprocessable("invalid_mode", "unknown mode %q: want running, paused or draining", mode)
	}
	for _, f := range [...]struct{ name, v string }{{"requested_by", req.RequestedBy}, {"reason", req.Reason}} {
		if len(f.v) > maxReasonLen || !utf8.ValidString(f.v) {
			return api.Unprocessable("invalid_field", "field %q must be valid UTF-8 of at most %d bytes", f.name, maxReasonLen)
		}
	}
	if req.RequestedBy == "" {
		req.RequestedBy = "api"
	}
	if _, err := s.SetMode(r.Context(), raftstore.SetSystemMode{Mode: mode, RequestedBy: req.RequestedBy, Reason: req.Reason}); err != nil {
		return err
	}
	s.writeSystemState(w)
	return nil
}

// SetMode commits a system mode change and logs who asked for it. Every
// surface that switches the mode (HTTP, WebSocket action_request,
// instructions) goes through here.
func (s *Server) SetMode(ctx context.Context, m raftstore.SetSystemMode) (raftstore.SystemState, error) {
	v, err := s.apply(ctx, raftstore.CmdSetSystemMode, m)
	if err != nil {
		return raftstore.SystemState{}, err
	}
	reqid.Logger(ctx, s.log).Info("system mode set", "mode", m.Mode, "requested_by", m.RequestedBy, "reason", m.Reason)
	for _, hook := range s.modeHooks {
		hook()
	}
	return v.(raftstore.SystemState), nil
}

// SystemState assembles the system state document from the FSM and raft.
func (s *Server) SystemState() systemstate.State {
	st, _ := s.systemState()
	return st
}

// systemState is SystemState with the version of the FSM state it was read
// from (the answer cache's key, statecache.go).
func (s *Server) systemState() (systemstate.State, uint64) {
	var st systemstate.State
	version := s.node.ReadVersioned(func(fs *raftstore.State) {
		st = systemstate.State{
			Mode:        fs.System.Mode,
			RequestedBy: fs.System.RequestedBy,
			Reason:      fs.System.Reason,
			Version:     fs.System.Version,
			ActiveRuns:  []systemstate.Run{},
		}
		if !fs.System.UpdatedAt.IsZero() {
			at := fs.System.UpdatedAt
			st.UpdatedAt = &at
		}
		// The queue and the active runs come from the durable records:
		// renewal jobs pending/running and tasks queued/running.
		for _, j := range fs.Jobs.ByID {
			switch j.Status {
			case raftstore.JobPending:
				st.Queue.Pending++
			case raftstore.JobRunning:
				st.Queue.Running++
				run := systemstate.Run{ID: j.ID, Kind: "renewal_job", Subject: j.LocalID}
				if j.StartedAt != nil {
					run.StartedAt = *j.StartedAt
				}
				st.ActiveRuns = append(st.ActiveRuns, run)
			}
		}
		for _, t := range fs.Tasks.ByID {
			switch t.Status {
			case raftstore.TaskQueued:
				st.Queue.Pending++
			case raftstore.TaskRunning:
				st.Queue.Running++
				st.ActiveRuns = append(st.ActiveRuns, systemstate.Run{ID: t.ID, Kind: t.Kind, Subject: t.Conversation, StartedAt: t.CreatedAt})
			}
		}
		sort.Slice(st.ActiveRuns, func(i, j int) bool { return st.ActiveRuns[i].StartedAt.Before(st.ActiveRuns[j].StartedAt) })
	})
	id, addr := s.node.Leader()
	st.Leader = systemstate.Leader{NodeID: id, Address: addr, Self: s.node.IsLeader()}
	return st, version
}
