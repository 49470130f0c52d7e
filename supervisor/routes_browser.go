package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/keyrange"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/relayhttp"
	"github.com/svcd/svcd/supervisor/renewal"
)

func (s *Server) browserRoutes() []Route {
	ws := func(path, name string) Route {
		return Route{Method: http.MethodGet, Path: path, Name: name, Area: "browser", Scope: ScopeControl, Kind: KindWrite, Raw: true, NoLimit: true,
			Response: openapi.Raw{Status: http.StatusSwitchingProtocols, Description: "WebSocket upgrade; messages: docs/bridge-protocol.md"},
			// bridge.Guard: a proxied request, a peer or an Origin not allowed;
			// bridge.Hub.ServeWS: every unpaired place taken, or the daemon stopping.
			Errors: openapi.Codes{http.StatusServiceUnavailable: {"standby", "too_many_unpaired", "shutting_down"},
				http.StatusForbidden: {"proxied_request", "peer_not_allowed", "origin_not_allowed"}},
			Summary: "Browser plugin WebSocket (loopback or allowed 100.64.0.0/10 peers, no proxies, allowed Origin only). First message: hello with the client's credential, a one-time pairing code (svcctl browser pair), or the shared token where browser_pairing = \"token\". Protocol: docs/bridge-protocol.md.",
			Handle:  s.leaderOnly(s.browser.hub.ServeWS)}
	}
	compat := ws("/ws/browser-compat", "browser.ws_compat")
	compat.Summary = "Compatibility path of /ws/browser; same protocol and rules."
	actionBody := []Field{
		{Name: "action", Type: "string", Required: true, Note: strings.Join(bridgeproto.Actions, ", ")},
		{Name: "platform", Type: "string", Note: "platform_a or platform_b; required for tab and credential actions"},
		{Name: "clientId", Type: "string", Note: "target client; default the most recently active one (unknown: 409)"},
		{Name: "disconnectMs|disconnect_ms|delayMs|delay_ms", Type: "integer", Note: "ws_reconnect: disconnect time"},
		{Name: "repeatCount|repeat_count", Type: "integer", Note: "ws_reconnect: repeat count"},
		{Name: "repeatIntervalMs|repeat_interval_ms|intervalMs|interval_ms", Type: "integer", Note: "ws_reconnect: repeat interval"},
		{Name: "options", Type: "object", Note: "other action-specific options, passed to the plugin"},
	}
	requestBody := []Field{
		{Name: "platform", Type: "string", Required: true, Note: "platform_a, platform_b or platform_c"},
		{Name: "prompt", Type: "string", Note: "platform_a only, when path is omitted (completion compatibility mode)"},
		{Name: "path", Type: "string", Note: "required for platform_b and platform_c; absolute path on the platform host"},
		{Name: "method", Type: "string", Default: "GET, or POST with a body or prompt"},
		{Name: "responseMode", Type: "string", Default: "buffered", Note: "buffered or sse"},
		{Name: "requestId", Type: "string", Note: "generated when absent; returned; used by cancel"},
		{Name: "clientId", Type: "string", Note: "pin one client"},
		{Name: "headers", Type: "object", Note: "extra request headers, passed to the page, never stored"},
		{Name: "body", Type: "any", Note: "request body (JSON value)"},
		{Name: "timeoutMs", Type: "integer", Note: "wait for the answer (default browser_request_timeout_ms, at most 3600000)"},
	}
	// Both routes relay through the same engine (supervisor/relayhttp).
	relayErrors := openapi.Codes{
		http.StatusUnprocessableEntity: {"missing_field", "invalid_platform"},
		http.StatusServiceUnavailable:  {"relay_unavailable", "caller_gone", "no_browser_client", "client_gone"},
		http.StatusTooManyRequests:     {"relay_refused"},
		http.StatusConflict:            {"request_cancelled", "duplicate_request_id", "unknown_client", "no_credentials"},
		http.StatusBadGateway:          {"relay_failed", "response_too_large", "client_disconnected"},
		http.StatusGatewayTimeout:      {"relay_timeout"},
	}
	actionErrors := openapi.Codes{http.StatusUnprocessableEntity: {"missing_field", "invalid_action", "invalid_platform"},
		// bridge.Hub.Act and Pick
		http.StatusServiceUnavailable: {"no_browser_client", "client_gone"}, http.StatusConflict: {"unknown_client", "duplicate_request_id"},
		http.StatusGatewayTimeout: {"action_timeout", "action_cancelled"}}
	return []Route{
		ws("/ws/browser", "browser.ws"),
		compat,
		{Method: http.MethodGet, Path: "/v1/browser", Name: "browser.read", Area: "browser", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{
				{Name: "platform", Type: "string"}, {Name: "account", Type: "string"}, {Name: "browser", Type: "string"},
				{Name: "client_id", Type: "string"}, {Name: "host", Type: "string"}, {Name: "status", Type: "string", Note: "fresh, stale or lost"},
				{Name: "limit", Type: "integer", Default: bridge.DefaultPageLimit, Note: fmt.Sprintf("records and automation_conversations per page, 1 to %d (over: 422; not a number: 400)", bridge.MaxPageLimit)},
				{Name: "cursor", Type: "string", Note: "next_cursor of the previous page (422 invalid_cursor if it is not one)"},
			},
			Response: bridge.ReadModel{}, Errors: openapi.Codes{http.StatusUnprocessableEntity: {"invalid_platform", "invalid_status", "invalid_query", "invalid_cursor"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "Browser read model: records merging live connections and persisted records (view, status fresh/stale/lost), account, credential_fingerprint, endpoints, endpoint_metadata, timestamps, shell_runtime, last_action_result, automation_conversations, policy (thresholds, relay state per target). Paged: records in key order and automation_conversations most recently updated first, at most limit of each; policy.targets holds the targets in the page's range of record keys; next_cursor pages on (absent on the last page). clients, summary and pairing are whole on every page.",
			Handle:  s.handleBrowserRead},
		{Method: http.MethodPost, Path: "/v1/browser/actions", Name: "browser.actions", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Body: actionBody,
			Request: map[string]json.RawMessage{}, Response: bridge.ActionOutcome{}, Errors: actionErrors,
			Summary: "Send a management action to the plugin and wait for its action_result: accepted, completed, failed, reason, target, result, shell_runtime. 422 unknown action or platform, 409 unknown clientId, 503 no client, 504 no answer in time.",
			Handle:  s.handleBrowserAction("")},
		{Method: http.MethodPost, Path: "/v1/browser/request", Name: "browser.request", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite, Body: requestBody, NoLimit: false,
			Request: relayhttp.Request{}, Response: relayhttp.BufferedAnswer{}, Errors: relayErrors,
			Summary: "Relay one HTTP request through the user's browser page. buffered: status, safe headers, body. sse: events stream_open, stream_event (increasing seq), stream_end, stream_error. 503 no client, 409 no captured credentials (platform_a), 429 relay policy refused (retry_after_ms).",
			Handle:  s.browser.requests.Handle("")},
		{Method: http.MethodPost, Path: "/v1/browser/request/cancel", Name: "browser.request_cancel", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    []Field{{Name: "platform", Type: "string", Required: true}, {Name: "requestId", Type: "string", Required: true}},
			Request: cancelRequest{}, Response: cancelAnswer{},
			Errors:  openapi.Codes{http.StatusUnprocessableEntity: {"missing_field", "invalid_platform"}, http.StatusNotFound: {"unknown_request"}},
			Summary: "Cancel an in-flight relayed request or stream: request_cancel goes to the client that carries it. 404 for an unknown requestId.",
			Handle:  s.handleBrowserCancel},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/open", Name: "browser.platform_a.open", Area: "browser", Scope: ScopeControl, Kind: KindWrite,
			Request: map[string]json.RawMessage{}, Response: bridge.ActionOutcome{}, Errors: actionErrors,
			Summary: "Legacy: POST /v1/browser/actions with action tab_open, platform platform_a.", Handle: s.handleBrowserAction("tab_open")},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/reload", Name: "browser.platform_a.reload", Area: "browser", Scope: ScopeControl, Kind: KindWrite,
			Request: map[string]json.RawMessage{}, Response: bridge.ActionOutcome{}, Errors: actionErrors,
			Summary: "Legacy: POST /v1/browser/actions with action tab_reload, platform platform_a.", Handle: s.handleBrowserAction("tab_reload")},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/send", Name: "browser.platform_a.send", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    append([]Field{{Name: "platform", Type: "string", Note: "optional; when given it must be platform_a"}}, requestBody[1:]...),
			Request: relayhttp.Request{}, Response: relayhttp.BufferedAnswer{}, Errors: relayErrors,
			Summary: "Legacy: POST /v1/browser/request with platform platform_a.", Handle: s.browser.requests.Handle(bridgeproto.PlatformA)},
		{Method: http.MethodGet, Path: "/v1/browser/platform_a/current", Name: "browser.platform_a.current", Area: "browser", Scope: ScopeBusiness, Kind: KindRead,
			Response: currentAnswer{}, Errors: openapi.Codes{http.StatusServiceUnavailable: {"no_browser_client"}},
			Summary: "Legacy: the latest platform_a relay result held by this daemon (status, safe headers, body), or result null. 503 with no client.",
			Handle:  s.handleBrowserCurrent},
	}
}

