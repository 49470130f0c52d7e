package bridgeproto

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Conversation messages: the plugin reports which conversation it holds and
// each final AI reply in it; the daemon asks the plugin to type a text
// (an instruction report, a renewal message) into a conversation and hears
// back whether it was delivered.
const (
	TypeConversationLink    = "conversation_link"    // in
	TypeConversationMessage = "conversation_message" // in: one final AI reply
	TypeConversationInject  = "conversation_inject"  // out: type this text into the conversation
	TypeInjectResult        = "inject_result"        // in: answer to conversation_inject
	TypeConversationLoop    = "conversation_loop"    // in: the plugin's instruction loop ran or stopped
)

// Client loop states of conversation_loop.
const (
	LoopRunning = "running"
	LoopStopped = "stopped"
)

// Inject kinds.
const (
	InjectInstructionReport = "instruction_report"
	InjectRenewal           = "renewal"
)

// MaxConversationText bounds a reported reply or an injected text.
const MaxConversationText = 256 << 10

// identifier is the rule for local conversation ids and delivery keys.
var identifier = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidLocalConversationID reports whether id is 1–128 bytes of [A-Za-z0-9._:-].
func ValidLocalConversationID(id string) bool { return identifier.MatchString(id) }

// ValidDeliveryKey reports whether k is a delivery_key: 1–128 bytes of
// [A-Za-z0-9._:-]. A key is built from ids only, never from message text.
func ValidDeliveryKey(k string) bool { return identifier.MatchString(k) }

// RenewalDeliveryKey is the delivery_key of a renewal job: its id and
// creation time, both kept across recovery, so every redelivery carries the
// same key; the time keeps a job of a fresh store (whose ids start again at
// job-1) from being taken for one a plugin delivered before.
func RenewalDeliveryKey(jobID string, created time.Time) string {
	return "renewal:" + jobID + "." + strconv.FormatInt(created.UnixNano(), 36)
}

// ReportDeliveryKey is the delivery_key of an instruction report: its task
// (batch) id and when the batch started, for the same reason as a renewal's
// (task ids of a fresh store start again at task-1).
func ReportDeliveryKey(taskID string, started time.Time) string {
	return "report:" + taskID + "." + strconv.FormatInt(started.UnixNano(), 36)
}

// ConversationRef names a conversation on both sides.
type ConversationRef struct {
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
}

// ConversationLink says this plugin connection holds the conversation now.
type ConversationLink struct {
	Type string `json:"type"`
	ConversationRef
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
}

// ConversationMessage is one final AI reply (never a partial).
type ConversationMessage struct {
	Type string `json:"type"`
	ConversationRef
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Role      string `json:"role,omitempty"`
}

// ConversationLoop is the plugin's instruction client loop for one
// conversation: running with its rounds so far, or stopped and why (round
// limit reached, user typing, three failures in a row). The daemon keeps the
// latest in the conversation record (client_loop).
type ConversationLoop struct {
	Type string `json:"type"`
	ConversationRef
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	Rounds    int    `json:"rounds"`
	MaxRounds int    `json:"max_rounds,omitempty"`
}

// ConversationInject asks the plugin to type Text into the conversation.
type ConversationInject struct {
	Type     string `json:"type"`
	InjectID string `json:"inject_id"`
	ConversationRef
	Kind string `json:"kind"`
	Text string `json:"text"`
	// DeliveryKey names what is delivered, stable across redeliveries of the
	// same thing (a renewal job, a task's report), so a plugin that remembers
	// it can type it once across a daemon crash. Optional: a plugin that
	// ignores it keeps the at-least-once behaviour.
	DeliveryKey string `json:"delivery_key,omitempty"`
}

// DeliveryAck is how far an injection got (level 1: the page's send request
// answered, status_code is that HTTP status).
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
	// Duplicate says the inject's delivery_key was delivered before and
	// nothing was typed now; only with ok.
	Duplicate   bool   `json:"duplicate,omitempty"`
	DeliveryKey string `json:"delivery_key,omitempty"` // optional echo
}

func (*ConversationLink) MsgType() string    { return TypeConversationLink }
func (*ConversationMessage) MsgType() string { return TypeConversationMessage }
func (*InjectResult) MsgType() string        { return TypeInjectResult }
func (*ConversationLoop) MsgType() string    { return TypeConversationLoop }

