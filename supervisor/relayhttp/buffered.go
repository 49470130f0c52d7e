package relayhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/workers/relay"
)

// bufferedRelay collects the page's answer (one api_response, or a stream
// of events joined) and writes it as one JSON body.
func (x *Relay) bufferedRelay(w http.ResponseWriter, r *http.Request, p *bridge.Pending, timeout time.Duration, res *bridge.RelayResult, out *relay.Outcome) error {
	deadline := time.Now().Add(timeout)
	maxBody := x.Hub.Config().MaxMessageBytes
	var body strings.Builder
	for {
		m, err := x.waitFrame(r.Context(), p, time.Until(deadline))
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
				return api.NewError(http.StatusBadGateway, "relay_failed", "the page could not perform the request: %s", api.Clip(v.Error))
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
				x.Hub.CancelRemote(p, "response_too_large")
				res.Error = "response_too_large"
				return api.NewError(http.StatusBadGateway, "response_too_large",
					"the buffered answer grew past %d bytes (browser_max_message_bytes); use responseMode sse for large answers", maxBody)
			}
			body.WriteString(v.Data)
			res.Events++
			continue
		case *bridgeproto.StreamError:
			out.Cancelled, out.Status = false, 0
			return api.NewError(http.StatusBadGateway, "relay_failed", "the stream failed: %s", api.Clip(v.Message))
		case *bridgeproto.StreamEnd:
			res.Body = body.String()
		default:
			continue
		}
		out.Cancelled, out.Status = false, res.Status
		out.RetryAfterMs = retryAfterMs(res.Headers)
		writeBuffered(w, BufferedAnswer{
			RequestID: res.RequestID, Platform: res.Platform, ClientID: res.ClientID,
			Status: res.Status, Headers: res.Headers, Body: res.Body,
			DurationMs: time.Since(deadline.Add(-timeout)).Milliseconds(),
		})
		return nil
	}
}

// BufferedAnswer is the data of a buffered relay's answer. Its fields are in
// the order json.Marshal writes a map's keys (sorted), so the bytes are the
// ones the generic map gave, without building and sorting a map per request.
type BufferedAnswer struct {
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
