package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/workers/relay"
)

func (s *Server) browserRoutes() []Route {
	ws := func(path, name string) Route {
		return Route{Method: http.MethodGet, Path: path, Name: name, Area: "browser", Scope: ScopeControl, Kind: KindWrite, Raw: true, NoLimit: true,
			Summary: "Browser plugin WebSocket (loopback or allowed 100.64.0.0/10 peers, no proxies, allowed Origin only). First message: hello with the pairing token. Protocol: docs/bridge-protocol.md.",
			Handle:  s.browser.hub.ServeWS}
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
		{Name: "timeoutMs", Type: "integer", Note: "wait for the answer (default browser_request_timeout_ms)"},
	}
	return []Route{
		ws("/ws/browser", "browser.ws"),
		compat,
		{Method: http.MethodGet, Path: "/v1/browser", Name: "browser.read", Area: "browser", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{
				{Name: "platform", Type: "string"}, {Name: "account", Type: "string"}, {Name: "browser", Type: "string"},
				{Name: "client_id", Type: "string"}, {Name: "host", Type: "string"}, {Name: "status", Type: "string", Note: "fresh, stale or lost"},
			},
			Summary: "Browser read model: records merging live connections and persisted records (view, status fresh/stale/lost), account, credential_fingerprint, endpoints, endpoint_metadata, timestamps, shell_runtime, last_action_result, automation_conversations, policy (thresholds, relay state per target).",
			Handle:  s.handleBrowserRead},
		{Method: http.MethodPost, Path: "/v1/browser/actions", Name: "browser.actions", Area: "browser", Scope: ScopeControl, Kind: KindWrite, Body: actionBody,
			Summary: "Send a management action to the plugin and wait for its action_result: accepted, completed, failed, reason, target, result, shell_runtime. 422 unknown action or platform, 409 unknown clientId, 503 no client, 504 no answer in time.",
			Handle:  s.handleBrowserAction("")},
		{Method: http.MethodPost, Path: "/v1/browser/request", Name: "browser.request", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite, Body: requestBody, NoLimit: false,
			Summary: "Relay one HTTP request through the user's browser page. buffered: status, safe headers, body. sse: events stream_open, stream_event (increasing seq), stream_end, stream_error. 503 no client, 409 no captured credentials (platform_a), 429 relay policy refused (retry_after_ms).",
			Handle:  s.handleBrowserRequest("")},
		{Method: http.MethodPost, Path: "/v1/browser/request/cancel", Name: "browser.request_cancel", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    []Field{{Name: "platform", Type: "string", Required: true}, {Name: "requestId", Type: "string", Required: true}},
			Summary: "Cancel an in-flight relayed request or stream: request_cancel goes to the client that carries it. 404 for an unknown requestId.",
			Handle:  s.handleBrowserCancel},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/open", Name: "browser.platform_a.open", Area: "browser", Scope: ScopeControl, Kind: KindWrite,
			Summary: "Legacy: POST /v1/browser/actions with action tab_open, platform platform_a.", Handle: s.handleBrowserAction("tab_open")},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/reload", Name: "browser.platform_a.reload", Area: "browser", Scope: ScopeControl, Kind: KindWrite,
			Summary: "Legacy: POST /v1/browser/actions with action tab_reload, platform platform_a.", Handle: s.handleBrowserAction("tab_reload")},
		{Method: http.MethodPost, Path: "/v1/browser/platform_a/send", Name: "browser.platform_a.send", Area: "browser", Scope: ScopeBusiness, Kind: KindWrite, Body: requestBody[1:],
			Summary: "Legacy: POST /v1/browser/request with platform platform_a.", Handle: s.handleBrowserRequest(bridgeproto.PlatformA)},
		{Method: http.MethodGet, Path: "/v1/browser/platform_a/current", Name: "browser.platform_a.current", Area: "browser", Scope: ScopeBusiness, Kind: KindRead,
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
	api.WriteOK(w, s.browser.hub.ReadModel(f, s.relayInfo(r.Context())))
	return nil
}

