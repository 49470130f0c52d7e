package raftstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func taskCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Finished tasks beyond MaxFinishedTasks are dropped oldest first; running
// ones are never dropped.
func TestFinishedTasksAreCompactedToTheBound(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := taskCtx(t)
	v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "k", Title: "still running"})
	if err != nil {
		t.Fatal(err)
	}
	running := v.(TaskRef)

	const writers, perWriter = 4, MaxFinishedTasks/4 + 2
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := map[string]time.Time{}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter && !t.Failed(); i++ {
				v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "k"})
				if err != nil {
					t.Error(err)
					return
				}
				ref := v.(TaskRef)
				if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskRef: ref, Status: TaskSucceeded}); err != nil {
					t.Error(err)
					return
				}
				// Just finished, so among the newest: not compacted yet. The
				// bound holds after every write, not only at the end.
				var at time.Time
				n.Read(func(s *State) {
					if x := s.Tasks.ByID[ref.TaskID]; x != nil && x.FinishedAt != nil {
						at = *x.FinishedAt
					} else {
						t.Errorf("task %s compacted as soon as it finished", ref.TaskID)
					}
					if kept := countFinishedTasks(s); kept > MaxFinishedTasks {
						t.Errorf("%d finished tasks kept after a finish, bound %d", kept, MaxFinishedTasks)
					}
				})
				mu.Lock()
				finished[ref.TaskID] = at
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := make([]string, 0, len(finished))
	for id := range finished {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return finished[ids[a]].Before(finished[ids[b]]) })
	drop := len(ids) - MaxFinishedTasks
	if drop <= 0 {
		t.Fatalf("the test finishes only %d tasks", len(ids))
	}
	n.Read(func(s *State) {
		if kept := countFinishedTasks(s); kept != MaxFinishedTasks {
			t.Errorf("%d finished tasks kept, want %d", kept, MaxFinishedTasks)
		}
		for _, id := range ids[:drop] {
			if s.Tasks.ByID[id] != nil {
				t.Errorf("old task %s kept", id)
			}
		}
		for _, id := range ids[drop:] {
			if s.Tasks.ByID[id] == nil {
				t.Errorf("newer task %s dropped", id)
			}
		}
		if x := s.Tasks.ByID[running.TaskID]; x == nil || x.Status != TaskRunning {
			t.Errorf("the running task was dropped or changed: %+v", x)
		}
	})
}

// A run keeps its last MaxRunLogLines lines, counts the dropped ones and
// clips long lines.
func TestRunLogsAreBounded(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := taskCtx(t)
	v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ref := v.(TaskRef)
	lines := make([]string, MaxRunLogLines+50)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i)
	}
	if _, err := n.Apply(ctx, CmdTaskLog, TaskLog{TaskRef: ref, Lines: lines}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", maxLogLine+10)
	if _, err := n.Apply(ctx, CmdTaskLog, TaskLog{TaskRef: ref, Lines: []string{long}}); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		r := s.Tasks.ByID[ref.TaskID].Runs[0]
		if len(r.Logs) != MaxRunLogLines || r.Dropped != 51 {
			t.Fatalf("%d lines kept, %d dropped; want %d and 51", len(r.Logs), r.Dropped, MaxRunLogLines)
		}
		if r.Logs[0].Line != "line 51" || len(r.Logs[len(r.Logs)-1].Line) != maxLogLine {
			t.Fatalf("kept from %q to a line of %d bytes", r.Logs[0].Line, len(r.Logs[len(r.Logs)-1].Line))
		}
	})
}

// Refused task writes say why and change nothing.
func TestTaskRefusalsChangeNothing(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := taskCtx(t)
	v, err := n.Apply(ctx, CmdTaskStart, TaskStart{Kind: "k", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ref := v.(TaskRef)
	if _, err := n.Apply(ctx, CmdTaskFinish, TaskFinish{TaskRef: ref, Status: TaskSucceeded, Summary: "first"}); err != nil {
		t.Fatal(err)
	}
	var before Task
	n.Read(func(s *State) { before = cloneTask(s.Tasks.ByID[ref.TaskID]) })

	for _, c := range []struct {
		name, typ string
		payload   any
		want      string
	}{
		{"no kind", CmdTaskStart, TaskStart{}, "kind must be"},
		{"unknown task", CmdTaskLog, TaskLog{TaskRef: TaskRef{TaskID: "task-404", RunID: ref.RunID}, Lines: []string{"x"}}, `no task "task-404"`},
		{"unknown run", CmdTaskLog, TaskLog{TaskRef: TaskRef{TaskID: ref.TaskID, RunID: "run-404"}, Lines: []string{"x"}}, `no run "run-404"`},
		{"finish as running", CmdTaskFinish, TaskFinish{TaskRef: ref, Status: TaskRunning}, "succeeded, failed, canceled or skipped"},
		{"finish unknown run", CmdTaskFinish, TaskFinish{TaskRef: TaskRef{TaskID: ref.TaskID, RunID: "run-404"}, Status: TaskFailed}, `no run "run-404"`},
		{"finish twice", CmdTaskFinish, TaskFinish{TaskRef: ref, Status: TaskFailed, Summary: "second"}, "already finished"},
	} {
		_, err := n.Apply(ctx, c.typ, c.payload)
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
	n.Read(func(s *State) {
		if len(s.Tasks.ByID) != 1 || s.Tasks.Seq != 1 {
			t.Errorf("%d tasks (seq %d) after refusals, want 1", len(s.Tasks.ByID), s.Tasks.Seq)
		}
		if after := cloneTask(s.Tasks.ByID[ref.TaskID]); !reflect.DeepEqual(after, before) {
			t.Errorf("task changed by refusals:\n%+v\nwas\n%+v", after, before)
		}
	})
}

func cloneTask(t *Task) Task {
	c := *t
	c.Runs = append([]TaskRun(nil), t.Runs...)
	return c
}

func countFinishedTasks(s *State) int {
	n := 0
	for _, x := range s.Tasks.ByID {
		if x.FinishedAt != nil {
			n++
		}
	}
	return n
}
