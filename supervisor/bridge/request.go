package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Selection is the client chosen for a request or action and the relay
// target (platform + client + account) it counts against.
type Selection struct {
	Conn   *Conn
	Target string
}

// Pick chooses the client for platform: clientID if given (it must be
// connected), otherwise the most recently active client that captured
// credentials for platform. needCreds makes a missing capture a 409.
func (h *Hub) Pick(clientID, platform string, needCreds bool) (Selection, error) {
	conns := h.liveConns()
	if len(conns) == 0 {
		return Selection{}, api.Unavailable("no_browser_client", "no browser bridge client is connected; open the browser with the plugin and check GET /v1/browser")
	}
	if clientID != "" {
		c := h.conn(clientID)
		if c == nil {
			return Selection{}, api.Conflict("unknown_client", "clientId %q is not connected; GET /v1/browser lists the connected clients", api.Clip(clientID))
		}
		conns = []*Conn{c}
	}
	creds := h.credentialed(platform)
	sort.Slice(conns, func(i, j int) bool { return conns[i].LastSeen().After(conns[j].LastSeen()) })
	for _, c := range conns {
		if key, ok := creds[c.clientID]; ok {
			return Selection{Conn: c, Target: key}, nil
		}
	}
	if needCreds && platform != "" {
		return Selection{}, api.Conflict("no_credentials",
			"no connected browser client has captured credentials for %s; complete one real request on the %s page in the browser first, then retry", platform, platform)
	}
	c := conns[0]
	return Selection{Conn: c, Target: raftstore.RecordKey(c.clientID, platform, "")}, nil
}

// CheckRequestID refuses a requestId already in flight. Callers check before
// asking the relay policy, so a request that will never be sent does not
// spend a rate-limit slot; Send still decides atomically.
func (h *Hub) CheckRequestID(id string) error {
	if h.lookup(id) != nil {
		return api.Conflict("duplicate_request_id", "requestId %q is already in flight", api.Clip(id))
	}
	return nil
}

// pendingFrames sizes a request's frame buffer by need (performance, issue
// 15): a buffered answer is one api_response, or stream_open, events and
// stream_end taken as fast as they come; an SSE relay gets room for a burst
// while its caller's connection catches up, and beyond that the reader's
// DeliverWait is the back-pressure. A fixed 1024 slots cost 16 KiB per
// request for nothing.
func pendingFrames(mode string) int {
	if mode == bridgeproto.ModeSSE {
		return 64
	}
	return 4
}

// Send dispatches an api_request to sel and returns the pending answer.
// The caller must Finish it.
func (h *Hub) Send(sel Selection, req bridgeproto.APIRequest) (*Pending, error) {
	req.Type = bridgeproto.TypeAPIRequest
	p := newPending(req.RequestID, kindRequest, req.Platform, sel.Conn, pendingFrames(req.ResponseMode))
	if !h.track(p) {
		return nil, api.Conflict("duplicate_request_id", "requestId %q is already in flight", api.Clip(req.RequestID))
	}
	if !sel.Conn.sendNow(req) {
		h.Finish(p)
		return nil, api.Unavailable("client_gone", "the browser client disconnected before the request could be sent")
	}
	h.activity.touchRecord(sel.Target, time.Now(), "api_request")
	return p, nil
}

// CancelRemote tells the plugin to stop p (the HTTP caller went away).
func (h *Hub) CancelRemote(p *Pending, reason string) {
	p.conn.send(bridgeproto.RequestCancel{Type: bridgeproto.TypeRequestCancel, RequestID: p.ID, Platform: p.Platform, Reason: reason})
	p.fail("cancelled", reason)
}

// Cancel cancels an in-flight request by id on behalf of
// POST /v1/browser/request/cancel.
func (h *Hub) Cancel(platform, requestID string) (clientID string, err error) {
	p := h.lookup(requestID)
	if p == nil || p.Kind != kindRequest || p.Platform != platform {
		return "", api.NotFound("unknown_request", "no request %q in flight for %s", api.Clip(requestID), platform)
	}
	h.CancelRemote(p, "cancelled_by_api")
	return p.ClientID(), nil
}

// RelayResult is a finished relay as the legacy current route reads it back.
// Headers are the safe subset only.
type RelayResult struct {
	RequestID    string            `json:"requestId"`
	ClientID     string            `json:"clientId"`
	Platform     string            `json:"platform"`
	ResponseMode string            `json:"responseMode"`
	Status       int               `json:"status"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body,omitempty"`
	Events       int64             `json:"events,omitempty"`
	Error        string            `json:"error,omitempty"`
	DurationMs   int64             `json:"duration_ms"`
	FinishedAt   time.Time         `json:"finished_at"`
}