// relayInfo asks the relay for its policy and live counters; a relay that is
// down shows as relay_available false, the read model still answers.
func (s *Server) relayInfo(ctx context.Context) bridge.RelayInfo {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := s.browser.relay.Status(ctx)
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

// handleBrowserAction serves /v1/browser/actions and, with fixed set, the
// legacy platform_a open/reload routes.
func (s *Server) handleBrowserAction(fixed string) HandlerFn {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body map[string]json.RawMessage
		if err := s.decode(r, &body); err != nil {
			return err
		}
		str := func(names ...string) (string, error) {
			for _, n := range names {
				if raw, ok := body[n]; ok && string(raw) != "null" {
					var v string
					if json.Unmarshal(raw, &v) != nil {
						return "", api.Unprocessable("invalid_field", "field %q must be a string", n)
					}
					return strings.TrimSpace(v), nil
				}
			}
			return "", nil
		}
		action, err := str("action")
		if err != nil {
			return err
		}
		platform, err := str("platform")
		if err != nil {
			return err
		}
		clientID, err := str("clientId", "client_id")
		if err != nil {
			return err
		}
		if fixed != "" {
			if action != "" && action != fixed {
				return api.Unprocessable("invalid_action", "this route sends %s; the body asks for %q", fixed, action)
			}
			if platform != "" && platform != bridgeproto.PlatformA {
				return api.Unprocessable("invalid_platform", "this route is for platform_a")
			}
			action, platform = fixed, bridgeproto.PlatformA
		}
		switch {
		case action == "":
			return api.Unprocessable("missing_field", "field \"action\" is required: %s", strings.Join(bridgeproto.Actions, ", "))
		case !bridgeproto.ValidAction(action):
			return api.Unprocessable("invalid_action", "unknown action %q: want one of %s", clip(action), strings.Join(bridgeproto.Actions, ", "))
		case platform != "" && !bridgeproto.ValidPlatform(platform):
			return api.Unprocessable("invalid_platform", "unknown platform %q: want platform_a or platform_b", clip(platform))
		case platform != "" && !bridgeproto.ManagedPlatform(platform):
			return api.Unprocessable("invalid_platform", "%s is relay only; shell and credential management covers platform_a and platform_b", platform)
		case platform == "" && bridgeproto.PlatformScopedAction(action):
			return api.Unprocessable("missing_field", "action %s needs a platform: platform_a or platform_b", action)
		}
		options, err := actionOptions(action, body)
		if err != nil {
			return err
		}
		out, err := s.browser.hub.Act(r.Context(), clientID, action, platform, options)
		if err != nil {
			return err
		}
		api.WriteOK(w, out)
		return nil
	}
}

