package instructions

import "context"

// ConvRef names one conversation (docs/bridge-protocol.md conversation_message).
type ConvRef struct {
	Platform             string `json:"platform"`
	LocalConversationID  string `json:"local_conversation_id"`
	RemoteConversationID string `json:"remote_conversation_id"`
}

// TaskRecorder records each instruction batch as a task of kind
// instruction_batch with one run and its log lines (GET /v1/tasks).
type TaskRecorder interface {
	Start(ctx context.Context, kind, title, conversation string) (taskID, runID string, err error)
	Log(ctx context.Context, taskID, runID, line string)
	Finish(ctx context.Context, taskID, runID, status, summary string)
}

// Conversations is what ingest needs of the conversation records.
type Conversations interface {
	// NoteMessage records messageID for the conversation; repeat says it was
	// seen before, count is the conversation's repeated_message_count.
	NoteMessage(ctx context.Context, c ConvRef, messageID string) (repeat bool, count int, err error)
	// SetExecution sets execution_state: instruction_running or idle.
	SetExecution(ctx context.Context, c ConvRef, state string) error
	// SetAutomation sets automation_status (auto, manual, paused); reason is
	// the pause_reason for paused.
	SetAutomation(ctx context.Context, c ConvRef, status, reason string) error
	// ResumeAutomation returns a paused conversation to its last non-paused
	// status (auto when it never had one) and says which.
	ResumeAutomation(ctx context.Context, c ConvRef) (string, error)
}

// Injector sends text back into a conversation (bridge conversation_inject,
// kind instruction_report). key is the delivery_key (empty for none): the
// same for every delivery of the same report, so a plugin that remembers
// keys types it once.
type Injector interface {
	Inject(ctx context.Context, c ConvRef, kind, key, text string) (injectID string, err error)
}

// Execution states.
const (
	ExecIdle               = "idle"
	ExecInstructionRunning = "instruction_running"
)

// TaskKind is the kind of the task every batch records.
const TaskKind = "instruction_batch"
