package bridgeproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Limits on inbound fields. They keep one message from bloating the FSM or
// the logs; the WebSocket read limit bounds the message as a whole.
const (
	MaxIDLen        = 128
	MaxLabelLen     = 256
	MaxHeaders      = 200
	MaxEndpoints    = 500
	MaxPathLen      = 2048
	MaxRawFieldSize = 64 << 10
)

// ParseError is a refused inbound message. Message never quotes a field's
// value: a refused credentials message must not leak its secrets into the
// error frame or a log line.
type ParseError struct {
	Code    string
	Field   string
	Message string
	RefType string
	RefID   string
}

func (e *ParseError) Error() string { return e.Code + ": " + e.Message }

func perr(code, field, format string, args ...any) *ParseError {
	return &ParseError{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// inbound maps each type the plugin may send to a constructor and validator.
var inbound = map[string]func() validator{
	TypeHello:         func() validator { return &Hello{} },
	TypeActionRequest: func() validator { return &ActionRequest{} },
	TypeCredentials:   func() validator { return &Credentials{} },
	TypeAPIEndpoints:  func() validator { return &APIEndpoints{} },
	TypeAPIResponse:   func() validator { return &APIResponse{} },
	TypeStreamOpen:    func() validator { return &StreamOpen{} },
	TypeStreamEvent:   func() validator { return &StreamEvent{} },
	TypeStreamEvents:  func() validator { return &StreamEvents{} },
	TypeStreamEnd:     func() validator { return &StreamEnd{} },
	TypeStreamError:   func() validator { return &StreamError{} },
	TypeActionResult:  func() validator { return &ActionResult{} },
	TypeShellRuntime:  func() validator { return &ShellRuntimeUpdate{} },
	TypeKeepalive:     func() validator { return &Keepalive{} },

	TypeConversationLink:    func() validator { return &ConversationLink{} },
	TypeConversationMessage: func() validator { return &ConversationMessage{} },
	TypeInjectResult:        func() validator { return &InjectResult{} },
	TypeConversationLoop:    func() validator { return &ConversationLoop{} },
}

type validator interface {
	Message
	validate() *ParseError
}

// Parse decodes and validates one inbound message. Unknown fields are
// ignored (a newer plugin may send more); unknown types, wrong field types
// and failed rules give a *ParseError.
func Parse(data []byte) (Message, error) {
	if !utf8.Valid(data) {
		return nil, perr("invalid_utf8", "", "message is not valid UTF-8")
	}
	typ, leading := leadingType(data)
	if !leading {
		var pe *ParseError
		if typ, pe = typeOf(data); pe != nil {
			return nil, pe
		}
	}
	mk, ok := inbound[typ]
	if !ok {
		// Neither the message text nor ref_type echoes an unknown type: it
		// is an arbitrary string from the wire and both end up in logs.
		return nil, &ParseError{Code: "unknown_type", Field: "type", Message: "unknown message type; see docs/bridge-protocol.md"}
	}
	var m validator
	if leading {
		m = fastDecode(typ, data) // nil for anything unusual
	}
	if m == nil {
		var pe *ParseError
		if m, pe = decodeGeneral(typ, data, mk); pe != nil {
			return nil, pe
		}
	}
	return finish(typ, m)
}

// decodeGeneral is the one full decode (performance, issue 15) of what
// fastDecode does not take. json.Unmarshal checks the whole input first, so
// a truncated message or a second value after the object is a syntax error
// here, as it is to a plugin's JSON.parse.
func decodeGeneral(typ string, data []byte, mk func() validator) (validator, *ParseError) {
	m := mk()
	if err := json.Unmarshal(data, m); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, &ParseError{Code: "malformed_json", Message: "message is not one JSON object: " + jsonErrText(err), RefType: typ}
		}
		e := perr("invalid_field", "", "%s: %s", typ, jsonErrText(err))
		e.RefType = typ
		return nil, e
	}
	// A second "type" key (JSON keeps the last) must not make the decoded
	// message disagree with the type it was decoded as.
	if reflect.ValueOf(m).Elem().FieldByName("Type").String() != typ {
		return nil, &ParseError{Code: "invalid_field", Field: "type", Message: "message has more than one \"type\"", RefType: typ}
	}
	return m, nil
}

// finish validates a decoded message.
func finish(typ string, m validator) (Message, error) {
	if e := m.validate(); e != nil {
		e.RefType = typ
		if e.RefID == "" {
			e.RefID = refID(m)
		}
		return nil, e
	}
	return m, nil
}

