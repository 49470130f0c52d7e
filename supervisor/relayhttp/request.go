package relayhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
)

// Request is the body of POST /v1/browser/request.
type Request struct {
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
func (q *Request) validate() error {
	q.Platform = strings.TrimSpace(q.Platform)
	switch {
	case q.Platform == "":
		return api.Unprocessable("missing_field", "field \"platform\" is required: platform_a, platform_b or platform_c")
	case !bridgeproto.ValidPlatform(q.Platform):
		return api.Unprocessable("invalid_platform", "unknown platform %q: want platform_a, platform_b or platform_c", api.Clip(q.Platform))
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
