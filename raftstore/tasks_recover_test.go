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

// The reaper's way (Tasks): only the named tasks end, and a
// conversation returns to idle only when the last running batch of it
// ended; a new leader's ConvRecover with KeepBatches leaves a conversation
// whose batch still runs (on any runner) instruction_running, and resets
// the rest as before. Before this, a new leader reset every
// instruction_running conversation and ended every other runner's task, so
// a standby's batch still running lost its hold and a renewal was typed
// into its conversation meanwhile (chaos, stop 39).
func TestTaskRecoverLostReleasesTheConversationWithItsLastBatch(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := taskCtx(t)
	link := func(id string) ConvLink {
		return ConvLink{LocalID: id, Platform: "platform_a", ClientID: "cl", RemoteID: "r-" + id}
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := n.Apply(ctx, CmdConvLink, link(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Apply(ctx, CmdConvExecution, ConvExecution{ConvLink: link(id), State: ExecInstructionRunning}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(runner, conv string) TaskRef {
		t.Helper()
		v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "instruction_batch", Title: "ingest " + conv + " m", Runner: runner, Conversation: conv})
		if err != nil {
			t.Fatal(err)
		}
		return v.(TaskRef)
	}
	// c1: one batch on n2 (the standby, alive) and one on n1's dead process;
	// c2: a batch on n1's dead process only; c3: no task at all (its
	// process died before the task started).
	c1alive, c1lost, c2lost := start("n2/b", "c1"), start("n1/a", "c1"), start("n1/a", "c2")
	state := func(id string) string {
		var st string
		n.Read(func(s *State) { st = s.Conversations.ByID[id].ExecutionState })
		return st
	}
	if _, err := n.Apply(ctx, CmdConvRecover, ConvRecover{KeepBatches: true}); err != nil {
		t.Fatal(err)
	}
	if a, b, c := state("c1"), state("c2"), state("c3"); a != ExecInstructionRunning || b != ExecInstructionRunning || c != ExecIdle {
		t.Fatalf("after ConvRecover{KeepBatches}: c1 %s, c2 %s (batches still running: want instruction_running), c3 %s (no task: want idle)", a, b, c)
	}
	if _, err := n.Apply(ctx, CmdTaskRecover, TaskRecover{Live: []string{"x"}, Tasks: []string{c1lost.TaskID}}); err == nil {
		t.Fatal("a recovery naming both live runners and tasks was accepted")
	}
	v, err := n.Apply(ctx, CmdTaskRecover, TaskRecover{Tasks: []string{c1lost.TaskID, c2lost.TaskID, c2lost.TaskID + "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.([]string), []string{c1lost.TaskID, c2lost.TaskID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ended %v, want %v", got, want)
	}
	n.Read(func(s *State) {
		if st := s.Tasks.ByID[c1alive.TaskID].Status; st != TaskRunning {
			t.Errorf("the live runner's task is %s", st)
		}
	})
	if a, b := state("c1"), state("c2"); a != ExecInstructionRunning || b != ExecIdle {
		t.Fatalf("after the lost runner's tasks ended: c1 %s (n2's batch still runs: want instruction_running), c2 %s (want idle)", a, b)
	}
	// The older entry (no KeepBatches) still resets everything on replay.
	if _, err := n.Apply(ctx, CmdConvRecover, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if a := state("c1"); a != ExecIdle {
		t.Fatalf("an older ConvRecover left c1 %s", a)
	}
}
