package instructions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/instr"
)

// Ingest statuses: what happened to one message.
const (
	IngestExecuted      = "executed"
	IngestRepeated      = "repeated"            // same message_id seen before: not executed again
	IngestUserMessage   = "user_message"        // role user: never executed; resets the round count
	IngestOwnReport     = "own_report"          // carries the result marker: never executed
	IngestNoInstruction = "no_instructions"     // nothing to run; resets the round count
	IngestRoundLimit    = "round_limit_reached" // too many automatic rounds in a row
)

// Batch task statuses.
const (
	TaskSucceeded      = "succeeded"
	TaskFailed         = "failed"
	TaskPartial        = "partially_failed"
	TaskSystemPaused   = "system_paused"
	TaskRoundLimit     = "round_limit_reached"
	DefaultMaxRounds   = 10
	ReportInjectKind   = "instruction_report"
	maxConversationIDs = 10000
)

// Deps are the service's collaborators.
type Deps struct {
	Executor      *Executor
	Tasks         TaskRecorder
	Conversations Conversations
	Injector      Injector
	Paused        func() bool // the system mode is paused
	MaxRounds     int         // automatic rounds per conversation (default 10)
}

// Service runs instruction batches for POST /v1/instructions/run and live
// ingest (HTTP or the bridge's conversation_message).
type Service struct {
	d      Deps
	mu     sync.Mutex
	rounds map[string]int // consecutive automatic rounds per local_conversation_id
	execMu sync.Mutex
	active map[string]int // batches running per local_conversation_id (under execMu)
}

// NewService builds the service.
func NewService(d Deps) *Service {
	if d.MaxRounds <= 0 {
		d.MaxRounds = DefaultMaxRounds
	}
	if d.Paused == nil {
		d.Paused = func() bool { return false }
	}
	return &Service{d: d, rounds: map[string]int{}, active: map[string]int{}}
}

// RunResult is the answer of POST /v1/instructions/run.
type RunResult struct {
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Batch
}

// Run executes the blocks of text with the caller's authority and records
// the batch as a task. Conversation instructions fail here: there is no
// current conversation.
func (s *Service) Run(ctx context.Context, text string, caller Caller) RunResult {
	parsed := instr.Parse(text)
	taskID, runID := s.start(ctx, "instructions run", "")
	b := s.d.Executor.Run(ctx, parsed, caller, Plan{})
	status := s.finish(ctx, taskID, runID, b)
	return RunResult{TaskID: taskID, RunID: runID, Status: status, Batch: b}
}

// Message is one final message of a conversation.
type Message struct {
	ConvRef
	MessageID string
	Text      string
	Role      string // assistant (default) or user
}

// IngestResult says what happened to a message.
type IngestResult struct {
	Status               string `json:"status"`
	MessageID            string `json:"message_id"`
	RepeatedMessageCount int    `json:"repeated_message_count"`
	Round                int    `json:"round"`
	MaxRounds            int    `json:"max_rounds"`
	SystemPaused         bool   `json:"system_paused"`
	TaskID               string `json:"task_id,omitempty"`
	RunID                string `json:"run_id,omitempty"`
	TaskStatus           string `json:"task_status,omitempty"`
	InjectID             string `json:"inject_id,omitempty"`
	InjectError          string `json:"inject_error,omitempty"`
	// NotInjected says why the report was not typed into the chat though
	// the batch ran (an HTTP ingest without the token): the report is in
	// this answer only.
	NotInjected string `json:"not_injected,omitempty"`
	*Batch
}

// Ingest handles one final message: a repeat is counted and not run again;
// otherwise its blocks run (ordinary ones only when the system is not
// paused), the conversation is instruction_running meanwhile, and the report
// is injected back into the conversation.
func (s *Service) Ingest(ctx context.Context, m Message, caller Caller) (IngestResult, error) {
	res := IngestResult{MessageID: m.MessageID, MaxRounds: s.d.MaxRounds}
	repeat, count, err := s.d.Conversations.NoteMessage(ctx, m.ConvRef, m.MessageID)
	if err != nil {
		return res, err
	}
	res.RepeatedMessageCount = count
	if repeat {
		res.Status = IngestRepeated
		return res, nil
	}
	if m.Role == "user" {
		s.resetRounds(m.LocalConversationID)
		res.Status = IngestUserMessage
		return res, nil
	}
	if instr.IsReport(m.Text) {
		res.Status = IngestOwnReport
		return res, nil
	}
	parsed := instr.Parse(m.Text)
	if len(parsed.Blocks) == 0 && len(parsed.Refused) == 0 {
		s.resetRounds(m.LocalConversationID)
		res.Status = IngestNoInstruction
		res.Batch = &Batch{Report: "", Results: []Outcome{}, Dropped: parsed.Dropped}
		return res, nil
	}
	round, ok := s.takeRound(m.LocalConversationID)
	res.Round = round
	res.SystemPaused = s.d.Paused()
	if !ok {
		taskID, runID := s.start(ctx, "ingest "+m.LocalConversationID+" "+m.MessageID, m.LocalConversationID)
		msg := fmt.Sprintf("round limit reached: %d automatic rounds in a row for conversation %s; a user message resets it", s.d.MaxRounds, m.LocalConversationID)
		s.d.Tasks.Log(ctx, taskID, runID, msg)
		s.d.Tasks.Finish(ctx, taskID, runID, TaskRoundLimit, msg)
		res.Status, res.TaskID, res.RunID, res.TaskStatus = IngestRoundLimit, taskID, runID, TaskRoundLimit
		return res, nil
	}

	// The conversation is marked before the task starts: the task's span
	// (created to finished) then lies inside the hold, and no renewal can
	// start between the two writes. (With the task first, chaos saw one
	// start 5 ms into a batch.) A new leader keeps the hold while a task
	// of the conversation runs (conv.recover keep_batches); in the one
	// write between the two it does not, a window of one raft round trip.
	if err := s.begin(ctx, m.ConvRef); err != nil {
		return res, err
	}
	defer s.end(context.WithoutCancel(ctx), m.ConvRef)
	started := time.Now()
	taskID, runID := s.start(ctx, "ingest "+m.LocalConversationID+" "+m.MessageID, m.LocalConversationID)
	plan := Plan{Paused: res.SystemPaused, Control: s.controlFor(m.ConvRef)}
	caller.LocalConversationID, caller.MessageID = m.LocalConversationID, m.MessageID
	b := s.d.Executor.Run(ctx, parsed, caller, plan)
	res.Status, res.TaskID, res.RunID, res.Batch = IngestExecuted, taskID, runID, &b
	res.TaskStatus = s.finish(ctx, taskID, runID, b)
	if !caller.MayInject {
		res.NotInjected = NotInjectedNoToken
		s.d.Tasks.Log(ctx, taskID, runID, "report not typed into the chat: "+NotInjectedNoToken)
		return res, nil
	}
	id, err := s.d.Injector.Inject(ctx, m.ConvRef, ReportInjectKind, reportKey(taskID, started), b.Report)
	if err != nil {
		res.InjectError = err.Error()
	}
	res.InjectID = id
	return res, nil
}

