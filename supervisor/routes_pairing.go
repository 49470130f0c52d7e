package supervisor

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/supervisor/instructions"
)

// pairingRoutes are pairing by one-time code and the paired clients
// (issue 25 §1; docs/bridge-protocol.md "Pairing"). Every write needs the
// shared token; a bridge credential is never accepted by any route.
func (s *Server) pairingRoutes() []Route {
	client := []Field{{Name: "client_id", Type: "string", Required: true, Note: "path: the clientId the plugin sent in hello"}}
	return []Route{
		{Method: http.MethodPost, Path: "/v1/browser/pairings", Name: "browser.pair", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body: []Field{
				{Name: "scopes", Type: "string[]", Note: "extra scopes for the client that redeems the code: host-ops (bridge is always held)"},
				{Name: "ttl", Type: "string", Default: "10m", Note: "how long the code stays valid (Go duration, at most 24h)"},
			},
			Summary: "Issue a single-use pairing code for the browser extension's options page. Answers code (shown once, stored only hashed), expires_at, scopes and ws_url. At hello the plugin exchanges it for a per-client bridge credential.",
			Handle:  s.handlePairingCreate},
		{Method: http.MethodGet, Path: "/v1/browser/clients", Name: "browser.clients", Area: "browser", Scope: ScopeControl, Kind: KindRead,
			Summary: "Browser clients with pairing: paired (holds a credential), connected, auth (token or credential), scopes, last seen; pairing mode, pending codes and refused hellos (count, last reason).",
			Handle:  s.handlePairingClients},
		{Method: http.MethodPost, Path: "/v1/browser/clients/{client_id}/revoke", Name: "browser.revoke", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true, Body: client,
			Summary: "Remove the client's bridge credential; its live connection closes at once with 4401. 404 client_not_paired.",
			Handle:  s.handlePairingRevoke},
		{Method: http.MethodPost, Path: "/v1/browser/clients/{client_id}/scopes", Name: "browser.scopes", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body: append(client,
				Field{Name: "scope", Type: "string", Required: true, Note: "host-ops"},
				Field{Name: "grant", Type: "boolean", Required: true, Note: "true grants, false takes it back"}),
			Summary: "Grant or take back a code-paired client's host-ops scope: with it, instruction blocks its conversations report may run host operations. Takes effect at the next batch.",
			Handle:  s.handlePairingScope},
	}
}

type pairingCreate struct {
	Scopes []string `json:"scopes"`
	TTL    string   `json:"ttl"`
}

func (s *Server) handlePairingCreate(w http.ResponseWriter, r *http.Request) error {
	var q pairingCreate
	if r.ContentLength != 0 {
		if err := s.decode(r, &q); err != nil {
			return err
		}
	}
	var ttl time.Duration
	if q.TTL != "" {
		d, err := time.ParseDuration(q.TTL)
		if err != nil || d <= 0 {
			return api.Unprocessable("invalid_ttl", "ttl must be a positive Go duration such as 10m")
		}
		ttl = d
	}
	issued, err := s.browser.hub.IssueCode(r.Context(), q.Scopes, ttl, "api")
	if err != nil {
		return err
	}
	s.log.Info("browser pairing code issued", "scopes", issued.Scopes, "expires_at", issued.ExpiresAt) // never the code
	api.WriteOK(w, map[string]any{
		"code": issued.Code, "expires_at": issued.ExpiresAt, "scopes": issued.Scopes,
		"ws_url": "ws://" + s.cfg.Listen + "/ws/browser",
		"hint":   "enter the code in the extension's options page (Pairing code) within its lifetime; it works once",
	})
	return nil
}

func (s *Server) handlePairingClients(w http.ResponseWriter, r *http.Request) error {
	m := s.browser.hub.ReadModel(bridge.Filter{}, bridge.RelayInfo{})
	sort.Slice(m.Clients, func(i, j int) bool { return m.Clients[i].ClientID < m.Clients[j].ClientID })
	type row struct {
		ClientID   string     `json:"client_id"`
		Browser    string     `json:"browser"`
		Paired     bool       `json:"paired"`
		Connected  bool       `json:"connected"`
		Auth       string     `json:"auth,omitempty"`
		Scopes     []string   `json:"scopes"`
		LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
		Remote     string     `json:"remote,omitempty"`
	}
	rows := make([]row, 0, len(m.Clients))
	for _, c := range m.Clients {
		rows = append(rows, row{ClientID: c.ClientID, Browser: c.Browser, Paired: c.Paired, Connected: c.Connected, Auth: c.Auth, Scopes: c.Scopes, LastSeenAt: c.LastSeenAt, Remote: c.Remote})
	}
	api.WriteOK(w, map[string]any{"clients": rows, "pairing": m.Pairing})
	return nil
}

func (s *Server) handlePairingRevoke(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["client_id"]
	if err := s.browser.hub.Revoke(r.Context(), id); err != nil {
		return err
	}
	api.WriteOK(w, map[string]any{"client_id": id, "revoked": true})
	return nil
}

type scopeChange struct {
	Scope string `json:"scope"`
	Grant *bool  `json:"grant"`
}

func (s *Server) handlePairingScope(w http.ResponseWriter, r *http.Request) error {
	var q scopeChange
	if err := s.decode(r, &q); err != nil {
		return err
	}
	if q.Scope == "" || q.Grant == nil {
		return api.Unprocessable("missing_field", "fields \"scope\" and \"grant\" are required")
	}
	cl, err := s.browser.hub.SetScope(r.Context(), mux.Vars(r)["client_id"], q.Scope, *q.Grant)
	if err != nil {
		return err
	}
	api.WriteOK(w, map[string]any{"client_id": cl.ClientID, "scopes": cl.Scopes})
	return nil
}

// tokenPairingScopes: a plugin paired with the shared token itself has
// host-ops (the behaviour before codes); a separate browser_pairing_token
// grants the bridge only.
func (s *Server) tokenPairingScopes() []string {
	if s.cfg.BrowserPairingToken == "" || s.cfg.BrowserPairingToken == s.token {
		return []string{raftstore.ScopeBridge, raftstore.ScopeHostOps}
	}
	return []string{raftstore.ScopeBridge}
}

// ingestFromClient runs a conversation_message's blocks with what its
// client's scopes allow: host-ops carries the shared token; without it the
// batch runs with no token and host operations fail with a scope error.
func (s *Server) ingestFromClient(ctx context.Context, clientID string, m instructions.Message) (instructions.IngestResult, error) {
	c := instructions.Caller{Host: s.cfg.Listen, RemoteAddr: "127.0.0.1:0", ClientID: clientID}
	if s.browser.hub.HasScope(clientID, raftstore.ScopeHostOps) && s.token != "" {
		c.Authorization = "Bearer " + s.token
	} else {
		c.HostOpsDenied = fmt.Sprintf("browser client %s holds scope %s only; host operations from its conversations need scope %s (svcctl browser grant %s %s)",
			clientID, raftstore.ScopeBridge, raftstore.ScopeHostOps, clientID, raftstore.ScopeHostOps)
	}
	return s.instructionsSetup().svc.Ingest(ctx, m, c)
}
