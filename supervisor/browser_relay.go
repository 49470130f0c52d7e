package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/supervisor/telemetry"
	"github.com/svcd/svcd/workers/relay"
)

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

// maxRequestTimeout bounds a request's timeoutMs. Without a bound a large
// value overflows time.Duration into a negative timer (an instant 504 after
// the request was already sent), and a caller could hold a pending request
// and a relay slot for years.
const maxRequestTimeout = time.Hour

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
	if q.TimeoutMs < 0 || q.TimeoutMs > maxRequestTimeout.Milliseconds() {
		return api.Unprocessable("invalid_field", "timeoutMs must be 0 (the default) to %d", maxRequestTimeout.Milliseconds())
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
	// Counted once, by outcome (telemetry/relay.go): refused is set where
	// admission says no; otherwise the error and the platform's status say.
	var (
		refused string
		sent    time.Time
		res     bridge.RelayResult
	)
	defer func() {
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
		s.browser.metrics.Done(q.Platform, q.Method, outcome, took)
		s.browser.metrics.Events(q.Platform, res.Events)
	}()
	hub := s.browser.hub
	sel, err := hub.Pick(q.ClientID, q.Platform, q.Platform == bridgeproto.PlatformA)
	if err != nil {
		return err
	}
	if err := hub.CheckRequestID(q.RequestID); err != nil {
		return err
	}
	ctx := r.Context()
	dec, err := s.browser.admit.Admit(ctx, sel.Target)
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
		refused = telemetry.RelayRefused
		if dec.Reason == "circuit_open" || dec.Reason == "circuit_half_open" {
			refused = telemetry.RelayBreakerOpen
		}
		retry := max(dec.RetryAfterMs, 1)
		w.Header().Set("Retry-After", strconv.FormatInt((retry+999)/1000, 10))
		return api.NewError(http.StatusTooManyRequests, "relay_refused", "the relay policy refused the request to %s (%s); retry after %d ms", sel.Target, dec.Reason, retry).
			WithDetails(map[string]any{"retry_after_ms": retry, "reason": dec.Reason, "target": sel.Target})
	}
	outcome := relay.Outcome{Target: sel.Target, Cancelled: true, Probe: dec.Probe}
	// The outcome is queued for the relay engine and delivered in a batch,
	// off the caller's path; the answer (or error body, written after we
	// return) does not wait for it.
	defer func() { s.browser.admit.Report(outcome) }()

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
	sent = start
	res = bridge.RelayResult{RequestID: q.RequestID, ClientID: sel.Conn.ClientID(), Platform: q.Platform, ResponseMode: q.ResponseMode, Headers: map[string]string{}}
	if q.ResponseMode == bridgeproto.ModeSSE {
		err = s.streamRelay(w, r, p, timeout, &res, &outcome)
	} else {
		err = s.bufferedRelay(w, r, p, timeout, &res, &outcome)
	}
	res.DurationMs, res.FinishedAt = time.Since(start).Milliseconds(), time.Now().UTC()
	hub.SetLatest(res)
	if log := s.log; log.IsDebug() {
		reqid.Logger(ctx, log).Debug("browser relay", "platform", q.Platform, "target", sel.Target, "client_id", res.ClientID,
			"relay_request_id", q.RequestID, "mode", q.ResponseMode, "status", res.Status, "duration_ms", res.DurationMs, "error", errCode(err))
	}
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
// or the timeout. Exactly one of the results is set. For a stream whose
// events also go straight to the caller (Pending.SetSink), the timeout
// counts from the later of the call and the last event the sink took.
func (s *Server) waitFrame(ctx context.Context, p *bridge.Pending, timeout time.Duration) (bridgeproto.Message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
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
			if left := time.Until(p.LastDirect().Add(timeout)); left > 0 {
				timer.Reset(left)
				continue
			}
			s.browser.hub.CancelRemote(p, "timeout")
			return nil, api.NewError(http.StatusGatewayTimeout, "relay_timeout", "the browser client did not answer within %d ms", timeout.Milliseconds())
		}
	}
}

var errCallerGone = errors.New("caller went away")

