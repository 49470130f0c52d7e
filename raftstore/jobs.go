package raftstore

import (
	"fmt"
	"time"
)

// Renewal job commands. A job is one follow-up message the scheduler sends
// into an auto conversation that has gone quiet.
const (
	CmdJobCreate  = "job.create"  // projector: a pending job (never a second one per conversation)
	CmdJobStart   = "job.start"   // dispatcher: pending → running, conversation renewal_running
	CmdJobFinish  = "job.finish"  // delivery outcome: running → done / failed, counters, auto-pause
	CmdJobRecover = "job.recover" // start-up (and a worker's restart): running jobs back to pending
	CmdTickRecord = "tick.record" // one scheduler tick (skipped_system_paused counted here)
)

// Job statuses.
const (
	JobPending  = "pending"
	JobRunning  = "running"
	JobDone     = "done"
	JobFailed   = "failed"
	JobCanceled = "canceled"
)

// MaxFinishedJobs bounds the finished jobs kept (oldest dropped first).
const MaxFinishedJobs = 2000

// JobsState is the renewal jobs area and the scheduler's tick record.
type JobsState struct {
	Seq   uint64                 `json:"seq"`
	ByID  map[string]*RenewalJob `json:"by_id"`
	Ticks TickStats              `json:"ticks"`
}

// TickStats is what the scheduler's ticks did, durably.
type TickStats struct {
	Total               int64     `json:"total"`
	SkippedSystemPaused int64     `json:"skipped_system_paused"`
	LastTickAt          time.Time `json:"last_tick_at,omitzero"`
	LastSkippedAt       time.Time `json:"last_skipped_system_paused_at,omitzero"`
	LastOutcome         string    `json:"last_outcome,omitempty"`
}

func (j *JobsState) normalize() {
	if j.ByID == nil {
		j.ByID = map[string]*RenewalJob{}
	}
}

