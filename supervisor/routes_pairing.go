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
	"github.com/svcd/svcd/supervisor/openapi"
)

// pairingRoutes are pairing by one-time code and the paired clients
// (issue 25 §1; docs/bridge-protocol.md "Pairing"). Every write needs the
// shared token; a bridge credential is never accepted by any route.
func (s *Server) pairingRoutes() []Route {
	notPaired := openapi.Codes{http.StatusNotFound: {"client_not_paired"}}
	return []Route{
		{Method: http.MethodPost, Path: "/v1/browser/pairings", Name: "browser.pair", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body: []Field{
				{Name: "scopes", Type: "array", Note: "strings: extra scopes for the client that redeems the code: host-ops (bridge is always held)"},
				{Name: "ttl", Type: "string", Default: "10m", Note: "how long the code stays valid (Go duration, at most 24h)"},
			},
			Request: pairingCreate{}, Response: pairingIssued{},
			Errors:  openapi.Codes{http.StatusUnprocessableEntity: {"invalid_ttl", "invalid_scope"}, http.StatusTooManyRequests: {"too_many_pairing_codes"}},
			Summary: "Issue a single-use pairing code for the browser extension's options page. Answers code (shown once, stored only hashed), expires_at, scopes and ws_url; 429 too_many_pairing_codes while 16 unexpired codes wait (retry_after_ms). At hello the plugin exchanges it for a per-client bridge credential.",
			Handle:  s.handlePairingCreate},
		{Method: http.MethodGet, Path: "/v1/browser/clients", Name: "browser.clients", Area: "browser", Scope: ScopeControl, Kind: KindRead,
			Response: pairingClients{},
			Summary:  "Browser clients with pairing: paired (holds a credential), connected, auth (token or credential), scopes, last seen; pairing mode, pending codes and refused hellos (count, last reason).",
			Handle:   s.handlePairingClients},
		{Method: http.MethodPost, Path: "/v1/browser/clients/{client_id}/revoke", Name: "browser.revoke", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Request: openapi.NoBody{}, Response: pairingRevoked{}, Errors: notPaired,
			Summary: "Remove the client's bridge credential (client_id: the clientId the plugin sent in hello); its live connection closes at once with 4401. 404 client_not_paired.",
			Handle:  s.handlePairingRevoke},
		{Method: http.MethodPost, Path: "/v1/browser/clients/{client_id}/scopes", Name: "browser.scopes", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body: []Field{
				{Name: "scope", Type: "string", Required: true, Note: "host-ops"},
				{Name: "grant", Type: "boolean", Required: true, Note: "true grants, false takes it back"}},
			Request: scopeChange{}, Response: pairingScopes{},
			Errors:  notPaired.Add(openapi.Codes{http.StatusUnprocessableEntity: {"missing_field", "invalid_scope"}}),
			Summary: "Grant or take back a code-paired client's host-ops scope: with it, instruction blocks its conversations report may run host operations. Takes effect at the next batch.",
			Handle:  s.handlePairingScope},
	}
}

// pairingIssued is POST /v1/browser/pairings' answer.
type pairingIssued struct {
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expires_at"`
	Scopes    []string  `json:"scopes"`
	WSURL     string    `json:"ws_url"`
	Hint      string    `json:"hint"`
}

// pairingClient is one row of GET /v1/browser/clients.
type pairingClient struct {
	ClientID   string     `json:"client_id"`
	Browser    string     `json:"browser"`
	Paired     bool       `json:"paired"`
	Connected  bool       `json:"connected"`
	Auth       string     `json:"auth,omitempty"`
	Scopes     []string   `json:"scopes"`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	Remote     string     `json:"remote,omitempty"`
}

// pairingClients is GET /v1/browser/clients' answer.
type pairingClients struct {
	Clients []pairingClient `json:"clients"`
	Pairing any             `json:"pairing"`
}

type pairingRevoked struct {
	ClientID string `json:"client_id"`
	Revoked  bool   `json:"revoked"`
}

type pairingScopes struct {
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
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
	api.WriteOK(w, pairingIssued{
		Code: issued.Code, ExpiresAt: issued.ExpiresAt, Scopes: issued.Scopes,
		WSURL: "ws://" + pairingWSHost(s.cfg.Listen, r.Host) + "/ws/browser",
		Hint:  "enter the code in the extension's options page (Pairing code) within its lifetime; it works once",
	})
	return nil
}

func (s *Server) handlePairingClients(w http.ResponseWriter, r *http.Request) error {
	m := s.browser.hub.ReadModel(bridge.Filter{}, bridge.RelayInfo{})
	sort.Slice(m.Clients, func(i, j int) bool { return m.Clients[i].ClientID < m.Clients[j].ClientID })
	rows := make([]pairingClient, 0, len(m.Clients))
	for _, c := range m.Clients {
		rows = append(rows, pairingClient{ClientID: c.ClientID, Browser: c.Browser, Paired: c.Paired, Connected: c.Connected, Auth: c.Auth, Scopes: c.Scopes, LastSeenAt: c.LastSeenAt, Remote: c.Remote})
	}
	api.WriteOK(w, pairingClients{Clients: rows, Pairing: m.Pairing})
	return nil
}

func (s *Server) handlePairingRevoke(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["client_id"]
	if err := s.browser.hub.Revoke(r.Context(), id); err != nil {
		return err
	}
	api.WriteOK(w, pairingRevoked{ClientID: id, Revoked: true})
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
	api.WriteOK(w, pairingScopes{ClientID: cl.ClientID, Scopes: cl.Scopes})
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
	// The message's connection has just linked the conversation, so the
	// report goes back to the plugin that holds it: it may be typed.
	c := instructions.Caller{Host: selfHost(s.cfg.Listen), RemoteAddr: "127.0.0.1:0", ClientID: clientID, MayInject: true}
	if s.browser.hub.HasScope(clientID, raftstore.ScopeHostOps) && s.token != "" {
		c.Authorization = "Bearer " + s.token
	} else {
		c.HostOpsDenied = fmt.Sprintf("browser client %s holds scope %s only; host operations from its conversations need scope %s (svcctl browser grant %s %s)",
			clientID, raftstore.ScopeBridge, raftstore.ScopeHostOps, clientID, raftstore.ScopeHostOps)
	}
	return s.instructionsSetup().svc.Ingest(ctx, m, c)
}
