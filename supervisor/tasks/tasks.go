// Package tasks records and queries the work the daemon runs on someone's
// behalf (instruction batches today; renewal job runs next): tasks with
// runs and bounded logs, durable in raftstore and compacted to a bound.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"

	"github.com/svcd/svcd/raftstore"
)

// Writer is the one write path (raft through the supervisor).
type Writer interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
	Read(fn func(s *raftstore.State))
}

// Limits of the query routes.
const (
	DefaultLimit    = 50
	MaxLimit        = 500
	DefaultLogLimit = 100
	MaxLogLimit     = raftstore.MaxRunLogLines
)

// Store is the task records.
type Store struct {
	w      Writer
	source string
	runner string // "<source>/<boot id>": this process, as the tasks it starts name it

	// What this process is running, as the task reaper asks it (Running):
	// a task stays here from its start until its finish was attempted,
	// written or not (a node that lost the lead cannot write it).
	mu       sync.Mutex
	mine     map[string]bool
	starting int // Starts in flight: their ids are not known yet
}

// New returns a Store over w; source labels the tasks it starts. Each Store
// (each process) gets a fresh runner id, so recovery can tell this
// process's running tasks from those a dead one left.
func New(w Writer, source string) *Store {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Store{w: w, source: source, runner: source + "/" + hex.EncodeToString(b), mine: map[string]bool{}}
}

// Start implements the instruction executor's TaskRecorder.
// conversation is the local conversation a batch came from ("" for a
// direct run), listed with the task.
func (s *Store) Start(ctx context.Context, kind, title, conversation string) (string, string, error) {
	s.mu.Lock()
	s.starting++
	s.mu.Unlock()
	v, err := s.w.Apply(ctx, raftstore.CmdTaskStart, raftstore.TaskStart{Kind: kind, Title: title, Source: s.source, Runner: s.runner, Conversation: conversation})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting--
	if err != nil {
		return "", "", err
	}
	ref := v.(raftstore.TaskRef)
	s.mine[ref.TaskID] = true
	return ref.TaskID, ref.RunID, nil
}

// Running is what this process runs now: the ids of the tasks it started
// and has not finished, and how many starts are in flight (a task the
// store already lists may be one of them).
func (s *Store) Running() (ids []string, starting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids = make([]string, 0, len(s.mine))
	for id := range s.mine {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, s.starting
}

// Log implements TaskRecorder (best effort: a lost log line never fails the work).
func (s *Store) Log(ctx context.Context, taskID, runID, line string) {
	_, _ = s.w.Apply(ctx, raftstore.CmdTaskLog, raftstore.TaskLog{TaskRef: raftstore.TaskRef{TaskID: taskID, RunID: runID}, Lines: []string{line}})
}

// Finish implements TaskRecorder. The executor says "succeeded" or
// "failed"; other words map onto the task statuses.
func (s *Store) Finish(ctx context.Context, taskID, runID, status, summary string) {
	// The executor's finer outcomes map onto the task statuses; the word
	// itself stays at the head of the summary.
	mapped := status
	switch status {
	case "ok", "done", "success":
		mapped = raftstore.TaskSucceeded
	case "system_paused", "round_limit_reached":
		mapped = raftstore.TaskSkipped
	case "partially_failed":
		mapped = raftstore.TaskFailed
	}
	if !raftstore.ValidTaskStatus(mapped) || mapped == raftstore.TaskQueued || mapped == raftstore.TaskRunning {
		mapped = raftstore.TaskFailed
	}
	if mapped != status {
		summary = status + ": " + summary
	}
	status = mapped
	_, _ = s.w.Apply(ctx, raftstore.CmdTaskFinish, raftstore.TaskFinish{TaskRef: raftstore.TaskRef{TaskID: taskID, RunID: runID}, Status: status, Summary: summary})
	s.mu.Lock()
	delete(s.mine, taskID)
	s.mu.Unlock()
}

// Summary is a task without its logs (the list view).
type Summary struct {
	raftstore.Task
	RunIDs []string `json:"run_ids"`
}

// List returns tasks newest first (in start order), optionally with one
// status, at most limit, from the FSM's task index: it visits the newest
// tasks until limit match, not every task. after is a cursor (a task_id a
// previous page ended with; "" for the first page): the page holds the
// tasks started before it. next is the cursor of the page after this one,
// "" when there is none. A task started while a client pages is on no later
// page (it is newer than the cursor); every other task still kept is on
// exactly one page.
func (s *Store) List(status string, limit int, after string) (out []Summary, next string) {
	out = []Summary{} // an empty list is [] in JSON, never null
	before := uint64(0)
	if after != "" {
		before = raftstore.TaskSeq(after)
	}
	more := false
	s.w.Read(func(st *raftstore.State) {
		st.Tasks.Newest(before, func(t *raftstore.Task) bool {
			if status != "" && t.Status != status {
				return true
			}
			if len(out) == limit {
				more = true
				return false
			}
			sum := Summary{Task: *t}
			sum.Runs = nil
			sum.RunIDs = make([]string, 0, len(t.Runs))
			for _, r := range t.Runs {
				sum.RunIDs = append(sum.RunIDs, r.RunID)
			}
			out = append(out, sum)
			return true
		})
	})
	if more {
		next = out[len(out)-1].ID
	}
	return out, next
}

// ValidCursor says whether c can be a cursor of List: a task id
// (task-<n>), whether or not that task is still kept.
func ValidCursor(c string) bool { return raftstore.TaskSeq(c) > 0 }

// Get returns one task with its runs, without logs.
func (s *Store) Get(id string) (raftstore.Task, bool) {
	var out raftstore.Task
	var ok bool
	s.w.Read(func(st *raftstore.State) {
		if t := st.Tasks.ByID[id]; t != nil {
			out, ok = *t, true
			out.Runs = append([]raftstore.TaskRun(nil), t.Runs...)
			for i := range out.Runs {
				out.Runs[i].Logs = nil
			}
		}
	})
	return out, ok
}

// Logs returns the last limit log lines of a run (runID "" = every run,
// newest lines last), or false for an unknown task or run.
func (s *Store) Logs(id, runID string, limit int) ([]RunLogs, bool) {
	var out []RunLogs
	found := false
	s.w.Read(func(st *raftstore.State) {
		t := st.Tasks.ByID[id]
		if t == nil {
			return
		}
		for _, r := range t.Runs {
			if runID != "" && r.RunID != runID {
				continue
			}
			found = true
			lines := r.Logs
			if len(lines) > limit {
				lines = lines[len(lines)-limit:]
			}
			out = append(out, RunLogs{RunID: r.RunID, Status: r.Status, Lines: append([]raftstore.LogLine{}, lines...), Dropped: r.Dropped})
		}
	})
	return out, found
}

// RunLogs is one run's log view.
type RunLogs struct {
	RunID   string              `json:"run_id"`
	Status  string              `json:"status"`
	Lines   []raftstore.LogLine `json:"lines"`
	Dropped int                 `json:"dropped_lines"`
}
