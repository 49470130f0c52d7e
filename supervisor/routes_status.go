package supervisor

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/bridge"
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
	return status.Assemble(status.Input{System: &st, Source: "local", Version: version.Version, StartedAt: s.started,
		Sandbox: s.sandboxLevels(), SandboxLevel: s.sandboxLevel(),
		Browser: s.browserStatus(), Workers: s.workerStatus(), Cluster: s.clusterStatus(),
		Convs: s.convStatus(), Tasks: s.taskStatus(), Now: time.Now()})
}

// sandboxLevel is the panel's line for the exec sandbox: its mode, what
// each layer is, and how many are missing (no paths; /v1/runtime with the
// token has the whole report).
func (s *Server) sandboxLevel() string {
	r := s.sandbox.Load()
	if r == nil {
		return ""
	}
	line := r.Mode + ": " + r.Summary()
	if n := len(r.Missing); n > 0 {
		line += "; " + status.Plural(n, "layer") + " missing"
	}
	return line
}

// browserStatus is the bridge's clients for the panel: who is connected,
// paired, with which scopes, on which platforms, last seen when.
func (s *Server) browserStatus() *status.Browser {
	if s.browser == nil || s.browser.hub == nil {
		return nil
	}
	m := s.browser.hub.ReadModel(bridge.Filter{}, bridge.RelayInfo{})
	platforms := map[string]map[string]bool{}
	for _, r := range m.Records {
		if r.Platform == "" {
			continue
		}
		if platforms[r.ClientID] == nil {
			platforms[r.ClientID] = map[string]bool{}
		}
		platforms[r.ClientID][r.Platform] = true
	}
	out := &status.Browser{PairingMode: m.Pairing.Mode, Connected: m.Summary.Connected, Clients: make([]status.Client, 0, len(m.Clients)),
		Refused: m.Pairing.Refused.Count, RefusedLast: m.Pairing.Refused.LastReason}
	for _, c := range m.Clients {
		names := make([]string, 0, len(platforms[c.ClientID]))
		for p := range platforms[c.ClientID] {
			names = append(names, p)
		}
		sort.Strings(names)
		scopes := c.Scopes
		if scopes == nil {
			scopes = []string{}
		}
		out.Clients = append(out.Clients, status.Client{ClientID: c.ClientID, Browser: c.Browser, Connected: c.Connected, Paired: c.Paired,
			Scopes: scopes, Platforms: names, LastSeenAt: c.LastSeenAt})
	}
	// Connected first, then the most recently seen.
	sort.SliceStable(out.Clients, func(i, j int) bool {
		a, b := out.Clients[i], out.Clients[j]
		if a.Connected != b.Connected {
			return a.Connected
		}
		if (a.LastSeenAt == nil) != (b.LastSeenAt == nil) {
			return a.LastSeenAt != nil
		}
		if a.LastSeenAt != nil && !a.LastSeenAt.Equal(*b.LastSeenAt) {
			return a.LastSeenAt.After(*b.LastSeenAt)
		}
		return a.ClientID < b.ClientID
	})
	return out
}

// clusterStatus is the member list for /v1/status and the panel (a lone
// node shows itself as leader). A standby's own row carries its lag.
func (s *Server) clusterStatus() []status.Member {
	members, err := s.node.Members()
	if err != nil {
		return nil
	}
	role := s.node.Role()
	out := make([]status.Member, 0, len(members))
	for _, m := range members {
		row := status.Member{NodeID: m.NodeID, Role: m.Role, APIAddr: m.APIAddr, Self: m.Self, LastContact: m.LastContact}
		if m.Self && m.Role != raftstore.RoleLeader {
			lag := uint64(0)
			if role.LastIndex > role.AppliedIdx {
				lag = role.LastIndex - role.AppliedIdx
			}
			row.LagEntries = &lag
		}
		out = append(out, row)
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
