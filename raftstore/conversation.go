package raftstore

import (
	"fmt"
	"sort"
	"time"
)

// Conversation commands (renewal automation and instruction ingest).
const (
	CmdConversationLink      = "conversation.link"       // a plugin connection holds a conversation
	CmdConversationMessage   = "conversation.message"    // a final AI reply was seen (repeat detection)
	CmdConversationExecution = "conversation.execution"  // execution_state changes
	CmdConversationAutomate  = "conversation.automation" // automation status manual/auto/paused
	CmdConversationResume    = "conversation.resume"     // paused → last non-paused status
	CmdConversationRecover   = "conversation.recover"    // start-up: clear leftover execution_state
)

// Automation statuses and execution states (SPEC.md "Renewal conversation").
const (
	AutomationManual = "manual"
	AutomationAuto   = "auto"
	AutomationPaused = "paused"

	ExecIdle               = "idle"
	ExecInstructionRunning = "instruction_running"
	ExecRenewalRunning     = "renewal_running"
)

// Bounds of the conversation area: MaxConversations records, and per
// conversation the last MaxSeenMessageIDs message ids for repeat detection.
const (
	MaxConversations  = 4096
	MaxSeenMessageIDs = 256
)

// ConversationState holds every renewal conversation by local id.
type ConversationState struct {
	ByLocal map[string]*Conversation `json:"by_local"`
}

// Conversation is the single backend record shared by manual, auto and
// paused (SPEC.md "Renewal conversation").
type Conversation struct {
	LocalConversationID           string    `json:"local_conversation_id"`
	Platform                      string    `json:"platform"`
	RemoteConversationID          string    `json:"remote_conversation_id"`
	URL                           string    `json:"url,omitempty"`
	Title                         string    `json:"title,omitempty"`
	ClientID                      string    `json:"client_id,omitempty"`
	AutomationStatus              string    `json:"automation_status"`
	PauseReason                   string    `json:"pause_reason"`
	LastNonPausedAutomationStatus string    `json:"last_non_paused_automation_status"`
	LastError                     string    `json:"last_error"`
	ExecutionState                string    `json:"execution_state"`
	ConsecutiveFailureCount       int       `json:"consecutive_failure_count"`
	RepeatedMessageCount          int       `json:"repeated_message_count"`
	RepeatedRenewalCount          int       `json:"repeated_renewal_count"`
	LastMessageID                 string    `json:"last_message_id,omitempty"`
	SeenMessageIDs                []string  `json:"seen_message_ids,omitempty"`
	CreatedAt                     time.Time `json:"created_at"`
	UpdatedAt                     time.Time `json:"updated_at"`
}

// ConversationRef names a conversation in command payloads.
type ConversationRef struct {
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
}

// ConversationLink is the payload of CmdConversationLink.
type ConversationLink struct {
	ConversationRef
	URL      string `json:"url,omitempty"`
	Title    string `json:"title,omitempty"`
	ClientID string `json:"client_id,omitempty"`
}

// ConversationMessage is the payload of CmdConversationMessage.
type ConversationMessage struct {
	ConversationRef
	MessageID string `json:"message_id"`
}

// MessageNoted is what CmdConversationMessage returns.
type MessageNoted struct {
	Repeat bool `json:"repeat"`
	Count  int  `json:"repeated_message_count"`
}

