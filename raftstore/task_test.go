package raftstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestTasksPersistWithBoundedLogs(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	if _, err := n.Apply(ctx, CmdTaskStart, TaskStart{TaskID: "t1", RunID: "r1", Kind: "instruction_batch", Title: "batch"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"one", "two"} {
		if _, err := n.Apply(ctx, CmdTaskLog, TaskLogLine{TaskID: "t1", RunID: "r1", Line: l}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Apply(ctx, CmdTaskLog, TaskLogLine{TaskID: "t1", RunID: "other", Line: "x"}); err == nil {
		t.Fatal("log for a wrong run accepted")
	}
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskID: "t1", RunID: "r1", Status: TaskRunning}); err == nil {
		t.Fatal("finish as running accepted")
	}
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskID: "t1", RunID: "r1", Status: "succeeded", Summary: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, CmdControllerHeartbeat, Controller{NodeID: "n1", APIAddr: "127.0.0.1:1", Role: "leader", Version: "v"}); err != nil {
		t.Fatal(err)
	}
	n.Shutdown()
	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		tk := s.Tasks.ByID["t1"]
		if tk == nil || tk.Status != "succeeded" || len(tk.Logs) != 2 || tk.Logs[1].Line != "two" || tk.FinishedAt.IsZero() {
			t.Fatalf("task after restart: %+v", tk)
		}
		if c := s.Controllers.ByNode["n1"]; c == nil || c.Role != "leader" || c.LastHeartbeat.IsZero() {
			t.Fatalf("controller after restart: %+v", c)
		}
	})
}

// The bounds are the FSM's own: checked on the state without raft (500+
// commits through raft would only measure the disk).
func TestTaskBoundsAndCompaction(t *testing.T) {
	s := newState()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	apply := func(typ string, p any) error {
		raw, _ := json.Marshal(p)
		at = at.Add(time.Second)
		_, err := handlers()[typ](s, Command{Type: typ, At: at, Payload: raw})
		return err
	}
	if err := apply(CmdTaskStart, TaskStart{TaskID: "live", RunID: "r", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxRunLogLines+3; i++ {
		_ = apply(CmdTaskLog, TaskLogLine{TaskID: "live", RunID: "r", Line: string(make([]byte, MaxLogLineBytes+10))})
	}
	if tk := s.Tasks.ByID["live"]; len(tk.Logs) != MaxRunLogLines || tk.DroppedLogLines != 3 || len(tk.Logs[0].Line) != MaxLogLineBytes {
		t.Fatalf("log bound: %d lines, %d dropped", len(tk.Logs), tk.DroppedLogLines)
	}
	for i := 0; i < MaxFinishedTasks+20; i++ {
		id := fmt.Sprintf("t%04d", i)
		if err := apply(CmdTaskStart, TaskStart{TaskID: id, RunID: "r", Kind: "k"}); err != nil {
			t.Fatal(err)
		}
		if err := apply(CmdTaskFinish, TaskFinish{TaskID: id, RunID: "r", Status: "succeeded"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.Tasks.ByID); got != MaxFinishedTasks+1 {
		t.Fatalf("%d tasks kept, want %d finished + 1 running", got, MaxFinishedTasks)
	}
	if s.Tasks.ByID["live"] == nil || s.Tasks.ByID["t0000"] != nil || s.Tasks.ByID[fmt.Sprintf("t%04d", MaxFinishedTasks+19)] == nil {
		t.Fatal("compaction dropped the wrong tasks")
	}
	if newest := s.Tasks.Newest(1); newest[0].ID != fmt.Sprintf("t%04d", MaxFinishedTasks+19) {
		t.Fatalf("newest %s", newest[0].ID)
	}
}