func (s *Server) bufferedRelay(w http.ResponseWriter, r *http.Request, p *bridge.Pending, timeout time.Duration, res *bridge.RelayResult, out *relay.Outcome) error {
	deadline := time.Now().Add(timeout)
	maxBody := s.browser.hub.Config().MaxMessageBytes
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
			// The whole answer is held in memory (and kept for the legacy
			// current read): a page that keeps streaming must not grow it
			// past what one buffered api_response may carry.
			if int64(body.Len()+len(v.Data)) > maxBody {
				// Reported as cancelled: the platform did nothing wrong,
				// so the relay policy must not back off for it.
				s.browser.hub.CancelRemote(p, "response_too_large")
				res.Error = "response_too_large"
				return api.NewError(http.StatusBadGateway, "response_too_large",
					"the buffered answer grew past %d bytes (browser_max_message_bytes); use responseMode sse for large answers", maxBody)
			}
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
		writeBuffered(w, bufferedAnswer{
			RequestID: res.RequestID, Platform: res.Platform, ClientID: res.ClientID,
			Status: res.Status, Headers: res.Headers, Body: res.Body,
			DurationMs: time.Since(deadline.Add(-timeout)).Milliseconds(),
		})
		return nil
	}
}

// bufferedAnswer is the data of a buffered relay's answer. Its fields are in
// the order json.Marshal writes a map's keys (sorted), so the bytes are the
// ones the generic map gave, without building and sorting a map per request.
type bufferedAnswer struct {
	Body       string            `json:"body"`
	ClientID   string            `json:"clientId"`
	DurationMs int64             `json:"duration_ms"`
	Headers    map[string]string `json:"headers"`
	Platform   string            `json:"platform"`
	RequestID  string            `json:"requestId"`
	Status     int               `json:"status"`
}

