package bridgeproto

import (
	"encoding/json"

	"github.com/svcd/svcd/shared/systemstate"
)

// Message is any parsed inbound message.
type Message interface{ MsgType() string }

// Hello is the plugin's first message. Until it arrives with a valid
// authenticator the daemon sends nothing and accepts nothing else. It
// carries exactly one of Token (the shared pairing token, browser_pairing =
// "token" only), Code (a one-time pairing code from svcctl browser pair) or
// Credential (the per-client credential a code was exchanged for).
type Hello struct {
	Type             string          `json:"type"`
	Token            string          `json:"token,omitempty"`
	Code             string          `json:"code,omitempty"`
	Credential       string          `json:"credential,omitempty"`
	ClientID         string          `json:"clientId"`
	Browser          string          `json:"browser,omitempty"`
	ExtensionVersion string          `json:"extension_version,omitempty"`
	Platforms        []string        `json:"platforms,omitempty"`
	ShellRuntime     json.RawMessage `json:"shell_runtime,omitempty"`
	// Capabilities the plugin supports (CapStreamEvents …); unknown names
	// are ignored.
	Capabilities []string `json:"capabilities,omitempty"`
}

// Has reports whether the hello announced capability name.
func (m *Hello) Has(name string) bool {
	for _, c := range m.Capabilities {
		if c == name {
			return true
		}
	}
	return false
}

// HelloOK confirms pairing and tells the plugin the heartbeat it must keep.
type HelloOK struct {
	Type           string `json:"type"`
	ClientID       string `json:"clientId"`
	ProtocolVer    int    `json:"protocol_version"`
	KeepaliveMs    int64  `json:"keepalive_ms"`
	MaxMessageSize int64  `json:"max_message_bytes"`
	ServerVersion  string `json:"server_version,omitempty"`
	// Credential is sent once, in the hello_ok that answers a hello with a
	// pairing code: the plugin stores it and sends it in every later hello.
	Credential string `json:"credential,omitempty"`
	// Scopes are what this client may do (bridge, host-ops); absent for a
	// client paired with the shared token.
	Scopes []string `json:"scopes,omitempty"`
	// Capabilities are those of the hello's the daemon takes on this
	// connection; absent when none (an older daemon never sends it).
	Capabilities []string `json:"capabilities,omitempty"`
}

// Pairing refusals: the error frame the daemon sends before closing a
// connection with 4401 (docs/bridge-protocol.md "Pairing").
const (
	ErrPairingFailed      = "pairing_failed"         // no valid authenticator
	ErrCodeInvalid        = "pairing_code_invalid"   // unknown or already used
	ErrCodeExpired        = "pairing_code_expired"   // issued, but past its TTL
	ErrCredentialInvalid  = "credential_invalid"     // unknown, revoked, or for another clientId
	ErrTokenPairingOff    = "token_pairing_disabled" // browser_pairing = "codes"
	ErrPairingRateLimited = "pairing_rate_limited"   // too many failed attempts from this address
	ErrCredentialRevoked  = "credential_revoked"     // sent on a live connection before 4401
	MaxPairingCodeLen     = 64
	MaxCredentialLen      = 128
)

// ProtocolVersion is bumped on incompatible changes to these messages.
const ProtocolVersion = 1

// AutomationConversation is one active link's automation view, used by the
// plugin overlays (SPEC.md automation_conversations).
type AutomationConversation struct {
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
	Platform             string `json:"platform,omitempty"`
	AutomationStatus     string `json:"automation_status"`
	PauseReason          string `json:"pause_reason"`
}

// StateSnapshot is pushed on connect and after every system mode change.
type StateSnapshot struct {
	Type    string            `json:"type"`
	System  systemstate.State `json:"system"`
	Browser SnapshotBrowser   `json:"browser"`
}

// SnapshotBrowser is the browser part of state_snapshot.
type SnapshotBrowser struct {
	AutomationConversations []AutomationConversation `json:"automation_conversations"`
}

// ActionRequest asks the daemon to switch the system mode.
type ActionRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"`
}

// ActionRequestResult answers ActionRequest; on success a fresh
// state_snapshot follows as for every mode change.
type ActionRequestResult struct {
	Type      string             `json:"type"`
	RequestID string             `json:"requestId,omitempty"`
	Action    string             `json:"action"`
	OK        bool               `json:"ok"`
	Error     *ErrorBody         `json:"error,omitempty"`
	System    *systemstate.State `json:"system,omitempty"`
}