func (r *ConversationRef) check() *ParseError {
	if e := checkPlatform(r.Platform); e != nil {
		return e
	}
	if r.LocalConversationID == "" {
		return perr("missing_field", "local_conversation_id", "field \"local_conversation_id\" is required")
	}
	if !ValidLocalConversationID(r.LocalConversationID) {
		return perr("invalid_field", "local_conversation_id", "local_conversation_id must be 1-128 bytes of [A-Za-z0-9._:-]")
	}
	if r.RemoteConversationID == "" {
		return perr("missing_field", "remote_conversation_id", "field \"remote_conversation_id\" is required")
	}
	return checkLabel("remote_conversation_id", r.RemoteConversationID)
}

func (m *ConversationLink) validate() *ParseError {
	if e := m.check(); e != nil {
		return e
	}
	if len(m.URL) > 2048 {
		return perr("invalid_field", "url", "field \"url\" is longer than 2048 bytes")
	}
	// A URL never holds spaces or control characters; one that does is not
	// a page address and must not reach the records or the status panel.
	if strings.ContainsFunc(m.URL, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return perr("invalid_field", "url", "field \"url\" must not contain spaces or control characters")
	}
	return checkLabel("title", m.Title)
}

// Validate applies the bridge's rules to a message that arrives another way
// (the HTTP ingest route), so both ways accept exactly the same messages.
func (m *ConversationMessage) Validate() *ParseError { return m.validate() }

func (m *ConversationMessage) validate() *ParseError {
	if e := m.check(); e != nil {
		return e
	}
	if e := checkID("message_id", m.MessageID, true); e != nil {
		return e
	}
	if len(m.Text) > MaxConversationText {
		return perr("invalid_field", "text", "field \"text\" is longer than %d bytes", MaxConversationText)
	}
	switch m.Role {
	case "", "assistant", "user":
	default:
		return perr("invalid_field", "role", "role must be assistant or user")
	}
	return nil
}

func (m *ConversationLoop) validate() *ParseError {
	if e := m.check(); e != nil {
		return e
	}
	switch m.State {
	case LoopRunning, LoopStopped:
	case "":
		return perr("missing_field", "state", "field \"state\" is required: running or stopped")
	default:
		return perr("invalid_field", "state", "state must be running or stopped")
	}
	if m.Rounds < 0 || m.Rounds > MaxLoopRounds || m.MaxRounds < 0 || m.MaxRounds > MaxLoopRounds {
		return perr("invalid_field", "rounds", "rounds and max_rounds must be 0 to %d", MaxLoopRounds)
	}
	return checkLabel("reason", m.Reason)
}

// MaxLoopRounds bounds the round counts of conversation_loop.
const MaxLoopRounds = 1 << 16

func (m *InjectResult) validate() *ParseError {
	if e := checkID("inject_id", m.InjectID, true); e != nil {
		return e
	}
	if m.DeliveryKey != "" && !ValidDeliveryKey(m.DeliveryKey) {
		return perr("invalid_field", "delivery_key", "delivery_key must be 1-128 bytes of [A-Za-z0-9._:-]")
	}
	if m.Duplicate && !m.OK {
		return perr("invalid_field", "duplicate", "duplicate is only valid with ok:true")
	}
	if a := m.DeliveryAck; a != nil {
		if a.Level < 0 || a.Level > 3 {
			return perr("invalid_field", "delivery_ack", "delivery_ack.level must be 0 to 3")
		}
		// status_code is the page's HTTP status (the stable field of level 1).
		if e := checkStatus("delivery_ack.status_code", a.StatusCode, true); e != nil {
			return e
		}
		if len(a.Detail) > maxInjectText {
			return perr("invalid_field", "delivery_ack.detail", "delivery_ack.detail is longer than %d bytes", maxInjectText)
		}
	}
	if e := m.Error; e != nil {
		if e := checkID("error.code", e.Code, false); e != nil {
			return e
		}
		if len(e.Message) > maxInjectText {
			return perr("invalid_field", "error.message", "error.message is longer than %d bytes", maxInjectText)
		}
	}
	return nil
}

// maxInjectText bounds the free-text fields of inject_result: they are
// stored with the job and logged, never documents.
const maxInjectText = 4096