// actionOptions collects the action-specific options: the "options" object
// plus any top-level field that is not action/platform/clientId, with
// ws_reconnect's aliases folded onto their canonical names.
func actionOptions(action string, body map[string]json.RawMessage) (map[string]any, error) {
	flat := map[string]json.RawMessage{}
	if raw, ok := body["options"]; ok && string(raw) != "null" {
		var o map[string]json.RawMessage
		if json.Unmarshal(raw, &o) != nil {
			return nil, api.Unprocessable("invalid_field", "field \"options\" must be an object")
		}
		for k, v := range o {
			flat[k] = v
		}
	}
	for k, v := range body {
		switch k {
		case "action", "platform", "clientId", "client_id", "options":
		default:
			flat[k] = v
		}
	}
	out := map[string]any{}
	if action == "ws_reconnect" {
		norm, err := bridgeproto.NormalizeWSReconnect(flat)
		if err != nil {
			return nil, api.Unprocessable("invalid_field", "ws_reconnect: %v", err)
		}
		for k, v := range norm {
			out[k] = v
		}
		for k := range flat {
			if _, alias := wsAliasNames[k]; alias {
				delete(flat, k)
			}
		}
	}
	for k, v := range flat {
		var x any
		if json.Unmarshal(v, &x) == nil {
			out[k] = x
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

var wsAliasNames = map[string]struct{}{
	"disconnectMs": {}, "disconnect_ms": {}, "delayMs": {}, "delay_ms": {}, "repeatCount": {}, "repeat_count": {},
	"repeatIntervalMs": {}, "repeat_interval_ms": {}, "intervalMs": {}, "interval_ms": {},
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// browserRequest is the body of POST /v1/browser/request.
type browserRequest struct {
	Platform     string            `json:"platform"`
	Prompt       *string           `json:"prompt"`
	Path         string            `json:"path"`
	Method       string            `json:"method"`
	ResponseMode string            `json:"responseMode"`
	RequestID    string            `json:"requestId"`
	ClientID     string            `json:"clientId"`
	Headers      map[string]string `json:"headers"`
	Body         json.RawMessage   `json:"body"`
	TimeoutMs    int64             `json:"timeoutMs"`
}

// validate applies SPEC.md's field rules and fills defaults.
func (q *browserRequest) validate() error {
	q.Platform = strings.TrimSpace(q.Platform)
	switch {
	case q.Platform == "":
		return api.Unprocessable("missing_field", "field \"platform\" is required: platform_a, platform_b or platform_c")
	case !bridgeproto.ValidPlatform(q.Platform):
		return api.Unprocessable("invalid_platform", "unknown platform %q: want platform_a, platform_b or platform_c", clip(q.Platform))
	}
	if q.Prompt != nil && (q.Platform != bridgeproto.PlatformA || q.Path != "") {
		return api.Unprocessable("invalid_field", "prompt is only for platform_a when path is omitted")
	}
	if q.Path == "" && q.Platform != bridgeproto.PlatformA {
		return api.Unprocessable("missing_field", "field \"path\" is required for %s", q.Platform)
	}
	if q.Path == "" && q.Prompt == nil {
		return api.Unprocessable("missing_field", "platform_a needs a path, or a prompt (completion compatibility mode)")
	}
	if q.Path != "" && (q.Path[0] != '/' || strings.HasPrefix(q.Path, "//") || len(q.Path) > bridgeproto.MaxPathLen) {
		return api.Unprocessable("invalid_field", "path must be an absolute path on the platform host, e.g. /api/chat")
	}
	q.Method = strings.ToUpper(strings.TrimSpace(q.Method))
	if q.Method == "" {
		q.Method = http.MethodGet
		if q.Prompt != nil || len(q.Body) > 0 {
			q.Method = http.MethodPost
		}
	}
	if !bridgeproto.ValidMethod(q.Method) {
		return api.Unprocessable("invalid_field", "method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS")
	}
	if q.ResponseMode == "" {
		q.ResponseMode = bridgeproto.ModeBuffered
	}
	if q.ResponseMode != bridgeproto.ModeBuffered && q.ResponseMode != bridgeproto.ModeSSE {
		return api.Unprocessable("invalid_field", "responseMode must be buffered or sse")
	}
	if q.RequestID == "" {
		q.RequestID = bridge.NewID("req_")
	} else if len(q.RequestID) > bridgeproto.MaxIDLen || strings.ContainsFunc(q.RequestID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return api.Unprocessable("invalid_field", "requestId must be at most %d printable bytes without spaces", bridgeproto.MaxIDLen)
	}
	if len(q.Headers) > bridgeproto.MaxHeaders {
		return api.Unprocessable("invalid_field", "too many headers")
	}
	if q.TimeoutMs < 0 {
		return api.Unprocessable("invalid_field", "timeoutMs must not be negative")
	}
	return nil
}

func (s *Server) handleBrowserRequest(fixed string) HandlerFn {
	return func(w http.ResponseWriter, r *http.Request) error {
		var q browserRequest
		if err := s.decode(r, &q); err != nil {
			return err
		}
		if fixed != "" {
			if q.Platform != "" && q.Platform != fixed {
				return api.Unprocessable("invalid_platform", "this route is for %s", fixed)
			}
			q.Platform = fixed
		}
		if err := q.validate(); err != nil {
			return err
		}
		return s.relayRequest(w, r, &q)
	}
}

// relayRequest picks the client, asks the relay engine, dispatches and
// answers buffered or as SSE. The engine hears the outcome in every case.
func (s *Server) relayRequest(w http.ResponseWriter, r *http.Request, q *browserRequest) (err error) {
	hub := s.browser.hub
	sel, err := hub.Pick(q.ClientID, q.Platform, q.Platform == bridgeproto.PlatformA)
	if err != nil {
		return err
	}
	ctx := r.Context()
	dec, err := s.browser.relay.Admit(ctx, sel.Target)
	if err != nil {
		if ctx.Err() != nil {
			return api.NewError(http.StatusServiceUnavailable, "caller_gone", "the caller went away while waiting for the relay")
		}
		return api.Unavailable("relay_unavailable", "the relay worker is not available: %v; the request was not sent", err)
	}
	if dec.Changed {
		s.browser.flusher.Kick()
	}
	if !dec.Allowed {
		retry := max(dec.RetryAfterMs, 1)
		w.Header().Set("Retry-After", strconv.FormatInt((retry+999)/1000, 10))
		return api.NewError(http.StatusTooManyRequests, "relay_refused", "the relay policy refused the request to %s (%s); retry after %d ms", sel.Target, dec.Reason, retry).
			WithDetails(map[string]any{"retry_after_ms": retry, "reason": dec.Reason, "target": sel.Target})
	}
	outcome := relay.Outcome{Target: sel.Target, Cancelled: true}
	defer func() {
		// The caller has its answer before the engine hears the outcome:
		// reporting is bookkeeping and must not add a round trip to it.
		// (Only on success: an error body is written after we return.)
		if err == nil {
			_ = http.NewResponseController(w).Flush()
		}
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		changed, err := s.browser.relay.Report(rctx, outcome)
		if err != nil {
			s.log.Warn("relay outcome not reported", "target", sel.Target, "error", err)
		}
		if changed {
			s.browser.flusher.Kick()
		}
	}()

	timeout := hub.Config().RequestTimeout
	if q.TimeoutMs > 0 {
		timeout = time.Duration(q.TimeoutMs) * time.Millisecond
	}
	req := bridgeproto.APIRequest{
		RequestID: q.RequestID, Platform: q.Platform, Method: q.Method, Path: q.Path, Headers: q.Headers,
		Body: q.Body, ResponseMode: q.ResponseMode, TimeoutMs: timeout.Milliseconds(),
	}
	if q.Prompt != nil {
		req.Prompt = *q.Prompt
	}
	p, err := hub.Send(sel, req)
	if err != nil {
		return err
	}
	defer hub.Finish(p)
	start := time.Now()
	res := bridge.RelayResult{RequestID: q.RequestID, ClientID: sel.Conn.ClientID(), Platform: q.Platform, ResponseMode: q.ResponseMode, Headers: map[string]string{}}
	if q.ResponseMode == bridgeproto.ModeSSE {
		err = s.streamRelay(w, r, p, timeout, &res, &outcome)
	} else {
		err = s.bufferedRelay(w, r, p, timeout, &res, &outcome)
	}
	res.DurationMs, res.FinishedAt = time.Since(start).Milliseconds(), time.Now().UTC()
	hub.SetLatest(res)
	return err
}

// retryAfterMs reads a Retry-After header (seconds or an HTTP date).
func retryAfterMs(h map[string]string) int64 {
	v := ""
	for k, val := range h {
		if strings.EqualFold(k, "Retry-After") {
			v = strings.TrimSpace(val)
		}
	}
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return n * 1000
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Milliseconds()
		}
	}
	return 0
}

// waitFrame waits for the next frame of p, the caller going away, p ending
// or the timeout. Exactly one of the results is set.
func (s *Server) waitFrame(ctx context.Context, p *bridge.Pending, timeout time.Duration) (bridgeproto.Message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case m := <-p.C:
		return m, nil
	case <-ctx.Done():
		s.browser.hub.CancelRemote(p, "caller_gone")
		return nil, errCallerGone
	case <-p.Done():
		code, msg := p.Err()
		switch code {
		case "cancelled":
			return nil, api.Conflict("request_cancelled", "request %s was cancelled (%s)", p.ID, msg)
		case "client_disconnected":
			return nil, api.NewError(http.StatusBadGateway, "client_disconnected", "%s", msg)
		}
		return nil, api.NewError(http.StatusBadGateway, code, "%s", msg)
	case <-timer.C:
		s.browser.hub.CancelRemote(p, "timeout")
		return nil, api.NewError(http.StatusGatewayTimeout, "relay_timeout", "the browser client did not answer within %d ms", timeout.Milliseconds())
	}
}

var errCallerGone = errors.New("caller went away")

func (s *Server) bufferedRelay(w http.ResponseWriter, r *http.Request, p *bridge.Pending, timeout time.Duration, res *bridge.RelayResult, out *relay.Outcome) error {
	deadline := time.Now().Add(timeout)
	var body strings.Builder
	for {
		m, err := s.waitFrame(r.Context(), p, time.Until(deadline))
		if err != nil {
			res.Error = api.AsError(orGone(err)).Code
			if errors.Is(err, errCallerGone) {
				return nil
			}
			if ae := api.AsError(err); ae.Status == http.StatusGatewayTimeout || ae.Status == http.StatusBadGateway {
				out.Cancelled, out.Status = false, 0
			}
			return err
		}
		switch v := m.(type) {
		case *bridgeproto.APIResponse:
			if v.Error != "" {
				out.Cancelled, out.Status = false, 0
				res.Error = "relay_failed"
				return api.NewError(http.StatusBadGateway, "relay_failed", "the page could not perform the request: %s", clip(v.Error))
			}
			res.Status, res.Headers, res.Body = v.Status, bridgeproto.SafeHeaders(v.Headers), v.Body
		case *bridgeproto.StreamOpen:
			res.Status, res.Headers = v.Status, bridgeproto.SafeHeaders(v.Headers)
			continue
		case *bridgeproto.StreamEvent:
			body.WriteString(v.Data)
			res.Events++
			continue
		case *bridgeproto.StreamError:
			out.Cancelled, out.Status = false, 0
			return api.NewError(http.StatusBadGateway, "relay_failed", "the stream failed: %s", clip(v.Message))
		case *bridgeproto.StreamEnd:
			res.Body = body.String()
		default:
			continue
		}
		out.Cancelled, out.Status = false, res.Status
		out.RetryAfterMs = retryAfterMs(res.Headers)
		api.WriteOK(w, map[string]any{
			"requestId": res.RequestID, "platform": res.Platform, "clientId": res.ClientID,
			"status": res.Status, "headers": res.Headers, "body": res.Body,
			"duration_ms": time.Since(deadline.Add(-timeout)).Milliseconds(),
		})
		return nil
	}
}

func orGone(err error) error {
	if errors.Is(err, errCallerGone) {
		return api.NewError(499, "caller_gone", "caller went away")
	}
	return err
}

// sseWriter writes Server-Sent Events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (e sseWriter) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	return e.rc.Flush()
}

