package supervisor

import (
	"fmt"
	"net/http"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/status"
)

func (s *Server) statusRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/v1/status", Name: "status.json", Area: "status", Scope: ScopeControl, Kind: KindRead,
			Response: status.Snapshot{}, Errors: openapi.Codes{http.StatusServiceUnavailable: {"daemon_unreachable"}},
			Summary: "Narrow JSON status snapshot (mode, who and why, leader, queue, active runs).",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				status.WriteJSON(w, s.statusSnapshot())
				return nil
			}},
		{Method: http.MethodGet, Path: "/v1/status/ui", Name: "status.ui", Area: "status", Scope: ScopeControl, Kind: KindRead, Raw: true,
			Response: openapi.Raw{ContentType: "text/html", Description: "the status panel"},
			Summary:  "HTML status panel for a person; refreshes itself every few seconds.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				status.WritePanel(w, s.statusSnapshot())
				return nil
			}},
	}
}

// statusSnapshot assembles the status from local state, with the same code
// the status wrapper uses on what it fetches.
func (s *Server) statusSnapshot() status.Snapshot {
	st := s.SystemState()
	return status.Assemble(status.Input{System: &st, Source: "local", Workers: s.workerStatus(), Cluster: s.clusterStatus(),
		Convs: s.convStatus(), Tasks: s.taskStatus(), Sandbox: s.sandboxLevels(), Now: time.Now()})
}

// clusterStatus is the member list for /v1/status and the panel; a lone
// node (no peers) shows none.
func (s *Server) clusterStatus() []status.Member {
	if !s.node.HasPeers() {
		return nil
	}
	members, err := s.node.Members()
	if err != nil {
		return nil
	}
	out := make([]status.Member, 0, len(members))
	for _, m := range members {
		out = append(out, status.Member{NodeID: m.NodeID, Role: m.Role, APIAddr: m.APIAddr, Self: m.Self})
	}
	return out
}

// convStatus is the conversations for the panel (the 20 most recent).
func (s *Server) convStatus() []status.Conversation {
	if s.convs == nil {
		return nil
	}
	var out []status.Conversation
	for i, c := range s.convs.List() {
		if i == 20 {
			break
		}
		out = append(out, status.Conversation{ID: c.LocalID, AutomationStatus: c.AutomationStatus, ExecutionState: c.ExecutionState, PauseReason: c.PauseReason,
			ClientLoop: describeClientLoop(c.ClientLoop)})
	}
	return out
}

// taskStatus is the 10 most recent tasks for the panel.
func (s *Server) taskStatus() []status.Task {
	if s.tasks == nil {
		return nil
	}
	var out []status.Task
	recent, _ := s.tasks.List("", 10, "")
	for _, t := range recent {
		out = append(out, status.Task{ID: t.ID, Kind: t.Kind, Status: t.Status})
	}
	return out
}

// describeClientLoop is the status line of a plugin's instruction loop.
func describeClientLoop(l *raftstore.ClientLoop) string {
	if l == nil {
		return ""
	}
	out := l.State
	if l.Reason != "" {
		out += ": " + l.Reason
	}
	if l.MaxRounds > 0 {
		out += fmt.Sprintf(" (%d/%d)", l.Rounds, l.MaxRounds)
	}
	return out
}
