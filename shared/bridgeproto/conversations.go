package bridgeproto

import (
	"unicode/utf8"
)

// Conversation messages (issues 10, 12 and 14 share this schema; see
// docs/bridge-protocol.md "Conversation messages").
const (
	TypeConversationLink    = "conversation_link"    // in: this connection holds a conversation now
	TypeConversationMessage = "conversation_message" // in: one final AI reply
	TypeConversationInject  = "conversation_inject"  // out: type text into a conversation and send it
	TypeInjectResult        = "inject_result"        // in: answer to conversation_inject
)

// Limits of the conversation messages.
const (
	MaxConversationIDLen = 128
	MaxMessageTextLen    = 256 << 10
	MaxURLLen            = 2048
)

// Inject kinds of conversation_inject.
const (
	InjectRenewal           = "renewal"
	InjectInstructionReport = "instruction_report"
)

// Message roles of conversation_message.
const (
	RoleAssistant = "assistant"
	RoleUser      = "user"
)

// Delivery levels of inject_result.
const (
	DeliveryUnconfirmed = 0 // typed but not confirmed
	DeliveryAnswered    = 1 // handed to the page and the page's send request answered
)

// ConversationLink says the sending connection holds this conversation now;
// seen again, the newest connection wins.
type ConversationLink struct {
	Type                 string `json:"type"`
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
	URL                  string `json:"url,omitempty"`
	Title                string `json:"title,omitempty"`
}

// ConversationMessage is one final AI reply. MessageID is stable for that
// reply: seen again for the same conversation it is a repeat.
type ConversationMessage struct {
	Type                 string `json:"type"`
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
	MessageID            string `json:"message_id"`
	Text                 string `json:"text"`
	Role                 string `json:"role,omitempty"`
}

// ConversationInject asks the plugin to type Text into the conversation's
// input box and send it.
type ConversationInject struct {
	Type                 string `json:"type"`
	InjectID             string `json:"inject_id"`
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
	Kind                 string `json:"kind"`
	Text                 string `json:"text"`
}

// DeliveryAck says how far an injection got.
type DeliveryAck struct {
	Level      int    `json:"level"`
	StatusCode int    `json:"status_code,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// InjectResult answers ConversationInject.
type InjectResult struct {
	Type        string       `json:"type"`
	InjectID    string       `json:"inject_id"`
	OK          bool         `json:"ok"`
	DeliveryAck *DeliveryAck `json:"delivery_ack,omitempty"`
	Error       *ErrorBody   `json:"error,omitempty"`
}

func (*ConversationLink) MsgType() string    { return TypeConversationLink }
func (*ConversationMessage) MsgType() string { return TypeConversationMessage }
func (*ConversationInject) MsgType() string  { return TypeConversationInject }
func (*InjectResult) MsgType() string        { return TypeInjectResult }

// ValidConversationID reports whether id is a local_conversation_id:
// 1-128 bytes of [A-Za-z0-9._:-].
func ValidConversationID(id string) bool {
	if id == "" || len(id) > MaxConversationIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// checkConversation validates the three fields naming a conversation.
func checkConversation(platform, local, remote string) *ParseError {
	if e := checkPlatform(platform); e != nil {
		return e
	}
	if local == "" {
		return perr("missing_field", "local_conversation_id", "field \"local_conversation_id\" is required")
	}
	if !ValidConversationID(local) {
		return perr("invalid_field", "local_conversation_id", "field \"local_conversation_id\" must be 1-128 bytes of [A-Za-z0-9._:-]")
	}
	return checkID("remote_conversation_id", remote, true)
}

func (m *ConversationLink) validate() *ParseError {
	if e := checkConversation(m.Platform, m.LocalConversationID, m.RemoteConversationID); e != nil {
		return e
	}
	if len(m.URL) > MaxURLLen || !utf8.ValidString(m.URL) {
		return perr("invalid_field", "url", "field \"url\" is longer than %d bytes", MaxURLLen)
	}
	for _, r := range m.URL {
		if r <= ' ' || r == 0x7f {
			return perr("invalid_field", "url", "field \"url\" must not contain spaces or control characters")
		}
	}
	return checkLabel("title", m.Title)
}

func (m *ConversationMessage) validate() *ParseError {
	if e := checkConversation(m.Platform, m.LocalConversationID, m.RemoteConversationID); e != nil {
		return e
	}
	if e := checkID("message_id", m.MessageID, true); e != nil {
		return e
	}
	if len(m.Text) > MaxMessageTextLen {
		return perr("invalid_field", "text", "field \"text\" is larger than %d bytes", MaxMessageTextLen)
	}
	switch m.Role {
	case "":
		m.Role = RoleAssistant
	case RoleAssistant, RoleUser:
	default:
		return perr("invalid_field", "role", "field \"role\" must be assistant or user")
	}
	return nil
}

// Validate checks an outbound ConversationInject before it is sent, with
// the same rules the plugin applies.
func (m *ConversationInject) Validate() error {
	if e := checkID("inject_id", m.InjectID, true); e != nil {
		return e
	}
	if e := checkConversation(m.Platform, m.LocalConversationID, m.RemoteConversationID); e != nil {
		return e
	}
	switch m.Kind {
	case InjectRenewal, InjectInstructionReport:
	default:
		return perr("invalid_field", "kind", "field \"kind\" must be renewal or instruction_report")
	}
	if m.Text == "" {
		return perr("missing_field", "text", "field \"text\" is required")
	}
	if len(m.Text) > MaxMessageTextLen {
		return perr("invalid_field", "text", "field \"text\" is larger than %d bytes", MaxMessageTextLen)
	}
	return nil
}

func (m *InjectResult) validate() *ParseError {
	if e := checkID("inject_id", m.InjectID, true); e != nil {
		return e
	}
	if a := m.DeliveryAck; a != nil {
		if a.Level != DeliveryUnconfirmed && a.Level != DeliveryAnswered {
			return perr("invalid_field", "delivery_ack", "delivery_ack.level must be 0 or 1")
		}
		if e := checkStatus("delivery_ack.status_code", a.StatusCode, true); e != nil {
			return e
		}
		if len(a.Detail) > 4096 {
			return perr("invalid_field", "delivery_ack", "delivery_ack.detail is longer than 4096 bytes")
		}
	}
	if m.OK && m.DeliveryAck == nil {
		return perr("missing_field", "delivery_ack", "an ok inject_result needs delivery_ack")
	}
	if !m.OK {
		if m.Error == nil {
			return perr("missing_field", "error", "a failed inject_result needs error {code, message}")
		}
		if e := checkID("error.code", m.Error.Code, true); e != nil {
			return e
		}
		if len(m.Error.Message) > 4096 {
			return perr("invalid_field", "error", "error.message is longer than 4096 bytes")
		}
	}
	return nil
}
