package raftstore

import (
	"fmt"
	"sort"
	"time"
)

// Task commands. Ids are chosen by the proposer (the FSM never invents
// anything), so every replica applies the same record.
const (
	CmdTaskStart  = "task.start"
	CmdTaskLog    = "task.log"
	CmdTaskFinish = "task.finish"
)

// Task statuses: running until finished with any other status.
const TaskRunning = "running"

// Bounds of the task area. Finished tasks beyond MaxFinishedTasks are
// compacted away oldest first whenever a task starts; a running task is
// never dropped. Each run keeps its first MaxRunLogLines lines (each cut to
// MaxLogLineBytes) and counts the ones it dropped.
const (
	MaxFinishedTasks = 500
	MaxRunningTasks  = 1000
	MaxRunLogLines   = 500
	MaxLogLineBytes  = 4096
)

// TaskState holds the tasks by id.
type TaskState struct {
	ByID map[string]*Task `json:"by_id"`
}

// Task is one unit of work (kind instruction_batch, renewal, …) with its
// single run and that run's bounded log.
type Task struct {
	ID              string    `json:"task_id"`
	RunID           string    `json:"run_id"`
	Kind            string    `json:"kind"`
	Title           string    `json:"title"`
	Status          string    `json:"status"`
	Summary         string    `json:"summary,omitempty"`
	Logs            []TaskLog `json:"logs"`
	DroppedLogLines int       `json:"dropped_log_lines"`
	StartedAt       time.Time `json:"started_at"`
	FinishedAt      time.Time `json:"finished_at,omitempty"`
}

// TaskLog is one log line of a run.
type TaskLog struct {
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// TaskStart is the payload of CmdTaskStart.
type TaskStart struct {
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
}

// TaskLogLine is the payload of CmdTaskLog.
type TaskLogLine struct {
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
	Line   string `json:"line"`
}

// TaskFinish is the payload of CmdTaskFinish.
type TaskFinish struct {
	TaskID  string `json:"task_id"`
	RunID   string `json:"run_id"`
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

func (t *TaskState) normalize() {
	if t.ByID == nil {
		t.ByID = map[string]*Task{}
	}
}

// Clone copies a task for reading outside Node.Read.
func (t *Task) Clone() Task {
	out := *t
	out.Logs = append([]TaskLog{}, t.Logs...)
	return out
}

// Newest lists up to limit tasks (all when limit ≤ 0), newest first.
func (t *TaskState) Newest(limit int) []Task {
	all := make([]*Task, 0, len(t.ByID))
	for _, v := range t.ByID {
		all = append(all, v)
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].StartedAt.Equal(all[j].StartedAt) {
			return all[i].StartedAt.After(all[j].StartedAt)
		}
		return all[i].ID > all[j].ID
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out := make([]Task, len(all))
	for i, v := range all {
		out[i] = v.Clone()
	}
	return out
}

// compact drops the oldest finished tasks beyond MaxFinishedTasks.
func (t *TaskState) compact() {
	var done []*Task
	for _, v := range t.ByID {
		if v.Status != TaskRunning {
			done = append(done, v)
		}
	}
	if len(done) <= MaxFinishedTasks {
		return
	}
	sort.Slice(done, func(i, j int) bool {
		if !done[i].FinishedAt.Equal(done[j].FinishedAt) {
			return done[i].FinishedAt.Before(done[j].FinishedAt)
		}
		return done[i].ID < done[j].ID
	})
	for _, v := range done[:len(done)-MaxFinishedTasks] {
		delete(t.ByID, v.ID)
	}
}

func (t *TaskState) running() int {
	n := 0
	for _, v := range t.ByID {
		if v.Status == TaskRunning {
			n++
		}
	}
	return n
}

func applyTaskStart(s *State, c Command) (any, error) {
	var p TaskStart
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" || p.RunID == "" || p.Kind == "" {
		return nil, fmt.Errorf("%s: task_id, run_id and kind are required", c.Type)
	}
	if _, dup := s.Tasks.ByID[p.TaskID]; dup {
		return nil, fmt.Errorf("%s: task %s exists", c.Type, p.TaskID)
	}
	if s.Tasks.running() >= MaxRunningTasks {
		return nil, fmt.Errorf("%s: more than %d running tasks", c.Type, MaxRunningTasks)
	}
	t := &Task{ID: p.TaskID, RunID: p.RunID, Kind: p.Kind, Title: clipString(p.Title, 256), Status: TaskRunning, Logs: []TaskLog{}, StartedAt: c.At}
	s.Tasks.ByID[t.ID] = t
	s.Tasks.compact()
	return t.Clone(), nil
}

func (s *State) task(typ, id, run string) (*Task, error) {
	t := s.Tasks.ByID[id]
	if t == nil || t.RunID != run {
		return nil, fmt.Errorf("%s: no task %s with run %s", typ, id, run)
	}
	return t, nil
}

func applyTaskLog(s *State, c Command) (any, error) {
	var p TaskLogLine
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	t, err := s.task(c.Type, p.TaskID, p.RunID)
	if err != nil {
		return nil, err
	}
	if len(t.Logs) >= MaxRunLogLines {
		t.DroppedLogLines++
		return nil, nil
	}
	t.Logs = append(t.Logs, TaskLog{At: c.At, Line: clipString(p.Line, MaxLogLineBytes)})
	return nil, nil
}

func applyTaskFinish(s *State, c Command) (any, error) {
	var p TaskFinish
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.Status == "" || p.Status == TaskRunning {
		return nil, fmt.Errorf("%s: a finished status is required", c.Type)
	}
	t, err := s.task(c.Type, p.TaskID, p.RunID)
	if err != nil {
		return nil, err
	}
	t.Status, t.Summary, t.FinishedAt = p.Status, clipString(p.Summary, MaxLogLineBytes), c.At
	s.Tasks.compact()
	return t.Clone(), nil
}

// clipString cuts s to at most n bytes on a UTF-8 boundary.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// CmdTaskRecover marks tasks left running by an abnormal exit as
// interrupted (run at start-up on the leader, before new work starts).
const CmdTaskRecover = "task.recover"

// TaskInterrupted is the status of a task its process died under.
const TaskInterrupted = "interrupted"

func applyTaskRecover(s *State, c Command) (any, error) {
	n := 0
	for _, t := range s.Tasks.ByID {
		if t.Status == TaskRunning {
			t.Status, t.Summary, t.FinishedAt = TaskInterrupted, "the daemon stopped while this task ran", c.At
			n++
		}
	}
	s.Tasks.compact()
	return n, nil
}