// ConversationExecution is the payload of CmdConversationExecution.
type ConversationExecution struct {
	ConversationRef
	State string `json:"execution_state"`
	// Failed counts a failed round (consecutive_failure_count); a
	// successful round (Succeeded) resets it.
	Failed    bool   `json:"failed,omitempty"`
	Succeeded bool   `json:"succeeded,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// ConversationAutomation is the payload of CmdConversationAutomate.
type ConversationAutomation struct {
	ConversationRef
	Status      string `json:"automation_status"`
	PauseReason string `json:"pause_reason,omitempty"`
}

func (c *ConversationState) normalize() {
	if c.ByLocal == nil {
		c.ByLocal = map[string]*Conversation{}
	}
}

// Clone copies a record for reading outside Node.Read.
func (c *Conversation) Clone() Conversation {
	out := *c
	out.SeenMessageIDs = append([]string(nil), c.SeenMessageIDs...)
	return out
}

// Sorted lists the conversations by local id.
func (c *ConversationState) Sorted() []Conversation {
	out := make([]Conversation, 0, len(c.ByLocal))
	for _, v := range c.ByLocal {
		out = append(out, v.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LocalConversationID < out[j].LocalConversationID })
	return out
}

// upsert finds or creates the record named by ref (a new record starts
// manual and idle: nothing is automated until asked).
func (c *ConversationState) upsert(ref ConversationRef, at time.Time) (*Conversation, error) {
	if ref.LocalConversationID == "" {
		return nil, fmt.Errorf("conversation: local_conversation_id is required")
	}
	conv := c.ByLocal[ref.LocalConversationID]
	if conv == nil {
		if len(c.ByLocal) >= MaxConversations {
			return nil, fmt.Errorf("conversation: more than %d conversations", MaxConversations)
		}
		conv = &Conversation{LocalConversationID: ref.LocalConversationID, AutomationStatus: AutomationManual,
			LastNonPausedAutomationStatus: AutomationManual, ExecutionState: ExecIdle, CreatedAt: at}
		c.ByLocal[ref.LocalConversationID] = conv
	}
	if ref.Platform != "" {
		conv.Platform = ref.Platform
	}
	if ref.RemoteConversationID != "" {
		conv.RemoteConversationID = ref.RemoteConversationID
	}
	conv.UpdatedAt = at
	return conv, nil
}

func applyConversationLink(s *State, c Command) (any, error) {
	var p ConversationLink
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	conv, err := s.Conversations.upsert(p.ConversationRef, c.At)
	if err != nil {
		return nil, err
	}
	if p.URL != "" {
		conv.URL = p.URL
	}
	if p.Title != "" {
		conv.Title = p.Title
	}
	if p.ClientID != "" {
		conv.ClientID = p.ClientID
	}
	return conv.Clone(), nil
}

func applyConversationMessage(s *State, c Command) (any, error) {
	var p ConversationMessage
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.MessageID == "" {
		return nil, fmt.Errorf("%s: message_id is required", c.Type)
	}
	conv, err := s.Conversations.upsert(p.ConversationRef, c.At)
	if err != nil {
		return nil, err
	}
	for _, id := range conv.SeenMessageIDs {
		if id == p.MessageID {
			conv.RepeatedMessageCount++
			return MessageNoted{Repeat: true, Count: conv.RepeatedMessageCount}, nil
		}
	}
	conv.SeenMessageIDs = append(conv.SeenMessageIDs, p.MessageID)
	if n := len(conv.SeenMessageIDs); n > MaxSeenMessageIDs {
		conv.SeenMessageIDs = append([]string(nil), conv.SeenMessageIDs[n-MaxSeenMessageIDs:]...)
	}
	conv.LastMessageID = p.MessageID
	return MessageNoted{Count: conv.RepeatedMessageCount}, nil
}

func applyConversationExecution(s *State, c Command) (any, error) {
	var p ConversationExecution
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	switch p.State {
	case ExecIdle, ExecInstructionRunning, ExecRenewalRunning:
	default:
		return nil, fmt.Errorf("%s: unknown execution_state %q", c.Type, p.State)
	}
	conv, err := s.Conversations.upsert(p.ConversationRef, c.At)
	if err != nil {
		return nil, err
	}
	conv.ExecutionState = p.State
	switch {
	case p.Failed:
		conv.ConsecutiveFailureCount++
		conv.LastError = p.LastError
	case p.Succeeded:
		conv.ConsecutiveFailureCount = 0
	}
	return conv.Clone(), nil
}

func applyConversationAutomation(s *State, c Command) (any, error) {
	var p ConversationAutomation
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	switch p.Status {
	case AutomationManual, AutomationAuto, AutomationPaused:
	default:
		return nil, fmt.Errorf("%s: unknown automation_status %q", c.Type, p.Status)
	}
	conv, err := s.Conversations.upsert(p.ConversationRef, c.At)
	if err != nil {
		return nil, err
	}
	conv.AutomationStatus = p.Status
	if p.Status == AutomationPaused {
		conv.PauseReason = p.PauseReason
	} else {
		conv.PauseReason = ""
		conv.LastNonPausedAutomationStatus = p.Status
		if p.Status == AutomationAuto {
			conv.ConsecutiveFailureCount = 0
		}
	}
	return conv.Clone(), nil
}

func applyConversationResume(s *State, c Command) (any, error) {
	var p ConversationRef
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	conv, err := s.Conversations.upsert(p, c.At)
	if err != nil {
		return nil, err
	}
	if conv.AutomationStatus == AutomationPaused {
		conv.AutomationStatus = conv.LastNonPausedAutomationStatus
		if conv.AutomationStatus == "" || conv.AutomationStatus == AutomationPaused {
			conv.AutomationStatus = AutomationAuto
		}
		conv.PauseReason = ""
	}
	return conv.Clone(), nil
}

// applyConversationRecover clears execution_state left by an abnormal exit
// (SPEC.md: on daemon start). It returns how many records it cleared.
func applyConversationRecover(s *State, c Command) (any, error) {
	n := 0
	for _, conv := range s.Conversations.ByLocal {
		if conv.ExecutionState != ExecIdle {
			conv.ExecutionState = ExecIdle
			conv.UpdatedAt = c.At
			n++
		}
	}
	return n, nil
}
