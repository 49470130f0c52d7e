package raftstore

import (
	"fmt"
	"sort"
	"time"
)

// Task commands: a task is a unit of work the daemon runs on someone's
// behalf (an instruction batch, a renewal job run), with runs and bounded
// logs per run.
const (
	CmdTaskStart  = "task.start"
	CmdTaskLog    = "task.log"
	CmdTaskFinish = "task.finish"
)

// Task statuses.
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskCanceled  = "canceled"
	TaskSkipped   = "skipped"
)

// Bounds of the tasks area: finished tasks beyond MaxFinishedTasks are
// compacted away, oldest first; each run keeps its last MaxRunLogLines lines.
const (
	MaxFinishedTasks = 1000
	MaxRunLogLines   = 200
	maxLogLine       = 4096
)

// TasksState is the tasks area of the FSM.
type TasksState struct {
	Seq  uint64           `json:"seq"`
	ByID map[string]*Task `json:"by_id"`
}

func (t *TasksState) normalize() {
	if t.ByID == nil {
		t.ByID = map[string]*Task{}
	}
}

// Task is one task record.
type Task struct {
	ID           string     `json:"task_id"`
	Kind         string     `json:"kind"`
	Title        string     `json:"title,omitempty"`
	Status       string     `json:"status"`
	Source       string     `json:"source,omitempty"`
	Conversation string     `json:"local_conversation_id,omitempty"`
	Summary      string     `json:"summary,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	Runs         []TaskRun  `json:"runs"`
}

// TaskRun is one attempt of a task.
type TaskRun struct {
	RunID      string     `json:"run_id"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Logs       []LogLine  `json:"logs"`
	Dropped    int        `json:"dropped_lines"`
}

// LogLine is one log entry of a run.
type LogLine struct {
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// TaskStart is the payload of CmdTaskStart; it answers TaskRef.
type TaskStart struct {
	Kind         string `json:"kind"`
	Title        string `json:"title,omitempty"`
	Source       string `json:"source,omitempty"`
	Conversation string `json:"local_conversation_id,omitempty"`
}

// TaskRef names a task's run.
type TaskRef struct {
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
}

// TaskLog is the payload of CmdTaskLog.
type TaskLog struct {
	TaskRef
	Lines []string `json:"lines"`
}

// TaskFinish is the payload of CmdTaskFinish.
type TaskFinish struct {
	TaskRef
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// ValidTaskStatus reports whether s is a task status.
func ValidTaskStatus(s string) bool {
	switch s {
	case TaskQueued, TaskRunning, TaskSucceeded, TaskFailed, TaskCanceled, TaskSkipped:
		return true
	}
	return false
}

func applyTaskStart(s *State, c Command) (any, error) {
	var p TaskStart
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := needID("kind", p.Kind); err != nil {
		return nil, err
	}
	s.Tasks.Seq++
	id := fmt.Sprintf("task-%d", s.Tasks.Seq)
	run := fmt.Sprintf("run-%d-1", s.Tasks.Seq)
	s.Tasks.ByID[id] = &Task{
		ID: id, Kind: p.Kind, Title: clipText(p.Title, 256), Status: TaskRunning, Source: p.Source, Conversation: p.Conversation,
		CreatedAt: c.At, UpdatedAt: c.At, Runs: []TaskRun{{RunID: run, Status: TaskRunning, StartedAt: c.At, Logs: []LogLine{}}},
	}
	return TaskRef{TaskID: id, RunID: run}, nil
}

func (s *State) taskRun(ref TaskRef) (*Task, *TaskRun, error) {
	t := s.Tasks.ByID[ref.TaskID]
	if t == nil {
		return nil, nil, fmt.Errorf("no task %q", ref.TaskID)
	}
	for i := range t.Runs {
		if t.Runs[i].RunID == ref.RunID {
			return t, &t.Runs[i], nil
		}
	}
	return nil, nil, fmt.Errorf("task %s has no run %q", ref.TaskID, ref.RunID)
}

func applyTaskLog(s *State, c Command) (any, error) {
	var p TaskLog
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	t, run, err := s.taskRun(p.TaskRef)
	if err != nil {
		return nil, err
	}
	for _, l := range p.Lines {
		run.Logs = append(run.Logs, LogLine{At: c.At, Line: clipText(l, maxLogLine)})
	}
	if over := len(run.Logs) - MaxRunLogLines; over > 0 {
		run.Logs = append([]LogLine{}, run.Logs[over:]...)
		run.Dropped += over
	}
	t.UpdatedAt = c.At
	return nil, nil
}

func applyTaskFinish(s *State, c Command) (any, error) {
	var p TaskFinish
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	switch p.Status {
	case TaskSucceeded, TaskFailed, TaskCanceled, TaskSkipped:
	default:
		return nil, fmt.Errorf("a task finishes succeeded, failed, canceled or skipped, not %q", p.Status)
	}
	t, run, err := s.taskRun(p.TaskRef)
	if err != nil {
		return nil, err
	}
	if run.FinishedAt != nil {
		// A run finishes once: a late or repeated finish must not rewrite
		// the recorded outcome (nor move the task in the compaction order).
		return nil, fmt.Errorf("run %s of task %s already finished %s", run.RunID, t.ID, run.Status)
	}
	at := c.At
	run.Status, run.FinishedAt = p.Status, &at
	t.Status, t.Summary, t.FinishedAt, t.UpdatedAt = p.Status, clipText(p.Summary, 4096), &at, at
	s.Tasks.compact()
	return nil, nil
}

// compact drops the oldest finished tasks beyond MaxFinishedTasks, so the
// FSM (and every snapshot) stays bounded however long the daemon runs.
func (t *TasksState) compact() {
	var finished []*Task
	for _, x := range t.ByID {
		if x.FinishedAt != nil {
			finished = append(finished, x)
		}
	}
	if len(finished) <= MaxFinishedTasks {
		return
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].FinishedAt.Before(*finished[j].FinishedAt) })
	for _, x := range finished[:len(finished)-MaxFinishedTasks] {
		delete(t.ByID, x.ID)
	}
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