// Credentials is a captured login. Header and cookie values exist only in
// the parsed message; Metadata reduces them and Scrub drops them.
type Credentials struct {
	Type     string            `json:"type"`
	Platform string            `json:"platform"`
	Account  string            `json:"account,omitempty"`
	Host     string            `json:"host,omitempty"`
	TabID    int64             `json:"tabId,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Cookies  map[string]string `json:"cookies,omitempty"`
}

// Endpoint is one captured API endpoint. Path never carries a query string.
type Endpoint struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Kind      string `json:"kind,omitempty"`
	Streaming bool   `json:"streaming,omitempty"`
}

// APIEndpoints is the captured endpoint list of one platform page.
type APIEndpoints struct {
	Type      string     `json:"type"`
	Platform  string     `json:"platform"`
	Account   string     `json:"account,omitempty"`
	Host      string     `json:"host,omitempty"`
	Endpoints []Endpoint `json:"endpoints"`
}

// APIRequest asks the plugin to perform one HTTP request inside the page,
// with the page's own cookies. Headers are the caller's extras; they are
// passed through and never stored or logged.
type APIRequest struct {
	Type         string            `json:"type"`
	RequestID    string            `json:"requestId"`
	Platform     string            `json:"platform"`
	Method       string            `json:"method"`
	Path         string            `json:"path,omitempty"`
	Prompt       string            `json:"prompt,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         json.RawMessage   `json:"body,omitempty"`
	ResponseMode string            `json:"responseMode"`
	TimeoutMs    int64             `json:"timeoutMs,omitempty"`
}

// APIResponse is the buffered answer to APIRequest. Error is set when the
// page could not perform the request at all (Status is then 0).
type APIResponse struct {
	Type      string            `json:"type"`
	RequestID string            `json:"requestId"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers,omitempty"`
	Body      string            `json:"body"`
	Error     string            `json:"error,omitempty"`
}

// StreamOpen starts a streamed answer.
type StreamOpen struct {
	Type      string            `json:"type"`
	RequestID string            `json:"requestId"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// StreamEvent is one chunk; seq increases by at least one per event.
type StreamEvent struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	Seq       int64  `json:"seq"`
	Event     string `json:"event,omitempty"`
	Data      string `json:"data"`
}

// StreamEvents is several events of one request in one frame, in order:
// the same as a stream_event frame for each, one after the other. Only a
// plugin whose hello_ok listed CapStreamEvents may send it.
type StreamEvents struct {
	Type      string       `json:"type"`
	RequestID string       `json:"requestId"`
	Events    []BatchEvent `json:"events"`
}

// BatchEvent is one event of a stream_events frame: stream_event's fields
// but the request id.
type BatchEvent struct {
	Seq   int64  `json:"seq"`
	Event string `json:"event,omitempty"`
	Data  string `json:"data"`
}

// MaxBatchEvents bounds the events of one stream_events frame (the frame's
// size is bounded by max_message_bytes as every frame's).
const MaxBatchEvents = 4096

// StreamEnd finishes a streamed answer.
type StreamEnd struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
}

// StreamError aborts a streamed answer.
type StreamError struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message"`
}

// RequestCancel tells the plugin to abort a relayed request or stream.
type RequestCancel struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	Platform  string `json:"platform"`
	Reason    string `json:"reason,omitempty"`
}

// Action is a management action sent to the plugin.
type Action struct {
	Type     string         `json:"type"`
	ActionID string         `json:"actionId"`
	Action   string         `json:"action"`
	Platform string         `json:"platform,omitempty"`
	Options  map[string]any `json:"options,omitempty"`
}

// ActionResult is the plugin's structured answer to Action.
type ActionResult struct {
	Type         string          `json:"type"`
	ActionID     string          `json:"actionId"`
	Accepted     bool            `json:"accepted"`
	Completed    bool            `json:"completed"`
	Failed       bool            `json:"failed"`
	Reason       string          `json:"reason,omitempty"`
	Target       json.RawMessage `json:"target,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ShellRuntime json.RawMessage `json:"shell_runtime,omitempty"`
}

// ShellRuntimeUpdate reports the plugin's shell runtime outside an action.
type ShellRuntimeUpdate struct {
	Type         string          `json:"type"`
	ShellRuntime json.RawMessage `json:"shell_runtime"`
}

// Keepalive is the data-frame heartbeat, sent both ways.
type Keepalive struct {
	Type string `json:"type"`
	TS   int64  `json:"ts,omitempty"`
}

// ErrorBody is a machine-readable refusal.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error tells the plugin an inbound message was refused; the connection stays.
type Error struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	RefType string `json:"ref_type,omitempty"`
	RefID   string `json:"ref_id,omitempty"`
}

func (*Hello) MsgType() string              { return TypeHello }
func (*StreamEvents) MsgType() string       { return TypeStreamEvents }
func (*ActionRequest) MsgType() string      { return TypeActionRequest }
func (*Credentials) MsgType() string        { return TypeCredentials }
func (*APIEndpoints) MsgType() string       { return TypeAPIEndpoints }
func (*APIResponse) MsgType() string        { return TypeAPIResponse }
func (*StreamOpen) MsgType() string         { return TypeStreamOpen }
func (*StreamEvent) MsgType() string        { return TypeStreamEvent }
func (*StreamEnd) MsgType() string          { return TypeStreamEnd }
func (*StreamError) MsgType() string        { return TypeStreamError }
func (*ActionResult) MsgType() string       { return TypeActionResult }
func (*ShellRuntimeUpdate) MsgType() string { return TypeShellRuntime }
func (*Keepalive) MsgType() string          { return TypeKeepalive }
