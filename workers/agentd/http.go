package agentd

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/guard"
)

// Route is one agentd HTTP route, listed by /describe.
type Route struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Write   bool   `json:"write"`
	Summary string `json:"summary"`
}

// Routes is agentd's route table. There is deliberately no one-shot run or
// exec route: work happens in sessions' turns.
var Routes = []Route{
	{"GET", "/healthz", false, "liveness"},
	{"GET", "/describe", false, "self-description"},
	{"GET", "/v1/agentd/status", false, "daemon, child, sessions and recent events"},
	{"GET", "/v1/agentd/sessions", false, "list sessions"},
	{"GET", "/v1/agentd/sessions/{session_id}", false, "one session with its lastTurn* read-back and recentEvents"},
	{"POST", "/v1/agentd/sessions", true, "create a session {cwd, purpose}, or resume one {sessionId}"},
	{"POST", "/v1/agentd/turn", true, "start a turn {sessionId, input, waitMs?}; answers once accepted, or when finished within waitMs"},
	{"GET", "/v1/agentd/events", false, "WebSocket: events out; {type: subscribe|unsubscribe|interrupt, sessionId} in (interrupt needs the token)"},
}

// Handler is agentd's HTTP API behind the same Host and cross-site write
// guards as the main daemon (shared/guard, imported, not copied).
func (d *Daemon) Handler() http.Handler {
	r := mux.NewRouter()
	handle := func(method, path string, write bool, h func(http.ResponseWriter, *http.Request) error) {
		r.HandleFunc(path, func(w http.ResponseWriter, req *http.Request) {
			// Reads need the token too when the main daemon's level does
			// (require_token = "all"); /healthz is a probe at every level.
			if write || (d.cfg.TokenForReads && path != "/healthz") {
				if err := d.checkToken(req); err != nil {
					api.WriteError(w, err)
					return
				}
			}
			if err := h(w, req); err != nil {
				api.WriteError(w, err)
			}
		}).Methods(method)
	}
	handle("GET", "/healthz", false, func(w http.ResponseWriter, _ *http.Request) error {
		api.WriteOK(w, map[string]any{"status": "ok"})
		return nil
	})
	handle("GET", "/describe", false, func(w http.ResponseWriter, _ *http.Request) error {
		api.WriteJSON(w, http.StatusOK, d.describe())
		return nil
	})
	handle("GET", "/v1/agentd/status", false, func(w http.ResponseWriter, _ *http.Request) error {
		api.WriteOK(w, d.Status())
		return nil
	})
	handle("GET", "/v1/agentd/sessions", false, func(w http.ResponseWriter, _ *http.Request) error {
		api.WriteOK(w, map[string]any{"sessions": d.Sessions()})
		return nil
	})
	handle("GET", "/v1/agentd/sessions/{session_id}", false, func(w http.ResponseWriter, req *http.Request) error {
		s, err := d.Session(mux.Vars(req)["session_id"])
		if err != nil {
			return err
		}
		api.WriteOK(w, map[string]any{"session": s})
		return nil
	})
	handle("POST", "/v1/agentd/sessions", true, func(w http.ResponseWriter, req *http.Request) error {
		var body CreateRequest
		if err := api.DecodeJSON(req, &body, 64<<10); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(req.Context(), 60*time.Second)
		defer cancel()
		s, resumed, err := d.Create(ctx, body)
		if err != nil {
			return err
		}
		api.WriteOK(w, map[string]any{"session": s, "resumed": resumed})
		return nil
	})
	handle("POST", "/v1/agentd/turn", true, func(w http.ResponseWriter, req *http.Request) error {
		var body TurnRequest
		if err := api.DecodeJSON(req, &body, 1<<20); err != nil {
			return err
		}
		s, err := d.Turn(req.Context(), body)
		if err != nil {
			return err
		}
		api.WriteOK(w, map[string]any{"turn": map[string]any{"id": s.LastTurnID, "status": s.LastTurnStatus}, "session": s})
		return nil
	})
	r.HandleFunc("/v1/agentd/events", d.serveEvents).Methods("GET")
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NotFound("not_found", "no agentd route %s %s; see GET /describe", req.Method, req.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NewError(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", req.Method, req.URL.Path))
	})
	g := guard.New(d.cfg.Listen, d.cfg.AllowedHosts, nil)
	return d.withProof(g.Hosts(g.Writes(r)))
}