// streamRelay answers as SSE. Statuses known before the stream (no client,
// refused) were JSON errors already; from here on failures are stream_error.
func (s *Server) streamRelay(w http.ResponseWriter, r *http.Request, p *bridge.Pending, timeout time.Duration, res *bridge.RelayResult, out *relay.Outcome) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Relay-Request-Id", res.RequestID)
	w.WriteHeader(http.StatusOK)
	sse := sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = sse.rc.Flush()
	base := map[string]any{"requestId": res.RequestID, "platform": res.Platform, "clientId": res.ClientID}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	opened := false
	open := func(status int, headers map[string]string) error {
		if opened {
			return nil
		}
		opened = true
		res.Status, res.Headers = status, bridgeproto.SafeHeaders(headers)
		out.Cancelled, out.Status, out.RetryAfterMs = false, status, retryAfterMs(headers)
		return sse.event(bridgeproto.TypeStreamOpen, with("status", status, "headers", res.Headers))
	}
	var seq int64
	emit := func(event, data string) error {
		seq++
		res.Events = seq
		return sse.event(bridgeproto.TypeStreamEvent, with("seq", seq, "event", event, "data", data))
	}
	fail := func(code, msg string) error {
		res.Error = code
		_ = sse.event(bridgeproto.TypeStreamError, with("code", code, "message", msg, "events", seq))
		return nil
	}
	for {
		m, err := s.waitFrame(r.Context(), p, timeout)
		if err != nil {
			if errors.Is(err, errCallerGone) {
				res.Error = "caller_gone"
				return nil
			}
			ae := api.AsError(err)
			if ae.Code != "request_cancelled" {
				out.Cancelled, out.Status = false, 0
			}
			return fail(ae.Code, ae.Message)
		}
		var werr error
		switch v := m.(type) {
		case *bridgeproto.StreamOpen:
			werr = open(v.Status, v.Headers)
		case *bridgeproto.StreamEvent:
			if werr = open(http.StatusOK, nil); werr == nil {
				werr = emit(v.Event, v.Data)
			}
		case *bridgeproto.StreamEnd:
			if werr = open(http.StatusOK, nil); werr == nil {
				_ = sse.event(bridgeproto.TypeStreamEnd, with("events", seq))
			}
			return nil
		case *bridgeproto.StreamError:
			out.Cancelled, out.Status = false, 0
			return fail(orDefault(v.Code, "relay_failed"), clip(v.Message))
		case *bridgeproto.APIResponse:
			// A page that answered in one piece: open, one event, end.
			if v.Error != "" {
				out.Cancelled, out.Status = false, 0
				return fail("relay_failed", clip(v.Error))
			}
			if werr = open(v.Status, v.Headers); werr == nil {
				if werr = emit("", v.Body); werr == nil {
					_ = sse.event(bridgeproto.TypeStreamEnd, with("events", seq))
				}
			}
			return nil
		}
		if werr != nil {
			// The caller's connection broke mid-stream.
			s.browser.hub.CancelRemote(p, "caller_gone")
			return nil
		}
	}
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
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
		return api.Unprocessable("invalid_platform", "unknown platform %q", clip(q.Platform))
	case q.RequestID == "":
		return api.Unprocessable("missing_field", "field \"requestId\" is required")
	}
	clientID, err := s.browser.hub.Cancel(q.Platform, q.RequestID)
	if err != nil {
		return err
	}
	api.WriteOK(w, map[string]any{"requestId": q.RequestID, "platform": q.Platform, "clientId": clientID, "cancelled": true})
	return nil
}

func (s *Server) handleBrowserCurrent(w http.ResponseWriter, r *http.Request) error {
	if s.browser.hub.Connected() == 0 {
		return api.Unavailable("no_browser_client", "no browser bridge client is connected")
	}
	api.WriteOK(w, map[string]any{"platform": bridgeproto.PlatformA, "result": s.browser.hub.Latest()})
	return nil
}
