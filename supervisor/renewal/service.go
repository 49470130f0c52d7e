// Package renewal keeps the renewal conversation records: which plugin
// connection holds a conversation, its automation status (manual, auto,
// paused), its execution state and its repeat and failure counters. Every
// write goes through raft; every read comes from the FSM.
package renewal

import (
	"context"
	"fmt"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/instructions"
)

// Store is the supervisor's one write path and its FSM reads.
type Store interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
	Read(fn func(s *raftstore.State))
}

// Service is the conversation area. It satisfies instructions.Conversations.
type Service struct {
	st Store
	// changed runs after every write that may change what the plugins'
	// overlays show (state_snapshot automation_conversations).
	changed func()
}

// New builds the service; changed may be nil.
func New(st Store, changed func()) *Service {
	if changed == nil {
		changed = func() {}
	}
	return &Service{st: st, changed: changed}
}

var _ instructions.Conversations = (*Service)(nil)

func refOf(c instructions.ConvRef) raftstore.ConversationRef {
	return raftstore.ConversationRef{Platform: c.Platform, LocalConversationID: c.LocalConversationID, RemoteConversationID: c.RemoteConversationID}
}

func (s *Service) conv(ctx context.Context, typ string, payload any) (raftstore.Conversation, error) {
	v, err := s.st.Apply(ctx, typ, payload)
	if err != nil {
		return raftstore.Conversation{}, err
	}
	s.changed()
	c, ok := v.(raftstore.Conversation)
	if !ok {
		return raftstore.Conversation{}, fmt.Errorf("%s: unexpected result %T", typ, v)
	}
	return c, nil
}

// Link records that clientID holds the conversation now (newest wins).
func (s *Service) Link(ctx context.Context, clientID string, l bridgeproto.ConversationLink) (raftstore.Conversation, error) {
	return s.conv(ctx, raftstore.CmdConversationLink, raftstore.ConversationLink{
		ConversationRef: raftstore.ConversationRef{Platform: l.Platform, LocalConversationID: l.LocalConversationID, RemoteConversationID: l.RemoteConversationID},
		URL:             l.URL, Title: l.Title, ClientID: clientID,
	})
}

// NoteMessage records a final reply's message id; a repeat counts
// repeated_message_count and must not be executed again.
func (s *Service) NoteMessage(ctx context.Context, c instructions.ConvRef, messageID string) (bool, int, error) {
	v, err := s.st.Apply(ctx, raftstore.CmdConversationMessage, raftstore.ConversationMessage{ConversationRef: refOf(c), MessageID: messageID})
	if err != nil {
		return false, 0, err
	}
	n, _ := v.(raftstore.MessageNoted)
	return n.Repeat, n.Count, nil
}

// SetExecution sets execution_state (idle, instruction_running, renewal_running).
func (s *Service) SetExecution(ctx context.Context, c instructions.ConvRef, state string) error {
	_, err := s.conv(ctx, raftstore.CmdConversationExecution, raftstore.ConversationExecution{ConversationRef: refOf(c), State: state})
	return err
}

// RecordRound ends a round: execution_state back to idle, and the
// consecutive failure counter counted (failed) or reset.
func (s *Service) RecordRound(ctx context.Context, c instructions.ConvRef, failed bool, lastError string) (raftstore.Conversation, error) {
	return s.conv(ctx, raftstore.CmdConversationExecution, raftstore.ConversationExecution{
		ConversationRef: refOf(c), State: raftstore.ExecIdle, Failed: failed, Succeeded: !failed, LastError: lastError,
	})
}

// SetAutomation sets automation_status; reason is the pause_reason for paused.
func (s *Service) SetAutomation(ctx context.Context, c instructions.ConvRef, status, reason string) error {
	_, err := s.Automate(ctx, c, status, reason)
	return err
}

// Automate is SetAutomation answering the record.
func (s *Service) Automate(ctx context.Context, c instructions.ConvRef, status, reason string) (raftstore.Conversation, error) {
	return s.conv(ctx, raftstore.CmdConversationAutomate, raftstore.ConversationAutomation{ConversationRef: refOf(c), Status: status, PauseReason: reason})
}

// ResumeAutomation returns a paused conversation to its last non-paused
// status (auto when it never had one) and says which.
func (s *Service) ResumeAutomation(ctx context.Context, c instructions.ConvRef) (string, error) {
	conv, err := s.conv(ctx, raftstore.CmdConversationResume, refOf(c))
	return conv.AutomationStatus, err
}

// Recover clears execution_state left by an abnormal exit (run at start-up
// on the leader) and answers how many records it cleared.
func (s *Service) Recover(ctx context.Context) (int, error) {
	v, err := s.st.Apply(ctx, raftstore.CmdConversationRecover, struct{}{})
	if err != nil {
		return 0, err
	}
	n, _ := v.(int)
	if n > 0 {
		s.changed()
	}
	return n, nil
}

// Get reads one record.
func (s *Service) Get(localID string) (raftstore.Conversation, bool) {
	var out raftstore.Conversation
	var ok bool
	s.st.Read(func(st *raftstore.State) {
		if c := st.Conversations.ByLocal[localID]; c != nil {
			out, ok = c.Clone(), true
		}
	})
	return out, ok
}

// List reads every record, by local id.
func (s *Service) List() []raftstore.Conversation {
	var out []raftstore.Conversation
	s.st.Read(func(st *raftstore.State) { out = st.Conversations.Sorted() })
	return out
}

// Automation is the state_snapshot view of every linked conversation.
func (s *Service) Automation() []bridgeproto.AutomationConversation {
	out := []bridgeproto.AutomationConversation{}
	for _, c := range s.List() {
		out = append(out, bridgeproto.AutomationConversation{
			LocalConversationID: c.LocalConversationID, RemoteConversationID: c.RemoteConversationID,
			Platform: c.Platform, AutomationStatus: c.AutomationStatus, PauseReason: c.PauseReason,
		})
	}
	return out
}
