package instructions

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The in-memory implementations below are the single-node placeholders for
// the task store and conversation records (owned by the renewal/tasks area):
// they keep the instruction routes working until the supervisor wires the
// durable ones. They forget everything on restart.

// MemTask is one recorded batch.
type MemTask struct {
	ID       string    `json:"task_id"`
	RunID    string    `json:"run_id"`
	Kind     string    `json:"kind"`
	Title    string    `json:"title"`
	Status   string    `json:"status"`
	Summary  string    `json:"summary,omitempty"`
	Logs     []string  `json:"logs"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at,omitzero"`
}

// MemTasks is an in-memory TaskRecorder keeping the last 200 tasks.
type MemTasks struct {
	mu    sync.Mutex
	seq   atomic.Int64
	tasks []*MemTask
}

func (m *MemTasks) Start(_ context.Context, kind, title, _ string) (string, string, error) {
	n := m.seq.Add(1)
	t := &MemTask{ID: fmt.Sprintf("task-%d", n), RunID: fmt.Sprintf("run-%d", n), Kind: kind, Title: title, Status: "running", Logs: []string{}, Started: time.Now().UTC()}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tasks = append(m.tasks, t)
	if len(m.tasks) > 200 {
		m.tasks = m.tasks[len(m.tasks)-200:]
	}
	return t.ID, t.RunID, nil
}

func (m *MemTasks) find(id string) *MemTask {
	for _, t := range m.tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func (m *MemTasks) Log(_ context.Context, taskID, _ string, line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.find(taskID); t != nil && len(t.Logs) < 500 {
		t.Logs = append(t.Logs, line)
	}
}

func (m *MemTasks) Finish(_ context.Context, taskID, _ string, status, summary string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.find(taskID); t != nil {
		t.Status, t.Summary, t.Finished = status, summary, time.Now().UTC()
	}
}

// List returns copies of the recorded tasks, newest first.
func (m *MemTasks) List() []MemTask {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MemTask, 0, len(m.tasks))
	for i := len(m.tasks) - 1; i >= 0; i-- {
		t := *m.tasks[i]
		t.Logs = append([]string(nil), t.Logs...)
		out = append(out, t)
	}
	return out
}

// MemConversation is one conversation's instruction-side state.
type MemConversation struct {
	ConvRef
	ExecutionState       string `json:"execution_state"`
	AutomationStatus     string `json:"automation_status"`
	PauseReason          string `json:"pause_reason,omitempty"`
	LastNonPaused        string `json:"last_non_paused_automation_status,omitempty"`
	RepeatedMessageCount int    `json:"repeated_message_count"`
	seen                 map[string]struct{}
	order                []string
}

// MemConversations is an in-memory Conversations keyed by
// local_conversation_id; it remembers the last 1000 message ids of each.
type MemConversations struct {
	mu    sync.Mutex
	convs map[string]*MemConversation
}

func (m *MemConversations) get(c ConvRef) *MemConversation {
	if m.convs == nil {
		m.convs = map[string]*MemConversation{}
	}
	cv, ok := m.convs[c.LocalConversationID]
	if !ok {
		cv = &MemConversation{ConvRef: c, ExecutionState: ExecIdle, AutomationStatus: "manual", seen: map[string]struct{}{}}
		m.convs[c.LocalConversationID] = cv
	}
	cv.Platform, cv.RemoteConversationID = c.Platform, c.RemoteConversationID
	return cv
}

func (m *MemConversations) NoteMessage(_ context.Context, c ConvRef, id string) (bool, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cv := m.get(c)
	if _, dup := cv.seen[id]; dup {
		cv.RepeatedMessageCount++
		return true, cv.RepeatedMessageCount, nil
	}
	cv.seen[id] = struct{}{}
	cv.order = append(cv.order, id)
	if len(cv.order) > 1000 {
		delete(cv.seen, cv.order[0])
		cv.order = cv.order[1:]
	}
	return false, cv.RepeatedMessageCount, nil
}

func (m *MemConversations) SetExecution(_ context.Context, c ConvRef, state string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(c).ExecutionState = state
	return nil
}

func (m *MemConversations) SetAutomation(_ context.Context, c ConvRef, status, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cv := m.get(c)
	if status == "paused" {
		if cv.AutomationStatus != "paused" {
			cv.LastNonPaused = cv.AutomationStatus
		}
		cv.PauseReason = reason
	} else {
		cv.PauseReason = ""
	}
	cv.AutomationStatus = status
	return nil
}

func (m *MemConversations) ResumeAutomation(_ context.Context, c ConvRef) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cv := m.get(c)
	if cv.AutomationStatus == "paused" {
		cv.AutomationStatus = cv.LastNonPaused
		if cv.AutomationStatus == "" {
			cv.AutomationStatus = "auto"
		}
		cv.PauseReason = ""
	}
	return cv.AutomationStatus, nil
}

// Get returns a copy of a conversation's state.
func (m *MemConversations) Get(localID string) (MemConversation, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cv, ok := m.convs[localID]
	if !ok {
		return MemConversation{}, false
	}
	out := *cv
	out.seen, out.order = nil, nil
	return out, true
}

// MemInjection is one report queued for a conversation.
type MemInjection struct {
	InjectID string  `json:"inject_id"`
	Conv     ConvRef `json:"conversation"`
	Kind     string  `json:"kind"`
	Text     string  `json:"text"`
}

// MemInjector keeps injected texts (the last 200) instead of sending them.
type MemInjector struct {
	mu  sync.Mutex
	seq int
	out []MemInjection
}

func (m *MemInjector) Inject(_ context.Context, c ConvRef, kind, _, text string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	id := fmt.Sprintf("inject-%d", m.seq)
	m.out = append(m.out, MemInjection{InjectID: id, Conv: c, Kind: kind, Text: text})
	if len(m.out) > 200 {
		m.out = m.out[1:]
	}
	return id, nil
}

// Sent returns the queued injections, oldest first.
func (m *MemInjector) Sent() []MemInjection {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MemInjection(nil), m.out...)
}
