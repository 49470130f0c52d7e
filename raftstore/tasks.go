package raftstore

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Task commands: a task is a unit of work the daemon runs on someone's
// behalf (an instruction batch, a renewal job run), with runs and bounded
// logs per run.
const (
	CmdTaskStart  = "task.start"
	CmdTaskLog    = "task.log"
	CmdTaskFinish = "task.finish"
	// CmdTaskRecover ends the tasks a dead process left running (a new
	// leader's start-up): see applyTaskRecover.
	CmdTaskRecover = "task.recover"
)

// TaskNodeLost is the error_code of a task ended by CmdTaskRecover: the
// process running it died or lost its leadership before its finish write.
const TaskNodeLost = "node_lost"

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
	// order indexes the tasks by their sequence number (start order), oldest
	// first: the list route walks it from the newest end and stops at its
	// limit instead of sorting every task. Entries of compacted tasks stay
	// until prune drops them. Derived from ByID (not in snapshots):
	// normalize rebuilds it on restore.
	order []*Task
	dead  int // entries of order no longer in ByID
}

func (t *TasksState) normalize() {
	if t.ByID == nil {
		t.ByID = map[string]*Task{}
	}
	t.order, t.dead = make([]*Task, 0, len(t.ByID)), 0
	for _, x := range t.ByID {
		t.order = append(t.order, x)
	}
	sort.Slice(t.order, func(i, j int) bool { return TaskSeq(t.order[i].ID) < TaskSeq(t.order[j].ID) })
}

// TaskSeq is the sequence number in a task id ("task-42" is 42; 0 for
// anything else). Tasks start in sequence order.
func TaskSeq(id string) uint64 {
	rest, ok := strings.CutPrefix(id, "task-")
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != rest {
		return 0
	}
	return n
}

// Newest calls fn for each task whose sequence number is below before (0:
// no bound), newest first, until fn returns false. Like all of State, only
// inside Node.Read.
func (t *TasksState) Newest(before uint64, fn func(x *Task) bool) {
	i := len(t.order)
	if before > 0 {
		i = sort.Search(len(t.order), func(k int) bool { return TaskSeq(t.order[k].ID) >= before })
	}
	for i--; i >= 0; i-- {
		x := t.order[i]
		if t.ByID[x.ID] != x {
			continue // compacted
		}
		if !fn(x) {
			return
		}
	}
}

// prune drops index entries of compacted tasks once they are half of it.
func (t *TasksState) prune() {
	if t.dead*2 < len(t.order) {
		return
	}
	live := t.order[:0]
	for _, x := range t.order {
		if t.ByID[x.ID] == x {
			live = append(live, x)
		}
	}
	clear(t.order[len(live):])
	t.order, t.dead = live, 0
}

// Task is one task record.
type Task struct {
	ID           string `json:"task_id"`
	Kind         string `json:"kind"`
	Title        string `json:"title,omitempty"`
	Status       string `json:"status"`
	Source       string `json:"source,omitempty"`
	Conversation string `json:"local_conversation_id,omitempty"`
	Summary      string `json:"summary,omitempty"`
	// ErrorCode says why a task ended without its own finish (node_lost).
	ErrorCode string `json:"error_code,omitempty"`
	// Runner names the process that runs the task ("<node>/<boot id>"):
	// recovery ends the running tasks of every runner but the live ones.
	Runner     string     `json:"runner,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Runs       []TaskRun  `json:"runs"`
}

// TaskRun is one attempt of a task.
type TaskRun struct {
	RunID      string     `json:"run_id"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Logs       []LogLine  `json:"logs"`
	Dropped    int        `json:"dropped_lines"`
	// Interrupted is set when recovery ended the run (not its runner); a
	// late finish from a runner that was alive after all replaces it.
	Interrupted bool `json:"interrupted,omitempty"`
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
	Runner       string `json:"runner,omitempty"`
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
	x := &Task{
		ID: id, Kind: p.Kind, Title: clipText(p.Title, 256), Status: TaskRunning, Source: p.Source, Conversation: p.Conversation, Runner: p.Runner,
		CreatedAt: c.At, UpdatedAt: c.At, Runs: []TaskRun{{RunID: run, Status: TaskRunning, StartedAt: c.At, Logs: []LogLine{}}},
	}
	s.Tasks.ByID[id] = x
	s.Tasks.order = append(s.Tasks.order, x)
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
	if run.Interrupted {
		// Recovery ended this run while its runner was in fact still
		// alive (a standby that ran an ingest across a leader change):
		// its own outcome is the truer one and replaces the guess.
		run.Interrupted, run.FinishedAt, t.ErrorCode = false, nil, ""
		run.Logs = append(run.Logs, LogLine{At: c.At, Line: "finished by its runner after recovery had marked it interrupted"})
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
// FSM (and every snapshot) stays bounded however long the daemon runs. At
// the bound one finish drops one task: a single pass finds it, instead of a
// sort of every finished task per finish (which made replaying a log of
// finishes after a restart cost a sort each). Ties go by task id, so every
// replica drops the same task.
func (t *TasksState) compact() {
	t.dead += dropOldest(t.ByID, MaxFinishedTasks, func(x *Task) *time.Time { return x.FinishedAt })
	t.prune()
}

// dropOldest deletes the entries with the oldest finish times (nil: not
// finished, never dropped) until at most keep finished ones remain, and says
// how many it dropped.
func dropOldest[T any](m map[string]T, keep int, finished func(T) *time.Time) int {
	type entry struct {
		key string
		at  time.Time
	}
	before := func(a, b entry) bool { return a.at.Before(b.at) || (a.at.Equal(b.at) && a.key < b.key) }
	n := 0
	var oldest entry
	for k, v := range m {
		at := finished(v)
		if at == nil {
			continue
		}
		e := entry{k, *at}
		if n == 0 || before(e, oldest) {
			oldest = e
		}
		n++
	}
	switch {
	case n <= keep:
		return 0
	case n == keep+1:
		delete(m, oldest.key)
		return 1
	}
	all := make([]entry, 0, n)
	for k, v := range m {
		if at := finished(v); at != nil {
			all = append(all, entry{k, *at})
		}
	}
	sort.Slice(all, func(i, j int) bool { return before(all[i], all[j]) })
	for _, e := range all[:n-keep] {
		delete(m, e.key)
	}
	return n - keep
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
