package raftstore

import (
	"reflect"
	"strings"
	"testing"
)

// A new leader ends the tasks of runners that are gone, and only those: the
// live runner's task and finished tasks stay as they were.
func TestTaskRecoverEndsOnlyTheTasksOfLostRunners(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := taskCtx(t)
	start := func(runner string) TaskRef {
		t.Helper()
		v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "instruction_batch", Title: "ingest c m", Runner: runner, Conversation: "c"})
		if err != nil {
			t.Fatal(err)
		}
		return v.(TaskRef)
	}
	live, lost, old, done := start("a/new"), start("a/old"), start(""), start("a/old")
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskRef: done, Status: TaskSucceeded, Summary: "ok"}); err != nil {
		t.Fatal(err)
	}
	var before Task
	n.Read(func(s *State) { before = cloneTask(s.Tasks.ByID[done.TaskID]) })

	// Without live runners it would end the caller's own work: refused.
	if _, err := n.Apply(ctx, CmdTaskRecover, TaskRecover{}); err == nil || !strings.Contains(err.Error(), "live runners") {
		t.Fatalf("recover without live runners: %v", err)
	}
	n.Read(func(s *State) {
		if st := s.Tasks.ByID[lost.TaskID].Status; st != TaskRunning {
			t.Fatalf("a refused recovery changed a task to %s", st)
		}
	})

	v, err := n.Apply(ctx, CmdTaskRecover, TaskRecover{Live: []string{"a/new"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.([]string), []string{lost.TaskID, old.TaskID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ended %v, want %v", got, want)
	}
	n.Read(func(s *State) {
		for _, ref := range []TaskRef{lost, old} {
			x := s.Tasks.ByID[ref.TaskID]
			if x.Status != TaskFailed || x.ErrorCode != TaskNodeLost || x.FinishedAt == nil || !strings.HasPrefix(x.Summary, "node_lost: ") {
				t.Errorf("%s: status %s, error_code %q, summary %q, finished %v", ref.TaskID, x.Status, x.ErrorCode, x.Summary, x.FinishedAt)
			}
			r := x.Runs[0]
			if r.Status != TaskFailed || !r.Interrupted || r.FinishedAt == nil || len(r.Logs) == 0 || !strings.Contains(r.Logs[len(r.Logs)-1].Line, "interrupted") {
				t.Errorf("%s run: %+v", ref.TaskID, r)
			}
		}
		if x := s.Tasks.ByID[live.TaskID]; x.Status != TaskRunning || x.ErrorCode != "" || x.Runs[0].FinishedAt != nil {
			t.Errorf("the live runner's task was touched: %+v", *x)
		}
		if got := cloneTask(s.Tasks.ByID[done.TaskID]); !reflect.DeepEqual(got, before) {
			t.Errorf("a finished task changed:\n%+v\n%+v", got, before)
		}
	})

	// A second recovery finds nothing more to end.
	if v, err := n.Apply(ctx, CmdTaskRecover, TaskRecover{Live: []string{"a/new"}}); err != nil || len(v.([]string)) != 0 {
		t.Fatalf("second recovery: %v %v", v, err)
	}

	// The runner was alive after all (a standby across a leader change):
	// its own finish replaces the guess, once.
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskRef: lost, Status: TaskSucceeded, Summary: "1 succeeded"}); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		x := s.Tasks.ByID[lost.TaskID]
		if x.Status != TaskSucceeded || x.ErrorCode != "" || x.Runs[0].Interrupted || x.Runs[0].Status != TaskSucceeded {
			t.Errorf("late finish: %+v", *x)
		}
	})
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskRef: lost, Status: TaskFailed}); err == nil {
		t.Fatal("a second finish after the late one was accepted")
	}
}
