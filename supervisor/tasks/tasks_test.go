package tasks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
)

// newStore is the task store over a real single-node raft store.
func newStore(t *testing.T) (*Store, *raftstore.Node, context.Context) {
	t.Helper()
	n := raftstoretest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return New(n, "node-a"), n, ctx
}

func TestStartRecordsARunningTaskWithItsSource(t *testing.T) {
	s, _, ctx := newStore(t)
	id, run, err := s.Start(ctx, "instruction_batch", "ingest c1 m1", "c1")
	if err != nil || id == "" || run == "" {
		t.Fatalf("start: %q %q %v", id, run, err)
	}
	task, ok := s.Get(id)
	if !ok || task.Status != raftstore.TaskRunning || task.Source != "node-a" || task.Kind != "instruction_batch" || task.Title != "ingest c1 m1" || task.Conversation != "c1" {
		t.Fatalf("task: %+v %v", task, ok)
	}
	if len(task.Runs) != 1 || task.Runs[0].RunID != run || task.Runs[0].Status != raftstore.TaskRunning {
		t.Fatalf("runs: %+v", task.Runs)
	}
	if _, _, err := s.Start(ctx, "", "no kind", ""); err == nil {
		t.Fatal("a task without a kind was started")
	}
	if got, _ := s.List("", MaxLimit, ""); len(got) != 1 {
		t.Fatalf("%d tasks after a refused start, want 1", len(got))
	}
}

// The executor's finer outcomes map onto the task statuses, the word kept
// at the head of the summary; unknown or unfinished words count as failed.
func TestFinishMapsOutcomesOntoStatuses(t *testing.T) {
	s, _, ctx := newStore(t)
	for _, c := range []struct{ word, status, summary string }{
		{"succeeded", raftstore.TaskSucceeded, "s"},
		{"failed", raftstore.TaskFailed, "s"},
		{"canceled", raftstore.TaskCanceled, "s"},
		{"skipped", raftstore.TaskSkipped, "s"},
		{"ok", raftstore.TaskSucceeded, "ok: s"},
		{"system_paused", raftstore.TaskSkipped, "system_paused: s"},
		{"round_limit_reached", raftstore.TaskSkipped, "round_limit_reached: s"},
		{"partially_failed", raftstore.TaskFailed, "partially_failed: s"},
		{"running", raftstore.TaskFailed, "running: s"},
		{"queued", raftstore.TaskFailed, "queued: s"},
		{"exploded", raftstore.TaskFailed, "exploded: s"},
	} {
		id, run, err := s.Start(ctx, "k", c.word, "")
		if err != nil {
			t.Fatal(err)
		}
		s.Finish(ctx, id, run, c.word, "s")
		task, _ := s.Get(id)
		if task.Status != c.status || task.Summary != c.summary || task.FinishedAt == nil || task.Runs[0].Status != c.status {
			t.Errorf("finish %q: status %q summary %q, want %q %q", c.word, task.Status, task.Summary, c.status, c.summary)
		}
	}
}

// A run's outcome is recorded once; a later finish does not rewrite it.
func TestFinishTwiceKeepsTheFirstOutcome(t *testing.T) {
	s, _, ctx := newStore(t)
	id, run, _ := s.Start(ctx, "k", "t", "")
	s.Finish(ctx, id, run, "succeeded", "first")
	before, _ := s.Get(id)
	s.Finish(ctx, id, run, "failed", "second")
	after, _ := s.Get(id)
	if after.Status != raftstore.TaskSucceeded || after.Summary != "first" || !after.FinishedAt.Equal(*before.FinishedAt) {
		t.Fatalf("after a second finish: %+v", after)
	}
}