// leadingType is the fast path of typeOf for what every sender writes: an
// object whose first key is exactly "type" with a plain string value. It
// reports false for anything else (another first key, other letter case,
// escapes), which typeOf then reads the general way.
func leadingType(data []byte) (string, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", false
	}
	i = skipSpace(data, i+1)
	if !bytes.HasPrefix(data[i:], []byte(`"type"`)) {
		return "", false
	}
	i = skipSpace(data, i+len(`"type"`))
	if i >= len(data) || data[i] != ':' {
		return "", false
	}
	i = skipSpace(data, i+1)
	if i >= len(data) || data[i] != '"' {
		return "", false
	}
	start := i + 1
	for j := start; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			if j == start {
				return "", false
			}
			return string(data[start:j]), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// PeekType is a message's "type" when it is the object's first key with a
// plain string value, as every sender writes it, and "" otherwise. It
// validates nothing: for a reader that then decodes the message in full
// (Parse finds "type" anywhere).
func PeekType(data []byte) string {
	t, _ := leadingType(data)
	return t
}

// skipSpace skips JSON whitespace from i.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// typeOf reads the message's "type" (matched like encoding/json matches
// field names, case-insensitively) without decoding the rest: keys before it
// are skipped, and everything after it is left to the one typed decode.
func typeOf(data []byte) (string, *ParseError) {
	dec := json.NewDecoder(bytes.NewReader(data))
	malformed := func(err error) (string, *ParseError) {
		return "", perr("malformed_json", "", "message is not a JSON object: %s", jsonErrText(err))
	}
	tok, err := dec.Token()
	if err != nil {
		return malformed(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return "", perr("malformed_json", "", "message is not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return malformed(err)
		}
		if k, _ := key.(string); !strings.EqualFold(k, "type") {
			continue
		}
		var typ string
		if json.Unmarshal(raw, &typ) != nil || typ == "" {
			break
		}
		return typ, nil
	}
	if _, err := dec.Token(); err != nil { // the closing brace of a type-less object
		return malformed(err)
	}
	return "", perr("missing_type", "type", "message needs a string field \"type\"")
}

// jsonErrText describes a decoding failure without quoting the input.
func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "want a JSON object, got " + te.Value
		}
		return fmt.Sprintf("field %q must not be %s", te.Field, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return "undecodable JSON"
}

func refID(m Message) string {
	switch v := m.(type) {
	case *APIResponse:
		return clip(v.RequestID)
	case *StreamOpen:
		return clip(v.RequestID)
	case *StreamEvent:
		return clip(v.RequestID)
	case *StreamEvents:
		return clip(v.RequestID)
	case *StreamEnd:
		return clip(v.RequestID)
	case *StreamError:
		return clip(v.RequestID)
	case *ActionResult:
		return clip(v.ActionID)
	case *ActionRequest:
		return clip(v.RequestID)
	}
	return ""
}

func clip(s string) string {
	if len(s) > MaxIDLen {
		return ""
	}
	return s
}

// checkID enforces a required, bounded, printable identifier.
func checkID(field, v string, required bool) *ParseError {
	if v == "" {
		if required {
			return perr("missing_field", field, "field %q is required", field)
		}
		return nil
	}
	if len(v) > MaxIDLen {
		return perr("invalid_field", field, "field %q is longer than %d bytes", field, MaxIDLen)
	}
	for _, r := range v {
		if r <= ' ' || r == 0x7f {
			return perr("invalid_field", field, "field %q must not contain spaces or control characters", field)
		}
	}
	return nil
}

func checkLabel(field, v string) *ParseError {
	if len(v) > MaxLabelLen {
		return perr("invalid_field", field, "field %q is longer than %d bytes", field, MaxLabelLen)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return perr("invalid_field", field, "field %q must not contain control characters", field)
	}
	return nil
}

func checkPlatform(v string) *ParseError {
	if v == "" {
		return perr("missing_field", "platform", "field \"platform\" is required")
	}
	if !ValidPlatform(v) {
		return perr("invalid_platform", "platform", "platform must be platform_a, platform_b or platform_c")
	}
	return nil
}

func checkRaw(field string, v json.RawMessage) *ParseError {
	if len(v) > MaxRawFieldSize {
		return perr("invalid_field", field, "field %q is larger than %d bytes", field, MaxRawFieldSize)
	}
	return nil
}

func checkStatus(field string, v int, allowZero bool) *ParseError {
	if (v == 0 && allowZero) || (v >= 100 && v <= 599) {
		return nil
	}
	return perr("invalid_field", field, "field %q must be an HTTP status (100-599)", field)
}