var validStatuses = map[string]bool{"fresh": true, "stale": true, "lost": true}

func (s *Server) handleBrowserRead(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := bridge.Filter{Platform: q.Get("platform"), Account: q.Get("account"), Browser: q.Get("browser"), ClientID: q.Get("client_id"), Host: q.Get("host"), Status: q.Get("status")}
	if f.Platform != "" && !bridgeproto.ValidPlatform(f.Platform) {
		return api.Unprocessable("invalid_platform", "platform must be platform_a, platform_b or platform_c")
	}
	if f.Status != "" && !validStatuses[f.Status] {
		return api.Unprocessable("invalid_status", "status must be fresh, stale or lost")
	}
	limit, err := queryLimit(r, "limit", bridge.DefaultPageLimit, bridge.MaxPageLimit)
	if err != nil {
		return err
	}
	page := bridge.Page{Limit: limit}
	if c, given := q["cursor"]; given {
		cur, ok := bridge.ParseCursor(c[0], func(a string) bool { _, ok := renewal.ParseCursor(a); return ok })
		if !ok {
			return api.Unprocessable("invalid_cursor", "cursor must be the next_cursor of a previous page")
		}
		page.After = cur
	}
	m := s.browser.hub.ReadPageFrom(f, page, func(keys keyrange.Range) bridge.RelayInfo { return s.relayInfo(r.Context(), keys) })
	body, err := m.AppendJSON(api.OKBody(0), s.browser.records)
	if err != nil {
		return err
	}
	api.WriteOKBody(w, body)
	return nil
}

