// Package relayhttp is the relay's HTTP side: POST /v1/browser/request (and
// the legacy platform_a send) from the caller's body to its answer. It picks
// the browser client and asks the relay policy (admission), hands the
// request to the bridge hub, and writes what the page sends back, buffered
// (buffered.go) or as Server-Sent Events (stream.go). The bookkeeping of a
// request in flight — the pending frames, who is connected, cancellation on
// the WebSocket — stays in supervisor/bridge; this package is its HTTP
// caller's half. The supervisor root only wires it into the route table.
package relayhttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/supervisor/relayadmit"
	"github.com/svcd/svcd/supervisor/telemetry"
	"github.com/svcd/svcd/workers/relay"
)

// Relay answers relayed requests. Set its fields before the first request.
type Relay struct {
	Hub     *bridge.Hub
	Admit   *relayadmit.Admitter // leases and batched outcomes (issue 15)
	Flusher *relay.Flusher       // persists relay state through raft; kicked when admission changed it
	Metrics *telemetry.Relay     // relayed requests by outcome (nil: not counted)
	Log     hclog.Logger
	// Decode reads a JSON body under the daemon's body cap.
	Decode func(r *http.Request, dst any) error
}

// Handle is the route handler; fixed, when set, is the only platform the
// route takes (the legacy platform_a send).
func (x *Relay) Handle(fixed string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var q Request
		if err := x.Decode(r, &q); err != nil {
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
		return x.relayRequest(w, r, &q)
	}
}

// relayRequest picks the client, asks the relay engine, dispatches and
// answers buffered or as SSE. The engine hears the outcome in every case.
func (x *Relay) relayRequest(w http.ResponseWriter, r *http.Request, q *Request) (err error) {
	// Counted once, by outcome (telemetry/relay.go): refused is set where
	// admission says no; otherwise the error and the platform's status say.
	var (
		refused string
		sent    time.Time
		res     bridge.RelayResult
	)
	defer func() { x.count(q, refused, err, sent, &res) }()
	hub := x.Hub
	sel, err := hub.Pick(q.ClientID, q.Platform, q.Platform == bridgeproto.PlatformA)
	if err != nil {
		return err
	}
	if err := hub.CheckRequestID(q.RequestID); err != nil {
		return err
	}
	ctx := r.Context()
	dec, refused, err := x.admit(w, r, sel.Target)
	if err != nil {
		return err
	}
	outcome := relay.Outcome{Target: sel.Target, Cancelled: true, Probe: dec.Probe}
	// The outcome is queued for the relay engine and delivered in a batch,
	// off the caller's path; the answer (or error body, written after we
	// return) does not wait for it.
	defer func() { x.Admit.Report(outcome) }()

	timeout := hub.Config().RequestTimeout
	if q.TimeoutMs > 0 {
		timeout = time.Duration(q.TimeoutMs) * time.Millisecond
	}
	p, err := hub.Send(sel, q.apiRequest(timeout))
	if err != nil {
		return err
	}
	defer hub.Finish(p)
	start := time.Now()
	sent = start
	res = bridge.RelayResult{RequestID: q.RequestID, ClientID: sel.Conn.ClientID(), Platform: q.Platform, ResponseMode: q.ResponseMode, Headers: map[string]string{}}
	if q.ResponseMode == bridgeproto.ModeSSE {
		err = x.streamRelay(w, r, p, timeout, &res, &outcome)
	} else {
		err = x.bufferedRelay(w, r, p, timeout, &res, &outcome)
	}
	res.DurationMs, res.FinishedAt = time.Since(start).Milliseconds(), time.Now().UTC()
	hub.SetLatest(res)
	if log := x.Log; log.IsDebug() {
		reqid.Logger(ctx, log).Debug("browser relay", "platform", q.Platform, "target", sel.Target, "client_id", res.ClientID,
			"relay_request_id", q.RequestID, "mode", q.ResponseMode, "status", res.Status, "duration_ms", res.DurationMs, "error", errCode(err))
	}
	return err
}

// admit asks the relay policy whether target may take one more request.
// A refusal is a 429 with Retry-After, and refused names it for the
// metrics; an engine that cannot be asked is a 503 (nothing was sent).
func (x *Relay) admit(w http.ResponseWriter, r *http.Request, target string) (dec relay.Decision, refused string, err error) {
	ctx := r.Context()
	dec, err = x.Admit.Admit(ctx, target)
	if err != nil {
		if ctx.Err() != nil {
			return dec, "", api.NewError(http.StatusServiceUnavailable, "caller_gone", "the caller went away while waiting for the relay")
		}
		return dec, "", api.Unavailable("relay_unavailable", "the relay worker is not available: %v; the request was not sent", err)
	}
	if dec.Changed {
		x.Flusher.Kick()
	}
	if !dec.Allowed {
		refused = telemetry.RelayRefused
		if dec.Reason == "circuit_open" || dec.Reason == "circuit_half_open" {
			refused = telemetry.RelayBreakerOpen
		}
		retry := max(dec.RetryAfterMs, 1)
		w.Header().Set("Retry-After", strconv.FormatInt((retry+999)/1000, 10))
		return dec, refused, api.NewError(http.StatusTooManyRequests, "relay_refused", "the relay policy refused the request to %s (%s); retry after %d ms", target, dec.Reason, retry).
			WithDetails(map[string]any{"retry_after_ms": retry, "reason": dec.Reason, "target": target})
	}
	return dec, "", nil
}

// apiRequest is the api_request frame q becomes on the WebSocket.
func (q *Request) apiRequest(timeout time.Duration) bridgeproto.APIRequest {
	req := bridgeproto.APIRequest{
		RequestID: q.RequestID, Platform: q.Platform, Method: q.Method, Path: q.Path, Headers: q.Headers,
		Body: q.Body, ResponseMode: q.ResponseMode, TimeoutMs: timeout.Milliseconds(),
	}
	if q.Prompt != nil {
		req.Prompt = *q.Prompt
	}
	return req
}

// count records one relayed request by outcome: refused when admission
// said no, otherwise what the error and the platform's status say; took is
// zero when nothing was sent.
func (x *Relay) count(q *Request, refused string, err error, sent time.Time, res *bridge.RelayResult) {
	outcome := refused
	if outcome == "" {
		e := err
		if e == nil && res.Error != "" {
			e = api.NewError(http.StatusBadGateway, res.Error, "")
		}
		outcome = telemetry.RelayOutcome(e, res.Status)
	}
	var took time.Duration
	if !sent.IsZero() {
		took = time.Since(sent)
	}
	x.Metrics.Done(q.Platform, q.Method, outcome, took)
	x.Metrics.Events(q.Platform, res.Events)
}

// errCode is err's API code for a log line, "" for none.
func errCode(err error) string {
	if err == nil {
		return ""
	}
	return api.AsError(err).Code
}