// checkHeaderMap bounds a name→value map and checks the names only: the
// values may be secrets and are never looked at beyond their size.
func checkHeaderMap(field string, m map[string]string) *ParseError {
	if len(m) > MaxHeaders {
		return perr("invalid_field", field, "field %q has more than %d entries", field, MaxHeaders)
	}
	for name, val := range m {
		if name == "" || len(name) > MaxLabelLen || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || r == ':' }) {
			return perr("invalid_field", field, "field %q holds an invalid name", field)
		}
		if len(val) > 16<<10 {
			return perr("invalid_field", field, "field %q holds a value over 16 KiB", field)
		}
	}
	return nil
}

func (m *Hello) validate() *ParseError {
	n := 0
	for _, v := range []string{m.Token, m.Code, m.Credential} {
		if v != "" {
			n++
		}
	}
	if n == 0 {
		return perr("missing_field", "credential", "hello needs one of \"credential\", \"code\" (a pairing code) or \"token\"")
	}
	if n > 1 {
		return perr("invalid_field", "credential", "hello carries only one of \"credential\", \"code\" and \"token\"")
	}
	if len(m.Token) > 1024 {
		return perr("invalid_field", "token", "field \"token\" is too long")
	}
	if len(m.Code) > MaxPairingCodeLen || strings.ContainsFunc(m.Code, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return perr("invalid_field", "code", "field \"code\" must be at most %d printable bytes", MaxPairingCodeLen)
	}
	if len(m.Credential) > MaxCredentialLen || strings.ContainsFunc(m.Credential, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return perr("invalid_field", "credential", "field \"credential\" must be at most %d bytes with no spaces or control characters", MaxCredentialLen)
	}
	if e := checkID("clientId", m.ClientID, true); e != nil {
		return e
	}
	// Records are keyed <platform>/<clientId>/<account> and an account may
	// hold a slash; a slash in clientId would let client "c1/x" with account
	// "y" land on the record of client "c1" with account "x/y".
	if strings.Contains(m.ClientID, "/") {
		return perr("invalid_field", "clientId", "field \"clientId\" must not contain \"/\"")
	}
	if e := checkLabel("browser", m.Browser); e != nil {
		return e
	}
	if e := checkLabel("extension_version", m.ExtensionVersion); e != nil {
		return e
	}
	if len(m.Platforms) > 16 {
		return perr("invalid_field", "platforms", "field \"platforms\" has more than 16 entries")
	}
	for _, p := range m.Platforms {
		if !ValidPlatform(p) {
			return perr("invalid_platform", "platforms", "platforms may hold platform_a, platform_b and platform_c only")
		}
	}
	if len(m.Capabilities) > 32 {
		return perr("invalid_field", "capabilities", "field \"capabilities\" has more than 32 entries")
	}
	for _, c := range m.Capabilities {
		if e := checkLabel("capabilities", c); e != nil {
			return e
		}
	}
	return checkRaw("shell_runtime", m.ShellRuntime)
}

func (m *ActionRequest) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, false); e != nil {
		return e
	}
	switch m.Action {
	case SystemPause, SystemResume, SystemDrain:
	case "":
		return perr("missing_field", "action", "field \"action\" is required: pause, resume or drain")
	default:
		return perr("invalid_action", "action", "action must be pause, resume or drain")
	}
	if len(m.Reason) > 1024 {
		return perr("invalid_field", "reason", "field \"reason\" is longer than 1024 bytes")
	}
	return nil
}

func (m *Credentials) validate() *ParseError {
	if e := checkPage(m.Platform, m.Account, m.Host); e != nil {
		return e
	}
	if e := checkHeaderMap("headers", m.Headers); e != nil {
		return e
	}
	if e := checkHeaderMap("cookies", m.Cookies); e != nil {
		return e
	}
	if len(m.Headers)+len(m.Cookies) == 0 {
		return perr("missing_field", "headers", "credentials need at least one header or cookie")
	}
	return nil
}

// checkPage validates what names the platform page a capture came from
// (the parts of a record's key).
func checkPage(platform, account, host string) *ParseError {
	if e := checkPlatform(platform); e != nil {
		return e
	}
	if e := checkLabel("account", account); e != nil {
		return e
	}
	return checkHost(host)
}

func checkHost(h string) *ParseError {
	if len(h) > MaxLabelLen || strings.ContainsAny(h, "/?#@ \t\r\n") {
		return perr("invalid_field", "host", "field \"host\" must be a bare host name (no scheme, path or credentials)")
	}
	return nil
}