// RenewalJob is one renewal job.
type RenewalJob struct {
	ID          string       `json:"job_id"`
	LocalID     string       `json:"local_conversation_id"`
	Message     string       `json:"message"`
	DueAt       time.Time    `json:"due_at"`
	Attempts    int          `json:"attempts"`
	Status      string       `json:"status"`
	LastError   string       `json:"last_error,omitempty"`
	DeliveryAck *DeliveryAck `json:"delivery_ack,omitempty"`
	InjectID    string       `json:"inject_id,omitempty"`
	// Duplicate: the plugin had typed this job's message before (its
	// delivery_key) and typed nothing on the delivery that finished it.
	Duplicate  bool       `json:"duplicate,omitempty"`
	TaskID     string     `json:"task_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// DeliveryAck is how far a delivery got (level 1: the page's send request
// answered; status_code is that HTTP status).
type DeliveryAck struct {
	Level      int `json:"level"`
	StatusCode int `json:"status_code,omitempty"`
}

// JobCreate is the payload of CmdJobCreate.
type JobCreate struct {
	LocalID string    `json:"local_conversation_id"`
	Message string    `json:"message"`
	DueAt   time.Time `json:"due_at"`
}

// JobRef names a job.
type JobRef struct {
	JobID string `json:"job_id"`
}

// JobFinish is the payload of CmdJobFinish. Limits come from the settings
// the tick ran with, so every replica applies the same rule.
type JobFinish struct {
	JobID        string       `json:"job_id"`
	OK           bool         `json:"ok"`
	Error        string       `json:"error,omitempty"`
	DeliveryAck  *DeliveryAck `json:"delivery_ack,omitempty"`
	InjectID     string       `json:"inject_id,omitempty"`
	Duplicate    bool         `json:"duplicate,omitempty"`
	MaxFailures  int          `json:"max_failures"`
	MaxRenewals  int          `json:"max_renewals"`
	PauseOnLimit bool         `json:"pause_on_limit"`
}

// TickRecord is the payload of CmdTickRecord.
type TickRecord struct {
	SkippedSystemPaused bool   `json:"skipped_system_paused"`
	Outcome             string `json:"outcome,omitempty"`
}

func applyJobCreate(s *State, c Command) (any, error) {
	var p JobCreate
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	cv := s.Conversations.ByID[p.LocalID]
	if cv == nil {
		return nil, fmt.Errorf("no conversation %q", p.LocalID)
	}
	if cv.AutomationStatus != AutoAuto {
		return nil, fmt.Errorf("conversation %s is %s, not auto", p.LocalID, cv.AutomationStatus)
	}
	if p.Message == "" || len(p.Message) > 64<<10 {
		return nil, fmt.Errorf("a job message is 1 byte to 64 KiB")
	}
	for _, j := range s.Jobs.ByID {
		if j.LocalID == p.LocalID && (j.Status == JobPending || j.Status == JobRunning) {
			return nil, fmt.Errorf("conversation %s already has job %s %s", p.LocalID, j.ID, j.Status)
		}
	}
	s.Jobs.Seq++
	j := &RenewalJob{ID: fmt.Sprintf("job-%d", s.Jobs.Seq), LocalID: p.LocalID, Message: p.Message, DueAt: p.DueAt, Status: JobPending, CreatedAt: c.At, UpdatedAt: c.At}
	s.Jobs.ByID[j.ID] = j
	return *j, nil
}

func applyJobStart(s *State, c Command) (any, error) {
	var p JobRef
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	j := s.Jobs.ByID[p.JobID]
	if j == nil {
		return nil, fmt.Errorf("no job %q", p.JobID)
	}
	if j.Status != JobPending {
		// The one guard against running a job twice: only a pending job starts.
		return nil, fmt.Errorf("job %s is %s, not pending", j.ID, j.Status)
	}
	cv := s.Conversations.ByID[j.LocalID]
	if cv == nil || cv.AutomationStatus != AutoAuto {
		return nil, fmt.Errorf("job %s: its conversation is not auto", j.ID)
	}
	if cv.ExecutionState == ExecInstructionRunning {
		// Never type a renewal into a conversation while its instruction
		// batch runs: the job stays pending for a later tick.
		return nil, fmt.Errorf("job %s: conversation %s is running an instruction batch; the job waits", j.ID, j.LocalID)
	}
	at := c.At
	j.Status, j.StartedAt, j.UpdatedAt = JobRunning, &at, at
	j.Attempts++
	cv.ExecutionState = ExecRenewalRunning
	s.Conversations.touch(cv, at)
	return *j, nil
}

func applyJobFinish(s *State, c Command) (any, error) {
	var p JobFinish
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	j := s.Jobs.ByID[p.JobID]
	if j == nil {
		return nil, fmt.Errorf("no job %q", p.JobID)
	}
	if j.Status != JobRunning {
		return nil, fmt.Errorf("job %s is %s, not running", j.ID, j.Status)
	}
	at := c.At
	j.FinishedAt, j.UpdatedAt, j.DeliveryAck, j.InjectID = &at, at, p.DeliveryAck, p.InjectID
	cv := s.Conversations.ByID[j.LocalID]
	j.Duplicate = p.OK && p.Duplicate
	if p.OK {
		j.Status, j.LastError = JobDone, ""
	} else {
		j.Status, j.LastError = JobFailed, clipText(p.Error, 1024)
	}
	if cv != nil {
		if cv.ExecutionState == ExecRenewalRunning {
			// Only the renewal's own state ends here, never a batch's.
			cv.ExecutionState = ExecIdle
		}
		s.Conversations.touch(cv, at)
		if p.OK {
			cv.ConsecutiveFailureCount = 0
			cv.RepeatedRenewalCount++
			cv.LastError = ""
			if p.MaxRenewals > 0 && cv.RepeatedRenewalCount >= p.MaxRenewals && cv.AutomationStatus == AutoAuto {
				cv.AutomationStatus, cv.LastNonPausedAutomationStatus = AutoPaused, AutoAuto
				cv.PauseReason = fmt.Sprintf("renewal repeated %d times without a new AI reply; paused automatically", cv.RepeatedRenewalCount)
			}
		} else {
			cv.ConsecutiveFailureCount++
			cv.LastError = j.LastError
			if p.MaxFailures > 0 && cv.ConsecutiveFailureCount >= p.MaxFailures && cv.AutomationStatus == AutoAuto {
				cv.AutomationStatus, cv.LastNonPausedAutomationStatus = AutoPaused, AutoAuto
				cv.PauseReason = fmt.Sprintf("%d renewal deliveries failed in a row (last: %s); paused automatically", cv.ConsecutiveFailureCount, clipText(j.LastError, 200))
			}
		}
		s.Conversations.index(cv)
	}
	s.Jobs.compact()
	return *j, nil
}

// JobRecover is the payload of CmdJobRecover: every running job but those
// in Except (deliveries the supervisor still has in flight) goes back to
// pending.
type JobRecover struct {
	Except []string `json:"except,omitempty"`
}

func applyJobRecover(s *State, c Command) (any, error) {
	var p JobRecover
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, id := range p.Except {
		skip[id] = true
	}
	n := 0
	for _, j := range s.Jobs.ByID {
		if j.Status == JobRunning && !skip[j.ID] {
			j.Status, j.UpdatedAt = JobPending, c.At
			if cv := s.Conversations.ByID[j.LocalID]; cv != nil && cv.ExecutionState == ExecRenewalRunning {
				cv.ExecutionState = ExecIdle
			}
			n++
		}
	}
	return n, nil
}

func applyTickRecord(s *State, c Command) (any, error) {
	var p TickRecord
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	s.Jobs.Ticks.Total++
	s.Jobs.Ticks.LastTickAt = c.At
	s.Jobs.Ticks.LastOutcome = clipText(p.Outcome, 256)
	if p.SkippedSystemPaused {
		s.Jobs.Ticks.SkippedSystemPaused++
		s.Jobs.Ticks.LastSkippedAt = c.At
	}
	return s.Jobs.Ticks, nil
}

// compact drops the oldest finished jobs beyond MaxFinishedJobs (one pass
// at the bound, see TasksState.compact).
func (j *JobsState) compact() {
	dropOldest(j.ByID, MaxFinishedJobs, func(x *RenewalJob) *time.Time { return x.FinishedAt })
}
