package raftstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Conversation commands (the renewal area's records, SPEC.md "Renewal
// conversation"). One backend record per local_conversation_id holds the
// link, the automation switch and the execution state.
const (
	CmdConvLink       = "conv.link"        // the plugin reported (or re-reported) a link
	CmdConvMessage    = "conv.message"     // a final AI message arrived; repeats are counted
	CmdConvExecution  = "conv.execution"   // execution_state changed
	CmdConvAutomation = "conv.automation"  // manual / auto / paused (or resume to the last non-paused)
	CmdConvRecover    = "conv.recover"     // start-up: leftover execution states return to idle
	CmdConvClientLoop = "conv.client_loop" // the plugin's instruction loop ran, or stopped and why
)

// Automation statuses and execution states.
const (
	AutoManual = "manual"
	AutoAuto   = "auto"
	AutoPaused = "paused"

	ExecIdle               = "idle"
	ExecInstructionRunning = "instruction_running"
	ExecRenewalRunning     = "renewal_running"
)

// MaxConversations bounds the area; the least recently updated go first.
// It holds issue 24's 10,000 conversations with room to spare: the tick and
// the list route no longer scan the whole area (see ConversationsState).
const MaxConversations = 16384

// seenMessages is how many recent message ids a conversation record keeps
// (seen_message_ids). The decision "repeat or new" is SeenMessagesState's,
// which remembers every id for SeenMessageRetention; this short list is kept
// for older replicas and older snapshots.
const seenMessages = 64

// ConversationsState is the renewal area of the FSM.
type ConversationsState struct {
	ByID map[string]*Conversation `json:"by_id"`
	// auto indexes the conversations whose automation_status is auto, so
	// the renewal tick reads those instead of scanning the whole area. It is
	// derived from ByID (not in snapshots): normalize rebuilds it on restore
	// and every handler that changes a status or drops a record keeps it.
	auto map[string]*Conversation
	// recent orders them most recently updated first for the list route
	// and the browser read model (conversations_recent.go).
	recent recentIndex
}

func (c *ConversationsState) normalize() {
	if c.ByID == nil {
		c.ByID = map[string]*Conversation{}
	}
	c.auto = map[string]*Conversation{}
	c.recent.reset(len(c.ByID))
	for _, cv := range c.ByID {
		c.index(cv)
		c.recent.put(cv.LocalID, cv.UpdatedAt)
	}
}

// index files cv in the auto index by its status now.
func (c *ConversationsState) index(cv *Conversation) {
	if cv.AutomationStatus == AutoAuto {
		c.auto[cv.LocalID] = cv
	} else {
		delete(c.auto, cv.LocalID)
	}
}

// EachAuto calls fn for every auto conversation (in no order), without
// visiting the others. Like all of State, only inside Node.Read.
func (c *ConversationsState) EachAuto(fn func(cv *Conversation)) {
	for _, cv := range c.auto {
		fn(cv)
	}
}

// AutoCount is how many conversations are auto.
func (c *ConversationsState) AutoCount() int { return len(c.auto) }

// Conversation is one renewal conversation record.
type Conversation struct {
	LocalID                       string    `json:"local_conversation_id"`
	Platform                      string    `json:"platform"`
	ClientID                      string    `json:"client_id"`
	RemoteID                      string    `json:"remote_conversation_id"`
	URL                           string    `json:"url,omitempty"`
	Title                         string    `json:"title,omitempty"`
	AutomationStatus              string    `json:"automation_status"`
	PauseReason                   string    `json:"pause_reason"`
	LastError                     string    `json:"last_error"`
	ExecutionState                string    `json:"execution_state"`
	ConsecutiveFailureCount       int       `json:"consecutive_failure_count"`
	RepeatedMessageCount          int       `json:"repeated_message_count"`
	RepeatedRenewalCount          int       `json:"repeated_renewal_count"`
	LastNonPausedAutomationStatus string    `json:"last_non_paused_automation_status"`
	LastMessageID                 string    `json:"last_message_id,omitempty"`
	LastAIMessageAt               time.Time `json:"last_ai_message_at,omitzero"`
	LinkedAt                      time.Time `json:"linked_at,omitzero"`
	CreatedAt                     time.Time `json:"created_at"`
	UpdatedAt                     time.Time `json:"updated_at"`
	Seen                          []string  `json:"seen_message_ids,omitempty"`
	// ClientLoop is the browser plugin's instruction client loop for this
	// conversation as it last reported it (nil until it does): a loop the
	// plugin stopped (round limit, user typing, three failures) is visible
	// here, not only in the browser.
	ClientLoop *ClientLoop `json:"client_loop,omitempty"`
}

// Client loop states and the bounds of a report.
const (
	LoopRunning = "running"
	LoopStopped = "stopped"

	maxLoopReason = 256
	maxLoopRounds = 1 << 16
)

// ClientLoop is what the plugin last said of its client loop.
type ClientLoop struct {
	State      string    `json:"state"`
	Reason     string    `json:"reason,omitempty"`
	Rounds     int       `json:"rounds"`
	MaxRounds  int       `json:"max_rounds,omitempty"`
	ClientID   string    `json:"client_id,omitempty"`
	ReportedAt time.Time `json:"reported_at"`
}

// ConvClientLoop is the payload of CmdConvClientLoop.
type ConvClientLoop struct {
	ConvLink
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	Rounds    int    `json:"rounds"`
	MaxRounds int    `json:"max_rounds,omitempty"`
}

// ConvLink is the payload of CmdConvLink.
type ConvLink struct {
	LocalID  string `json:"local_conversation_id"`
	Platform string `json:"platform"`
	ClientID string `json:"client_id,omitempty"`
	RemoteID string `json:"remote_conversation_id"`
	URL      string `json:"url,omitempty"`
	Title    string `json:"title,omitempty"`
}

// ConvMessage is the payload of CmdConvMessage.
type ConvMessage struct {
	ConvLink
	MessageID string `json:"message_id"`
}

// ConvMessageResult says whether the message was a repeat.
type ConvMessageResult struct {
	Repeat bool `json:"repeat"`
	Count  int  `json:"repeated_message_count"`
	// Refused is set (and nothing changed) when the message id is new but
	// the store already remembers MaxSeenMessages ids (SeenMessagesFull).
	Refused string `json:"refused,omitempty"`
}

// ConvExecution is the payload of CmdConvExecution.
type ConvExecution struct {
	ConvLink
	State string `json:"execution_state"`
}

// ConvAutomation is the payload of CmdConvAutomation. Resume returns a
// paused conversation to its last non-paused status (auto if none).
type ConvAutomation struct {
	ConvLink
	Status string `json:"automation_status,omitempty"`
	Reason string `json:"pause_reason,omitempty"`
	Resume bool   `json:"resume,omitempty"`
}

// ValidAutomation reports whether s is manual, auto or paused.
func ValidAutomation(s string) bool { return s == AutoManual || s == AutoAuto || s == AutoPaused }

// conv finds or creates the record for l (creating needs a platform-free
// id only: a switch may come before the plugin ever linked it).
func (s *State) conv(l ConvLink, at time.Time) (*Conversation, error) {
	if err := needID("local_conversation_id", l.LocalID); err != nil {
		return nil, err
	}
	cv := s.Conversations.ByID[l.LocalID]
	if cv == nil {
		for _, gone := range evictOldest(s.Conversations.ByID, MaxConversations-1, func(c *Conversation) time.Time { return c.UpdatedAt }) {
			s.Conversations.forget(gone)
		}
		cv = &Conversation{LocalID: l.LocalID, AutomationStatus: AutoManual, ExecutionState: ExecIdle, CreatedAt: at}
		s.Conversations.ByID[l.LocalID] = cv
	}
	if l.Platform != "" {
		cv.Platform = l.Platform
	}
	if l.ClientID != "" {
		cv.ClientID = l.ClientID
	}
	if l.RemoteID != "" {
		cv.RemoteID = l.RemoteID
	}
	if l.URL != "" {
		cv.URL = l.URL
	}
	if l.Title != "" {
		cv.Title = l.Title
	}
	s.Conversations.touch(cv, at)
	return cv, nil
}

func applyConvLink(s *State, c Command) (any, error) {
	var p ConvLink
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.Platform == "" || p.RemoteID == "" {
		return nil, fmt.Errorf("a link needs platform and remote_conversation_id")
	}
	cv, err := s.conv(p, c.At)
	if err != nil {
		return nil, err
	}
	cv.LinkedAt = c.At
	return *cv, nil
}

func applyConvMessage(s *State, c Command) (any, error) {
	var p ConvMessage
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := needID("message_id", p.MessageID); err != nil {
		return nil, err
	}
	if err := needID("local_conversation_id", p.LocalID); err != nil {
		return nil, err
	}
	repeat := s.SeenMessages.Has(p.LocalID, p.MessageID)
	if cv := s.Conversations.ByID[p.LocalID]; !repeat && cv != nil && slices.Contains(cv.Seen, p.MessageID) {
		repeat = true
	}
	if !repeat {
		// Remembered first: at the cap the message is refused and nothing
		// else changes (not even the conversation's updated_at).
		if err := s.SeenMessages.add(p.LocalID, p.MessageID, c.At); err != nil {
			var full *SeenMessagesFull
			if errors.As(err, &full) {
				return ConvMessageResult{Refused: full.Error()}, nil
			}
			return nil, err
		}
	}
	cv, err := s.conv(p.ConvLink, c.At)
	if err != nil {
		return nil, err
	}
	if repeat {
		cv.RepeatedMessageCount++
		return ConvMessageResult{Repeat: true, Count: cv.RepeatedMessageCount}, nil
	}
	// The conversation's own last ids stay as before (an older replica
	// still decides by them during a rolling upgrade).
	cv.Seen = append(cv.Seen, p.MessageID)
	if len(cv.Seen) > seenMessages {
		cv.Seen = cv.Seen[len(cv.Seen)-seenMessages:]
	}
	cv.LastMessageID, cv.LastAIMessageAt = p.MessageID, c.At
	// A new reply: renewals so far got an answer, the repeat count restarts.
	cv.RepeatedRenewalCount = 0
	return ConvMessageResult{Count: cv.RepeatedMessageCount}, nil
}

func applyConvExecution(s *State, c Command) (any, error) {
	var p ConvExecution
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	switch p.State {
	case ExecIdle, ExecInstructionRunning, ExecRenewalRunning:
	default:
		return nil, fmt.Errorf("unknown execution_state %q", p.State)
	}
	cv, err := s.conv(p.ConvLink, c.At)
	if err != nil {
		return nil, err
	}
	cv.ExecutionState = p.State
	return *cv, nil
}

func applyConvAutomation(s *State, c Command) (any, error) {
	var p ConvAutomation
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if !p.Resume && !ValidAutomation(p.Status) {
		return nil, fmt.Errorf("automation_status %q: want manual, auto or paused", p.Status)
	}
	if len(p.Reason) > 1024 {
		return nil, fmt.Errorf("pause_reason is longer than 1024 bytes")
	}
	cv, err := s.conv(p.ConvLink, c.At)
	if err != nil {
		return nil, err
	}
	status := p.Status
	if p.Resume {
		status = cv.AutomationStatus
		if status == AutoPaused {
			status = cv.LastNonPausedAutomationStatus
			if status == "" || status == AutoPaused {
				status = AutoAuto
			}
		}
	}
	if status == AutoPaused {
		cv.PauseReason = p.Reason
	} else {
		cv.PauseReason = ""
		cv.LastNonPausedAutomationStatus = status
	}
	if status == AutoAuto && cv.AutomationStatus != AutoAuto {
		// Switching back on starts the failure and repeat counts afresh.
		cv.ConsecutiveFailureCount, cv.RepeatedRenewalCount = 0, 0
	}
	cv.AutomationStatus = status
	s.Conversations.index(cv)
	return *cv, nil
}

// ConvRecover is the payload of CmdConvRecover (a new leader's start-up):
// execution states a dead process left return to idle. With KeepBatches a
// conversation stays instruction_running while a task of it still runs:
// whether that task's runner is alive is the task reaper's call, which
// releases the conversation with the task (TaskRecover.Tasks). Entries
// without it (older leaders) reset every state.
type ConvRecover struct {
	KeepBatches bool `json:"keep_batches,omitempty"`
}

func applyConvRecover(s *State, c Command) (any, error) {
	var p ConvRecover
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	n := 0
	for _, cv := range s.Conversations.ByID {
		if p.KeepBatches && cv.ExecutionState == ExecInstructionRunning && s.Tasks.batchRunning(cv.LocalID) {
			continue
		}
		if cv.ExecutionState != ExecIdle {
			cv.ExecutionState = ExecIdle
			s.Conversations.touch(cv, c.At)
			n++
		}
	}
	return n, nil
}

func applyConvClientLoop(s *State, c Command) (any, error) {
	var p ConvClientLoop
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	switch {
	case p.State != LoopRunning && p.State != LoopStopped:
		return nil, fmt.Errorf("client loop state %q: want running or stopped", p.State)
	case len(p.Reason) > maxLoopReason || !utf8.ValidString(p.Reason) || strings.ContainsFunc(p.Reason, unicode.IsControl):
		return nil, fmt.Errorf("client loop reason must be UTF-8 without control characters, at most %d bytes", maxLoopReason)
	case p.Rounds < 0 || p.Rounds > maxLoopRounds || p.MaxRounds < 0 || p.MaxRounds > maxLoopRounds:
		return nil, fmt.Errorf("client loop rounds must be 0 to %d", maxLoopRounds)
	}
	if s.Conversations.ByID[p.LocalID] == nil {
		// Only a linked conversation has a loop; the link comes first.
		return nil, fmt.Errorf("no conversation %q", p.LocalID)
	}
	cv, err := s.conv(p.ConvLink, c.At)
	if err != nil {
		return nil, err
	}
	cv.ClientLoop = &ClientLoop{State: p.State, Reason: p.Reason, Rounds: p.Rounds, MaxRounds: p.MaxRounds, ClientID: p.ClientID, ReportedAt: c.At}
	return *cv, nil
}