func (m *APIEndpoints) validate() *ParseError {
	if e := checkPage(m.Platform, m.Account, m.Host); e != nil {
		return e
	}
	if len(m.Endpoints) > MaxEndpoints {
		return perr("invalid_field", "endpoints", "field \"endpoints\" has more than %d entries", MaxEndpoints)
	}
	for i := range m.Endpoints {
		ep := &m.Endpoints[i]
		// A captured URL may carry tokens in its query: keep the path only.
		if j := strings.IndexAny(ep.Path, "?#"); j >= 0 {
			ep.Path = ep.Path[:j]
		}
		if ep.Path == "" || ep.Path[0] != '/' || len(ep.Path) > MaxPathLen {
			return perr("invalid_field", "endpoints", "endpoints[%d].path must be an absolute path", i)
		}
		ep.Method = strings.ToUpper(ep.Method)
		if ep.Method == "" {
			ep.Method = http.MethodGet
		}
		if !validMethod(ep.Method) {
			return perr("invalid_field", "endpoints", "endpoints[%d].method is not an HTTP method", i)
		}
		if e := checkLabel("endpoints.kind", ep.Kind); e != nil {
			return e
		}
	}
	return nil
}

// validMethod accepts the methods a page can relay.
func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// ValidMethod reports whether m (upper case) is a relayable HTTP method.
func ValidMethod(m string) bool { return validMethod(m) }

func (m *APIResponse) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, true); e != nil {
		return e
	}
	if e := checkStatus("status", m.Status, m.Error != ""); e != nil {
		return e
	}
	if len(m.Error) > 4096 {
		return perr("invalid_field", "error", "field \"error\" is longer than 4096 bytes")
	}
	return checkHeaderMap("headers", m.Headers)
}

func (m *StreamOpen) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, true); e != nil {
		return e
	}
	if e := checkStatus("status", m.Status, true); e != nil {
		return e
	}
	return checkHeaderMap("headers", m.Headers)
}

func (m *StreamEvent) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, true); e != nil {
		return e
	}
	if m.Seq < 0 {
		return perr("invalid_field", "seq", "field \"seq\" must not be negative")
	}
	return checkLabel("event", m.Event)
}

func (m *StreamEvents) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, true); e != nil {
		return e
	}
	if len(m.Events) == 0 || len(m.Events) > MaxBatchEvents {
		return perr("invalid_field", "events", "field \"events\" must hold 1 to %d events", MaxBatchEvents)
	}
	for _, ev := range m.Events {
		if ev.Seq < 0 {
			return perr("invalid_field", "events", "an event's \"seq\" must not be negative")
		}
		if e := checkLabel("event", ev.Event); e != nil {
			e.Field = "events"
			return e
		}
	}
	return nil
}

// Split returns the frame's events as stream_event messages, in order.
func (m *StreamEvents) Split() []*StreamEvent {
	out := make([]*StreamEvent, len(m.Events))
	for i, ev := range m.Events {
		out[i] = &StreamEvent{Type: TypeStreamEvent, RequestID: m.RequestID, Seq: ev.Seq, Event: ev.Event, Data: ev.Data}
	}
	return out
}

func (m *StreamEnd) validate() *ParseError { return checkID("requestId", m.RequestID, true) }

func (m *StreamError) validate() *ParseError {
	if e := checkID("requestId", m.RequestID, true); e != nil {
		return e
	}
	if len(m.Message) > 4096 {
		return perr("invalid_field", "message", "field \"message\" is longer than 4096 bytes")
	}
	return checkID("code", m.Code, false)
}

func (m *ActionResult) validate() *ParseError {
	if e := checkID("actionId", m.ActionID, true); e != nil {
		return e
	}
	if len(m.Reason) > 4096 {
		return perr("invalid_field", "reason", "field \"reason\" is longer than 4096 bytes")
	}
	for name, raw := range map[string]json.RawMessage{"target": m.Target, "result": m.Result, "shell_runtime": m.ShellRuntime} {
		if e := checkRaw(name, raw); e != nil {
			return e
		}
	}
	return nil
}

func (m *ShellRuntimeUpdate) validate() *ParseError {
	if len(m.ShellRuntime) == 0 {
		return perr("missing_field", "shell_runtime", "field \"shell_runtime\" is required")
	}
	return checkRaw("shell_runtime", m.ShellRuntime)
}

func (m *Keepalive) validate() *ParseError { return nil }