// SetLatest remembers the latest platform_a relay result (in memory only: it
// holds a response body, which is not durable state).
func (h *Hub) SetLatest(r RelayResult) {
	if r.Platform != bridgeproto.PlatformA {
		return
	}
	h.mu.Lock()
	h.latestA = &r
	h.mu.Unlock()
}

// Latest is the latest platform_a relay result, or nil.
func (h *Hub) Latest() *RelayResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latestA == nil {
		return nil
	}
	c := *h.latestA
	return &c
}

// ActionOutcome is the answer of POST /v1/browser/actions (SPEC.md "Action
// result").
type ActionOutcome struct {
	ActionID     string          `json:"actionId"`
	Action       string          `json:"action"`
	Platform     string          `json:"platform,omitempty"`
	ClientID     string          `json:"clientId"`
	Accepted     bool            `json:"accepted"`
	Completed    bool            `json:"completed"`
	Failed       bool            `json:"failed"`
	Reason       string          `json:"reason"`
	Target       json.RawMessage `json:"target"`
	Result       json.RawMessage `json:"result"`
	ShellRuntime json.RawMessage `json:"shell_runtime"`
}

var nullJSON = json.RawMessage("null")

// Act sends a management action and waits for the plugin's action_result,
// at most ActionTimeout.
func (h *Hub) Act(ctx context.Context, clientID, action, platform string, options map[string]any) (ActionOutcome, error) {
	sel, err := h.Pick(clientID, platform, false)
	if err != nil {
		return ActionOutcome{}, err
	}
	id := NewID("act_")
	p := newPending(id, kindAction, platform, sel.Conn, 1)
	if !h.track(p) {
		return ActionOutcome{}, api.Conflict("duplicate_request_id", "action id %s is already in flight", id)
	}
	defer h.Finish(p)
	if !sel.Conn.send(bridgeproto.Action{Type: bridgeproto.TypeAction, ActionID: id, Action: action, Platform: platform, Options: options}) {
		return ActionOutcome{}, api.Unavailable("client_gone", "the browser client disconnected before the action could be sent")
	}
	timer := time.NewTimer(h.cfg.ActionTimeout)
	defer timer.Stop()
	var res *bridgeproto.ActionResult
	select {
	case m := <-p.C:
		res = m.(*bridgeproto.ActionResult)
	case <-p.Done():
		_, msg := p.Err()
		return ActionOutcome{}, api.Unavailable("client_gone", "%s", msg)
	case <-timer.C:
		return ActionOutcome{}, api.NewError(http.StatusGatewayTimeout, "action_timeout",
			"the browser client did not answer %s within %d ms", action, h.cfg.ActionTimeout.Milliseconds())
	case <-ctx.Done():
		return ActionOutcome{}, api.NewError(http.StatusGatewayTimeout, "action_cancelled", "the caller went away before the plugin answered")
	}
	out := ActionOutcome{
		ActionID: id, Action: action, Platform: platform, ClientID: sel.Conn.clientID,
		Accepted: res.Accepted, Completed: res.Completed, Failed: res.Failed, Reason: res.Reason,
		Target: orNull(res.Target), Result: orNull(res.Result), ShellRuntime: orNull(res.ShellRuntime),
	}
	stored := raftstore.StoredActionResult{
		ActionID: id, Action: action, Platform: platform, ClientID: sel.Conn.clientID,
		Accepted: res.Accepted, Completed: res.Completed, Failed: res.Failed, Reason: res.Reason,
		Target: res.Target, Result: res.Result, ShellRuntime: res.ShellRuntime,
	}
	if _, err := h.host.Apply(ctx, raftstore.CmdBrowserActionResult, stored); err != nil {
		h.log.Warn("could not persist action result", "action_id", id, "error", err)
	}
	if len(res.ShellRuntime) == 0 {
		h.host.Read(func(s *raftstore.State) {
			if c := s.Browser.Clients[sel.Conn.clientID]; c != nil && len(c.ShellRuntime) > 0 {
				out.ShellRuntime = append(json.RawMessage{}, c.ShellRuntime...)
			}
		})
	}
	return out, nil
}

func orNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return nullJSON
	}
	return r
}