// relayInfo asks the relay for its policy, and the state and live counters
// of the targets in keys (a page's: not every target); a relay that is
// down shows as relay_available false, the read model still answers.
func (s *Server) relayInfo(ctx context.Context, keys keyrange.Range) bridge.RelayInfo {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := s.browser.relay.Status(ctx, keys)
	if err != nil {
		return bridge.RelayInfo{Error: err.Error(), Defaults: s.relayPolicy()}
	}
	live := map[string]bridge.RelayLive{}
	for k, v := range st.Live {
		live[k] = bridge.RelayLive{InFlight: v.InFlight, Waiting: v.Waiting}
	}
	targets := make(map[string]raftstore.RelayTarget, len(st.Targets))
	for k, v := range st.Targets {
		targets[k] = toStoreTarget(v)
	}
	return bridge.RelayInfo{Available: true, Defaults: st.Policy, Live: live, Targets: targets}
}

// cancelRequest is the body of POST /v1/browser/request/cancel.
type cancelRequest struct {
	Platform  string `json:"platform"`
	RequestID string `json:"requestId"`
}

func (s *Server) handleBrowserCancel(w http.ResponseWriter, r *http.Request) error {
	var q cancelRequest
	if err := s.decode(r, &q); err != nil {
		return err
	}
	switch {
	case q.Platform == "":
		return api.Unprocessable("missing_field", "field \"platform\" is required")
	case !bridgeproto.ValidPlatform(q.Platform):
		return api.Unprocessable("invalid_platform", "unknown platform %q", api.Clip(q.Platform))
	case q.RequestID == "":
		return api.Unprocessable("missing_field", "field \"requestId\" is required")
	}
	clientID, err := s.browser.hub.Cancel(q.Platform, q.RequestID)
	if err != nil {
		return err
	}
	api.WriteOK(w, cancelAnswer{Cancelled: true, ClientID: clientID, Platform: q.Platform, RequestID: q.RequestID})
	return nil
}

// cancelAnswer is POST /v1/browser/request/cancel's data. Fields in the
// order the map it replaced encoded them (byte-compatible answers).
type cancelAnswer struct {
	Cancelled bool   `json:"cancelled"`
	ClientID  string `json:"clientId"`
	Platform  string `json:"platform"`
	RequestID string `json:"requestId"`
}

// currentAnswer is GET /v1/browser/platform_a/current's data: the latest
// platform_a relay result (null before the first).
type currentAnswer struct {
	Platform string              `json:"platform"`
	Result   *bridge.RelayResult `json:"result"`
}

func (s *Server) handleBrowserCurrent(w http.ResponseWriter, r *http.Request) error {
	if s.browser.hub.Connected() == 0 {
		return api.Unavailable("no_browser_client", "no browser bridge client is connected")
	}
	api.WriteOK(w, currentAnswer{Platform: bridgeproto.PlatformA, Result: s.browser.hub.Latest()})
	return nil
}
