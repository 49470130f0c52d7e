// Package renewal is the conversation side of renewal automation: one
// durable record per local_conversation_id (raftstore conversations) with
// its link to a plugin conversation, the automation switch (manual, auto,
// paused) and the execution state. It also serves as the instruction
// executor's conversation store.
package renewal

import (
	"context"
	"sort"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/instructions"
)

// Writer is the one write path (raft through the supervisor).
type Writer interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
	Read(fn func(s *raftstore.State))
}

// Store reads and writes conversation records. Changed runs after every
// committed change (the bridge pushes state_snapshot to the plugins).
type Store struct {
	w       Writer
	Changed func()
}

// New returns a Store over w.
func New(w Writer) *Store { return &Store{w: w, Changed: func() {}} }

// Get returns a copy of one record.
func (s *Store) Get(id string) (raftstore.Conversation, bool) {
	var out raftstore.Conversation
	var ok bool
	s.w.Read(func(st *raftstore.State) {
		if c := st.Conversations.ByID[id]; c != nil {
			out, ok = *c, true
			out.Seen = nil
		}
	})
	return out, ok
}

// List returns every record, most recently updated first.
func (s *Store) List() []raftstore.Conversation {
	out := []raftstore.Conversation{}
	s.w.Read(func(st *raftstore.State) {
		for _, c := range st.Conversations.ByID {
			cp := *c
			cp.Seen = nil
			out = append(out, cp)
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].LocalID < out[j].LocalID
	})
	return out
}

func (s *Store) apply(ctx context.Context, typ string, payload any) (any, error) {
	v, err := s.w.Apply(ctx, typ, payload)
	if err == nil {
		s.Changed()
	}
	return v, err
}

// Link records that a plugin client holds a conversation.
func (s *Store) Link(ctx context.Context, l raftstore.ConvLink) (raftstore.Conversation, error) {
	v, err := s.apply(ctx, raftstore.CmdConvLink, l)
	if err != nil {
		return raftstore.Conversation{}, err
	}
	return v.(raftstore.Conversation), nil
}

// SetClientLoop records what the plugin said of its instruction client loop.
func (s *Store) SetClientLoop(ctx context.Context, l raftstore.ConvClientLoop) (raftstore.Conversation, error) {
	v, err := s.apply(ctx, raftstore.CmdConvClientLoop, l)
	if err != nil {
		return raftstore.Conversation{}, err
	}
	return v.(raftstore.Conversation), nil
}

// SetStatus switches manual / auto / paused (reason for paused).
func (s *Store) SetStatus(ctx context.Context, id, status, reason string) (raftstore.Conversation, error) {
	v, err := s.apply(ctx, raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: raftstore.ConvLink{LocalID: id}, Status: status, Reason: reason})
	if err != nil {
		return raftstore.Conversation{}, err
	}
	return v.(raftstore.Conversation), nil
}

// Recover returns leftover execution states to idle (a new leader's
// start-up), except instruction_running while a batch task of the
// conversation still runs: the task reaper releases it with its task.
func (s *Store) Recover(ctx context.Context) (int, error) {
	v, err := s.apply(ctx, raftstore.CmdConvRecover, raftstore.ConvRecover{KeepBatches: true})
	if err != nil {
		return 0, err
	}
	return v.(int), nil
}

func link(c instructions.ConvRef) raftstore.ConvLink {
	return raftstore.ConvLink{LocalID: c.LocalConversationID, Platform: c.Platform, RemoteID: c.RemoteConversationID}
}

// NoteMessage implements instructions.Conversations.
func (s *Store) NoteMessage(ctx context.Context, c instructions.ConvRef, messageID string) (bool, int, error) {
	v, err := s.w.Apply(ctx, raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: link(c), MessageID: messageID})
	if err != nil {
		return false, 0, err
	}
	r := v.(raftstore.ConvMessageResult)
	if r.Refused != "" {
		// Not taken and not run: the caller may report it again later.
		return false, 0, api.Unavailable("seen_messages_full", "message %s of conversation %s was not taken: %s", messageID, c.LocalConversationID, r.Refused)
	}
	return r.Repeat, r.Count, nil
}

// SetExecution implements instructions.Conversations.
func (s *Store) SetExecution(ctx context.Context, c instructions.ConvRef, state string) error {
	_, err := s.w.Apply(ctx, raftstore.CmdConvExecution, raftstore.ConvExecution{ConvLink: link(c), State: state})
	return err
}

// SetAutomation implements instructions.Conversations.
func (s *Store) SetAutomation(ctx context.Context, c instructions.ConvRef, status, reason string) error {
	_, err := s.apply(ctx, raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: link(c), Status: status, Reason: reason})
	return err
}

// ResumeAutomation implements instructions.Conversations.
func (s *Store) ResumeAutomation(ctx context.Context, c instructions.ConvRef) (string, error) {
	v, err := s.apply(ctx, raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: link(c), Resume: true})
	if err != nil {
		return "", err
	}
	return v.(raftstore.Conversation).AutomationStatus, nil
}

func sortJobs(js []raftstore.RenewalJob) {
	sort.Slice(js, func(i, j int) bool {
		if !js[i].CreatedAt.Equal(js[j].CreatedAt) {
			return js[i].CreatedAt.After(js[j].CreatedAt)
		}
		return js[i].ID > js[j].ID
	})
}
