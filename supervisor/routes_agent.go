package supervisor

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/agentproxy"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/agentd"
)

// agentRoutes are /v1/agent/*, forwarded to agentd (docs/agentd.md). There is
// no run or exec route: agent work happens in sessions' turns. Local: agentd
// runs on this host, so a standby does not forward them to the leader.
func (s *Server) agentRoutes() []Route {
	addr, secret := s.agentd()
	p := agentproxy.New(addr, s.token, secret)
	paths := []string{"GET /v1/agent", "GET /v1/agent/sessions", "GET /v1/agent/sessions/{session_id}",
		"POST /v1/agent/sessions", "POST /v1/agent/turn", "GET /v1/agent/events"}
	fwd := func(method, path string) HandlerFn {
		return func(w http.ResponseWriter, r *http.Request) error { return p.Forward(w, r, method, path) }
	}
	// Every agent route is forwarded to agentd (agentproxy).
	agentErrors := func() openapi.Codes { return openapi.Codes{http.StatusServiceUnavailable: {"agent_unavailable"}} }
	// What needs the agent child (a Codex app-server) meets it down too.
	childErrors := func() openapi.Codes {
		return agentErrors().Add(openapi.Codes{http.StatusServiceUnavailable: {"agent_child_unavailable"}})
	}
	return []Route{
		{Method: "GET", Path: "/v1/agent", Name: "agent.status", Area: "agent", Scope: ScopeBusiness, Kind: KindRead, Local: true,
			Response: agentproxy.Summary{}, Errors: agentErrors(),
			Summary: "agent proxy status: agentd's daemon and child state, session summaries, available routes (503 agent_unavailable when agentd is down)",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				sum, err := p.Summary(r.Context(), paths)
				if err != nil {
					return err
				}
				api.WriteOK(w, sum)
				return nil
			}},
		{Method: "GET", Path: "/v1/agent/sessions", Name: "agent.sessions", Area: "agent", Scope: ScopeBusiness, Kind: KindRead, Local: true,
			Response: map[string]any{}, Errors: agentErrors(),
			Summary: "list agent sessions", Handle: fwd("GET", "/v1/agentd/sessions")},
		{Method: "GET", Path: "/v1/agent/sessions/{session_id}", Name: "agent.session", Area: "agent", Scope: ScopeBusiness, Kind: KindRead, Local: true,
			Response: map[string]any{}, Errors: agentErrors().Add(openapi.Codes{http.StatusNotFound: {"unknown_session"}}),
			Summary: "one agent session with lastTurn* and recentEvents",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				// mux hands the id decoded: escape it again, or an id holding
				// %3F would reach agentd as a query on another path.
				return p.Forward(w, r, "GET", "/v1/agentd/sessions/"+url.PathEscape(mux.Vars(r)["session_id"]))
			}},
		{Method: "POST", Path: "/v1/agent/sessions", Name: "agent.create", Area: "agent", Scope: ScopeBusiness, Kind: KindWrite, Local: true, Auth: true,
			Request: agentd.CreateRequest{}, Response: map[string]any{}, Errors: childErrors(),
			Summary: "create an agent session, or resume one by sessionId",
			Body: []Field{{Name: "cwd", Type: "string", Note: "required when creating"}, {Name: "purpose", Type: "string"},
				{Name: "sessionId", Type: "string", Note: "resume this session"}},
			Handle: fwd("POST", "/v1/agentd/sessions")},
		{Method: "POST", Path: "/v1/agent/turn", Name: "agent.turn", Area: "agent", Scope: ScopeBusiness, Kind: KindWrite, Local: true, Auth: true,
			Request: agentd.TurnRequest{}, Response: map[string]any{}, Errors: childErrors().Add(openapi.Codes{http.StatusNotFound: {"unknown_session"}}),
			Summary: "start a turn; answers once accepted (progress on agentd's event stream, result in lastTurn*), or when finished within waitMs",
			Body: []Field{{Name: "sessionId", Type: "string", Required: true}, {Name: "input", Type: "string", Required: true},
				{Name: "waitMs", Type: "integer", Note: "wait up to this long for the final text (bounded by agentd)"}},
			Handle: fwd("POST", "/v1/agentd/turn")},
		// agentd's event WebSocket as server-sent events, so a client needs
		// one origin and the shared token (agentproxy/events.go).
		{Method: "GET", Path: "/v1/agent/events", Name: "agent.events", Area: "agent", Scope: ScopeBusiness, Kind: KindRead, Local: true, Auth: true,
			Raw: true, NoLimit: true,
			Response: openapi.Raw{ContentType: agentproxy.EventsContentType,
				Description: "server-sent events: one `data:` line per agentd event (JSON: type, sessionId, turnId, delta, message, at), flushed as it happens; the last is `event: end` with {reason: agentd_gone, error: {code: agent_unavailable, message}} when agentd stops or restarts"},
			Errors:  agentErrors(),
			Query:   []Field{{Name: "sessionId", Type: "string", Note: "only this session's events (and the ones of no session)"}},
			Summary: "agentd's event stream through the main daemon (token required): turn progress, deltas, approvals, child start/exit; ends with an end event when agentd goes away (503 agent_unavailable when it is down). svcctl agent watch.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				return p.Events(w, r, r.URL.Query().Get("sessionId"))
			}},
	}
}

// agentdSpecs is the agentd worker when agentd_spawn is set.
func (s *Server) agentdSpecs() []workermgr.Spec {
	if !s.cfg.AgentdSpawn {
		return nil
	}
	addr, secret := s.agentd()
	enc, err := agentd.EncodeConfig(agentd.Config{
		Listen: addr, DataDir: filepath.Join(s.cfg.DataDir, "agentd"), Command: strings.Fields(s.cfg.AgentdCommand),
		CodexHome: s.cfg.AgentdCodexHome, ApprovalPolicy: s.cfg.AgentdApprovalPolicy, Token: s.token,
		TokenForReads: s.cfg.RequireToken == config.RequireTokenAll, ProxySecret: secret,
		AllowedHosts: s.cfg.AllowedHosts,
	})
	if err != nil {
		s.log.Error("agentd config not encodable; agentd worker not started", "error", err)
		return nil
	}
	return []workermgr.Spec{{Name: agentd.Name, Plugin: &agentd.Plugin{},
		Env: []string{agentd.ConfigEnv + "=" + enc, "SVCD_WORKER_LOG_LEVEL=" + s.cfg.LogLevel}, MaxMsg: 4 << 20}}
}