func (d *Daemon) checkToken(r *http.Request) error {
	if err := guard.Bearer(r, d.cfg.Token); err != nil {
		if e, ok := err.(*api.Error); ok && e.Status == http.StatusUnauthorized {
			e.Message += " (the main daemon's /v1/agent proxy adds it)"
		}
		return err
	}
	return nil
}

func (d *Daemon) describe() map[string]any {
	d.mu.Lock()
	child := d.childSt
	d.mu.Unlock()
	base := "http://" + d.cfg.Listen
	return map[string]any{
		"ok": true, "name": "agentd", "surface": "agent-daemon",
		"description":  "svcd's agent daemon: owns agent sessions and drives a Codex app-server child over JSON-RPC on stdio",
		"mode":         "app-server",
		"base_url":     base,
		"event_stream": "ws://" + d.cfg.Listen + "/v1/agentd/events",
		"routes":       Routes,
		"capabilities": map[string]any{"sessions": true, "resume": true, "turns": true, "interrupt": true,
			"wait": true, "approvalPolicy": d.cfg.ApprovalPolicy, "child": child},
		"notes": []string{
			"A turn answers once Codex accepted it; progress is on the event stream, the result in lastTurn*; pass waitMs to wait (bounded) for the final text.",
			"Writes need Authorization: Bearer <SVC_SHARED_TOKEN>; the main daemon's /v1/agent proxy adds it.",
			"No one-shot run or exec route exists.",
		},
	}
}

var upgrader = websocket.Upgrader{
	// The Host guard already ran; a browser page must also not read our
	// events, so a present Origin must be our own.
	CheckOrigin: func(r *http.Request) bool {
		o := r.Header.Get("Origin")
		return o == "" || o == "http://"+r.Host
	},
}

type wsIn struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
}

func (d *Daemon) serveEvents(w http.ResponseWriter, r *http.Request) {
	authed := d.checkToken(r) == nil
	if !authed && d.cfg.TokenForReads {
		api.WriteError(w, d.checkToken(r))
		return
	}
	// The upgrade answer is written by the upgrader, not through w: carry
	// withProof's answer over.
	var answer http.Header
	if proof := w.Header().Get(ProofHeader); proof != "" {
		answer = http.Header{ProofHeader: {proof}}
	}
	conn, err := upgrader.Upgrade(w, r, answer)
	if err != nil {
		return
	}
	defer conn.Close()
	sub := d.hub.subscribe()
	defer d.hub.unsubscribe(sub)
	out := make(chan any, 16)
	go func() {
		defer close(out)
		for {
			var m wsIn
			if err := conn.ReadJSON(&m); err != nil {
				return
			}
			switch m.Type {
			case "subscribe", "unsubscribe":
				sub.set(m.SessionID, m.Type == "subscribe")
				out <- map[string]any{"type": "agentd/ack", "for": m.Type, "sessionId": m.SessionID}
			case "interrupt":
				if !authed {
					out <- api.ErrorBody{Error: api.ErrorField{Code: "unauthorized", Message: "interrupt needs the shared token on the WebSocket upgrade"}}
					continue
				}
				ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
				err := d.Interrupt(ctx, m.SessionID)
				cancel()
				if err != nil {
					e := api.AsError(err)
					out <- api.ErrorBody{Error: api.ErrorField{Code: e.Code, Message: e.Message}}
					continue
				}
				out <- map[string]any{"type": "agentd/ack", "for": "interrupt", "sessionId": m.SessionID}
			default:
				out <- api.ErrorBody{Error: api.ErrorField{Code: "unknown_message", Message: "send {type: subscribe|unsubscribe|interrupt, sessionId}"}}
			}
		}
	}()
	for {
		select {
		case e, ok := <-sub.ch:
			if !ok {
				return
			}
			if conn.WriteJSON(e) != nil {
				return
			}
		case m, ok := <-out:
			if !ok {
				return
			}
			if conn.WriteJSON(m) != nil {
				return
			}
		}
	}
}

// Serve listens on cfg.Listen until ctx ends.
func (d *Daemon) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", d.cfg.Listen)
	if err != nil {
		return err
	}
	return d.ServeListener(ctx, ln)
}

// ServeListener serves on ln until ctx ends.
func (d *Daemon) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}