// NotInjectedNoToken is IngestResult.NotInjected for an HTTP ingest without
// the shared token.
const NotInjectedNoToken = "the ingest came over HTTP without the shared token; only the conversation's own plugin (over the bridge) or a caller with the token may have a report typed into a chat. The report is in this answer (report), and the task log lists each instruction's outcome"

// controlFor acts on the message's own conversation (scope current).
func (s *Service) controlFor(c ConvRef) func(ctx context.Context, ctl Control) (string, error) {
	return func(ctx context.Context, ctl Control) (string, error) {
		switch ctl.Op {
		case "pause":
			if err := s.d.Conversations.SetAutomation(ctx, c, "paused", ctl.Reason); err != nil {
				return "", err
			}
			return fmt.Sprintf("conversation %s paused", c.LocalConversationID), nil
		case "resume":
			st, err := s.d.Conversations.ResumeAutomation(ctx, c)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("conversation %s resumed: %s", c.LocalConversationID, st), nil
		case "mode":
			if err := s.d.Conversations.SetAutomation(ctx, c, ctl.Mode, ""); err != nil {
				return "", err
			}
			return fmt.Sprintf("conversation %s mode %s", c.LocalConversationID, ctl.Mode), nil
		}
		return "", fmt.Errorf("unknown conversation operation %q", ctl.Op)
	}
}

// begin marks the conversation instruction_running for its first batch;
// end returns it to idle when its last batch finishes, so overlapping
// messages of one conversation do not mark it idle too early. execMu keeps
// the count and the state write in one step.
func (s *Service) begin(ctx context.Context, c ConvRef) error {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	if s.active[c.LocalConversationID] == 0 {
		if err := s.d.Conversations.SetExecution(ctx, c, ExecInstructionRunning); err != nil {
			return err
		}
	}
	s.active[c.LocalConversationID]++
	return nil
}

func (s *Service) end(ctx context.Context, c ConvRef) {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.active[c.LocalConversationID]--
	if s.active[c.LocalConversationID] <= 0 {
		delete(s.active, c.LocalConversationID)
		_ = s.d.Conversations.SetExecution(ctx, c, ExecIdle)
	}
}

// takeRound counts one automatic round; false when the limit is reached.
func (s *Service) takeRound(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.rounds[id]
	if n >= s.d.MaxRounds {
		return n, false
	}
	if len(s.rounds) >= maxConversationIDs {
		s.rounds = map[string]int{} // bounded memory: forget old conversations
	}
	s.rounds[id] = n + 1
	return n + 1, true
}

func (s *Service) resetRounds(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rounds, id)
}

func (s *Service) start(ctx context.Context, title, conversation string) (string, string) {
	taskID, runID, err := s.d.Tasks.Start(ctx, TaskKind, title, conversation)
	if err != nil {
		return "", ""
	}
	return taskID, runID
}

// finish logs one line per instruction and closes the task with the batch's
// status: system_paused when nothing ran because of the pause.
func (s *Service) finish(ctx context.Context, taskID, runID string, b Batch) string {
	ok, failed, paused := 0, 0, 0
	for _, o := range b.Results {
		line := fmt.Sprintf("%s %s", o.Label, o.Status)
		if o.Error != nil {
			line += ": " + o.Error.Code
		}
		if o.Origin != nil {
			line += " (" + o.Origin.String() + ")"
		}
		s.d.Tasks.Log(ctx, taskID, runID, line)
		switch {
		case o.OK:
			ok++
		case o.Status == StatusSystemPaused:
			paused++
		default:
			failed++
		}
	}
	status := TaskSucceeded
	switch {
	case paused > 0 && ok == 0 && failed == 0:
		status = TaskSystemPaused
	case failed+paused > 0 && ok > 0:
		status = TaskPartial
	case failed > 0:
		status = TaskFailed
	}
	s.d.Tasks.Finish(ctx, taskID, runID, status, fmt.Sprintf("%d succeeded, %d failed, %d system_paused", ok, failed, paused))
	return status
}

// reportKey is the delivery_key of a batch's report (its task id and start),
// or none when the task could not be recorded.
func reportKey(taskID string, started time.Time) string {
	if k := bridgeproto.ReportDeliveryKey(taskID, started); taskID != "" && bridgeproto.ValidDeliveryKey(k) {
		return k
	}
	return ""
}