// writeBuffered writes the success envelope around data with its
// Content-Length, so the caller knows the answer is complete without waiting
// for the end of a chunked body.
func writeBuffered(w http.ResponseWriter, data any) {
	var buf bytes.Buffer
	buf.Grow(512)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(api.Envelope{OK: true, Data: data}); err != nil {
		api.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	// On the wire now, not when the server finishes the request: the
	// bookkeeping after this (forgetting the pending request, queueing the
	// outcome, metrics) is not the caller's to wait for.
	_ = http.NewResponseController(w).Flush()
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
	if err := e.write(name, data); err != nil {
		return err
	}
	return e.rc.Flush()
}

// write writes one event without flushing it.
func (e sseWriter) write(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	return err
}

// sseStreamEvent is a stream_event's data. Its fields are in the order
// json.Marshal writes a map's keys (sorted), so the bytes are the ones the
// generic map gave, without building and sorting a map per event.
type sseStreamEvent struct {
	ClientID  string `json:"clientId"`
	Data      string `json:"data"`
	Event     string `json:"event"`
	Platform  string `json:"platform"`
	RequestID string `json:"requestId"`
	Seq       int64  `json:"seq"`
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
	first := firstFrame(r.Context(), p, sse)
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
	// Frames that already arrived go out in one flush: each write flushes
	// only when no further frame is waiting, and the loop flushes before it
	// waits for more (unflushed). stream_end is not flushed at all: the
	// server writes it with the end of the chunked body in one go.
	unflushed, more := false, false // more: the caller knows more follows at once
	put := func(name string, data any) error {
		if more || len(p.C) > 0 {
			unflushed = true
			return sse.write(name, data)
		}
		unflushed = false
		return sse.event(name, data)
	}
	var seq int64
	emit := func(event, data string) error {
		seq++
		res.Events = seq
		return put(bridgeproto.TypeStreamEvent, sseStreamEvent{ClientID: res.ClientID, Data: data, Event: event, Platform: res.Platform, RequestID: res.RequestID, Seq: seq})
	}
	// Once the stream is open, an event that arrives alone is written by
	// the connection's reader (the sink) instead of waking this goroutine
	// for it (issue 15, fourth pass); bursts still come through p.C and go
	// out with one flush. Everything below that writes holds p's lock.
	broken := false // the sink's write to the caller failed
	defer func() { p.Lock(); p.ClearSink(); p.Unlock() }()
	// The sink runs on the connection's reader, so a caller that stopped
	// reading must not hold it longer than a full consumer may
	// (bridge.DeliverWait): past that the write fails and the caller loses
	// its stream, instead of every frame of the plugin waiting behind it.
	sink := func(ev *bridgeproto.StreamEvent) {
		if broken {
			return
		}
		_ = sse.rc.SetWriteDeadline(time.Now().Add(bridge.DeliverWait))
		err := emit(ev.Event, ev.Data)
		_ = sse.rc.SetWriteDeadline(time.Time{})
		if err != nil {
			broken = true
			s.browser.hub.CancelRemote(p, "caller_gone")
		}
	}
	opened := false
	open := func(status int, headers map[string]string) error {
		if opened {
			return nil
		}
		opened = true
		res.Status, res.Headers = status, bridgeproto.SafeHeaders(headers)
		out.Cancelled, out.Status, out.RetryAfterMs = false, status, retryAfterMs(headers)
		if err := put(bridgeproto.TypeStreamOpen, with("status", status, "headers", res.Headers)); err != nil {
			return err
		}
		p.SetSink(sink)
		return nil
	}
	end := func() { _ = sse.write(bridgeproto.TypeStreamEnd, with("events", seq)) }
	fail := func(code, msg string) error {
		res.Error = code
		_ = sse.event(bridgeproto.TypeStreamError, with("code", code, "message", msg, "events", seq))
		return nil
	}
	// handle writes one frame taken from p.C; done: the stream is over.
	handle := func(m bridgeproto.Message) (done bool, werr error) {
		switch v := m.(type) {
		case *bridgeproto.StreamOpen:
			werr = open(v.Status, v.Headers)
		case *bridgeproto.StreamEvent:
			if werr = open(http.StatusOK, nil); werr == nil {
				werr = emit(v.Event, v.Data)
			}
		case *bridgeproto.StreamEnd:
			if werr = open(http.StatusOK, nil); werr == nil {
				end()
			}
			return true, nil
		case *bridgeproto.StreamError:
			out.Cancelled, out.Status = false, 0
			return true, fail(orDefault(v.Code, "relay_failed"), clip(v.Message))
		case *bridgeproto.APIResponse:
			// A page that answered in one piece: open, one event, end,
			// written together.
			if v.Error != "" {
				out.Cancelled, out.Status = false, 0
				return true, fail("relay_failed", clip(v.Error))
			}
			more = true
			if werr = open(v.Status, v.Headers); werr == nil {
				if werr = emit("", v.Body); werr == nil {
					end()
				}
			}
			return true, nil
		}
		return false, werr
	}
	for {
		p.Lock()
		sinkFailed := broken
		gone := sinkFailed
		if !gone && unflushed && len(p.C) == 0 {
			unflushed = false
			gone = sse.rc.Flush() != nil
		}
		p.Unlock()
		if gone {
			if !sinkFailed { // else the sink has cancelled already
				s.browser.hub.CancelRemote(p, "caller_gone")
			}
			res.Error = "caller_gone"
			return nil
		}
		m, err := first, error(nil)
		if first != nil {
			first = nil
		} else {
			m, err = s.waitFrame(r.Context(), p, timeout)
		}
		if err != nil {
			p.Lock() // the sink may be writing; held while the error event is written
			p.ClearSink()
			defer p.Unlock()
			if broken || errors.Is(err, errCallerGone) {
				res.Error = "caller_gone"
				return nil
			}
			ae := api.AsError(err)
			if ae.Code != "request_cancelled" {
				out.Cancelled, out.Status = false, 0
			}
			return fail(ae.Code, ae.Message)
		}
		var done bool
		var werr error
		p.Write(func() {
			if done, werr = handle(m); done {
				p.ClearSink() // nothing may follow stream_end
			}
		})
		if done {
			return nil
		}
		if werr != nil {
			// The caller's connection broke mid-stream.
			s.browser.hub.CancelRemote(p, "caller_gone")
			return nil
		}
	}
}

// headerDelay is how long an SSE answer's status line and headers wait to
// go out together with the first event (performance, issue 15: one write
// and one wake-up of the caller fewer, while the plugin is at work). A
// plugin slower than this gets them on their own, so a caller still learns
// at once that the stream is accepted.
const headerDelay = 20 * time.Millisecond

// firstFrame waits up to headerDelay for p's first frame; without one the
// headers are flushed and nil is returned (the caller's loop then waits as
// usual, and also sees the caller leaving or p ending).
func firstFrame(ctx context.Context, p *bridge.Pending, sse sseWriter) bridgeproto.Message {
	t := time.NewTimer(headerDelay)
	defer t.Stop()
	select {
	case m := <-p.C:
		return m
	case <-t.C:
		_ = sse.rc.Flush()
	case <-ctx.Done():
	case <-p.Done():
	}
	return nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// errCode is err's API code for a log line, "" for none.
func errCode(err error) string {
	if err == nil {
		return ""
	}
	return api.AsError(err).Code
}