// Logging to an unknown task or run is best effort: it fails nothing and
// creates nothing.
func TestLogToUnknownRunChangesNothing(t *testing.T) {
	s, _, ctx := newStore(t)
	id, run, _ := s.Start(ctx, "k", "t", "")
	s.Log(ctx, id, "run-404", "lost")
	s.Log(ctx, "task-404", run, "lost")
	s.Finish(ctx, "task-404", run, "succeeded", "")
	logs, ok := s.Logs(id, "", MaxLogLimit)
	if !ok || len(logs) != 1 || len(logs[0].Lines) != 0 {
		t.Fatalf("logs: %+v %v", logs, ok)
	}
	if got, _ := s.List("", MaxLimit, ""); len(got) != 1 || got[0].Status != raftstore.TaskRunning {
		t.Fatalf("tasks: %+v", got)
	}
}

// List: newest first, filtered by status, at most limit, without logs.
func TestListFiltersAndLimits(t *testing.T) {
	s, _, ctx := newStore(t)
	var ids []string
	for i := 0; i < 5; i++ {
		id, run, _ := s.Start(ctx, "k", fmt.Sprint(i), "")
		s.Log(ctx, id, run, "hello")
		if i%2 == 0 {
			s.Finish(ctx, id, run, "succeeded", "")
		}
		ids = append(ids, id)
	}
	all, _ := s.List("", MaxLimit, "")
	if len(all) != 5 || all[0].ID != ids[4] || all[4].ID != ids[0] {
		t.Fatalf("list order: %v", summaryIDs(all))
	}
	for _, x := range all {
		if x.Runs != nil || len(x.RunIDs) != 1 {
			t.Fatalf("list entry carries runs or lacks run ids: %+v", x)
		}
	}
	if got, _ := s.List(raftstore.TaskSucceeded, MaxLimit, ""); len(got) != 3 {
		t.Fatalf("succeeded: %v", summaryIDs(got))
	}
	if got, _ := s.List(raftstore.TaskRunning, 1, ""); len(got) != 1 || got[0].ID != ids[3] {
		t.Fatalf("running, limit 1: %v", summaryIDs(got))
	}
	if task, ok := s.Get(ids[0]); !ok || task.Runs[0].Logs != nil {
		t.Fatalf("get carries logs: %+v", task)
	}
	if _, ok := s.Get("task-404"); ok {
		t.Fatal("an unknown task was found")
	}
}

// Logs: the last limit lines of a run, newest last, with the dropped count;
// an unknown task or run is not found.
func TestLogsTailAndRunFilter(t *testing.T) {
	s, n, ctx := newStore(t)
	id, run, _ := s.Start(ctx, "k", "t", "")
	lines := make([]string, raftstore.MaxRunLogLines+5)
	for i := range lines {
		lines[i] = fmt.Sprintf("l%d", i)
	}
	if _, err := n.Apply(ctx, raftstore.CmdTaskLog, raftstore.TaskLog{TaskRef: raftstore.TaskRef{TaskID: id, RunID: run}, Lines: lines}); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Logs(id, run, 3)
	if !ok || len(got) != 1 || len(got[0].Lines) != 3 || got[0].Dropped != 5 {
		t.Fatalf("logs: %+v %v", got, ok)
	}
	last := got[0].Lines
	if last[0].Line != lines[len(lines)-3] || last[2].Line != lines[len(lines)-1] {
		t.Fatalf("tail: %+v", last)
	}
	if all, _ := s.Logs(id, "", MaxLogLimit); len(all[0].Lines) != raftstore.MaxRunLogLines {
		t.Fatalf("%d lines kept, want %d", len(all[0].Lines), raftstore.MaxRunLogLines)
	}
	if _, ok := s.Logs(id, "run-404", 10); ok {
		t.Fatal("an unknown run was found")
	}
	if _, ok := s.Logs("task-404", "", 10); ok {
		t.Fatal("an unknown task was found")
	}
	if !strings.HasPrefix(got[0].RunID, "run-") {
		t.Fatalf("run id %q", got[0].RunID)
	}
}

func summaryIDs(s []Summary) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.ID
	}
	return out
}
