package tasks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// nodes answers the reaper as other nodes would: each node's process now,
// a nil entry for a node nothing can answer on (refused), absent for one
// that is silent.
type nodes struct {
	mu    sync.Mutex
	procs map[string]*Process
	asked []string
}

func (n *nodes) live(_ context.Context, node string) (Process, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asked = append(n.asked, node)
	p, ok := n.procs[node]
	switch {
	case !ok:
		return Process{}, false, context.DeadlineExceeded
	case p == nil:
		return Process{}, true, errors.New("connection refused")
	}
	return *p, false, nil
}

func (n *nodes) set(node string, p *Process) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p == nil {
		delete(n.procs, node)
		return
	}
	n.procs[node] = p
}

// The reaper ends a task only once it is known over: an earlier process of
// this node, a node answering as another process, a node whose address
// refuses, a process that answers without the task (done, its finish not
// written), at once; a silent node after LostAfter and not before; never a
// task its process lists, nor one that may be a start in flight.
func TestReaperEndsOnlyTheTasksItKnowsOver(t *testing.T) {
	s, _, ctx := newStore(t) // runner node-a/<boot>
	other := func(runner, conv string) string {
		t.Helper()
		v, err := s.w.Apply(ctx, raftstore.CmdTaskStart, raftstore.TaskStart{Kind: "instruction_batch", Title: "ingest " + conv + " m", Runner: runner, Conversation: conv})
		if err != nil {
			t.Fatal(err)
		}
		return v.(raftstore.TaskRef).TaskID
	}
	own, _, err := s.Start(ctx, "instruction_batch", "ingest c0 m", "c0")
	if err != nil {
		t.Fatal(err)
	}
	earlier := other("node-a/earlier", "c1")
	alive := other("node-b/now", "c2")
	done := other("node-b/now", "c3")
	restarted := other("node-c/before", "c4")
	refused := other("node-d/x", "c5")
	silent := other("node-e/x", "c6")
	maybe := other("node-g/x", "c7")
	ns := &nodes{procs: map[string]*Process{
		"node-b": {Runner: "node-b/now", Running: []string{alive}},
		"node-c": {Runner: "node-c/after"},
		"node-d": nil,
		"node-g": {Runner: "node-g/x", Starting: 1},
	}}
	const lostAfter = time.Hour
	r := NewReaper(s, ns.live, lostAfter, nil)
	// silentFor backdates when task id's node first did not answer: time
	// passing without the test sleeping on a loaded machine.
	silentFor := func(id string, d time.Duration) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.silent[id]; !ok {
			t.Fatalf("task %s is not counted as silent", id)
		}
		r.silent[id] = time.Now().Add(-d)
	}
	status := func(id string) string { x, _ := s.Get(id); return x.Status }

	ended, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ended)
	want := []string{earlier, done, restarted, refused}
	slices.Sort(want)
	if !slices.Equal(ended, want) {
		t.Fatalf("first pass ended %v, want %v (earlier process, done, restarted node, refused address)", ended, want)
	}
	for _, id := range []string{own, alive, silent, maybe} {
		if st := status(id); st != raftstore.TaskRunning {
			t.Fatalf("task %s is %s after the first pass, want running", id, st)
		}
	}
	if x, _ := s.Get(earlier); x.ErrorCode != raftstore.TaskNodeLost {
		t.Fatalf("an ended task: %+v", x)
	}
	if slices.Contains(ns.asked, "node-a") {
		t.Fatalf("the reaper asked its own node over the network: %v", ns.asked)
	}
	// Silent for less than LostAfter: kept.
	if ended, _ := r.Pass(ctx); len(ended) != 0 {
		t.Fatalf("second pass at once ended %v", ended)
	}
	silentFor(silent, lostAfter-time.Minute)
	if ended, _ := r.Pass(ctx); len(ended) != 0 {
		t.Fatalf("silent for less than LostAfter, the pass ended %v", ended)
	}
	silentFor(silent, lostAfter)
	if ended, _ := r.Pass(ctx); !slices.Equal(ended, []string{silent}) {
		t.Fatalf("after LostAfter of silence the pass ended %v, want [%s]", ended, silent)
	}
	// The start in flight turned out not to be it: ended the pass after.
	ns.set("node-g", &Process{Runner: "node-g/x"})
	if ended, _ := r.Pass(ctx); !slices.Equal(ended, []string{maybe}) {
		t.Fatalf("with no start in flight the pass ended %v, want [%s]", ended, maybe)
	}
	if st := status(alive); st != raftstore.TaskRunning {
		t.Fatalf("task %s is %s, want running: its process lists it", alive, st)
	}
	// A node that answers again before LostAfter keeps its batch, and its
	// silence is counted afresh the next time.
	back := other("node-f/x", "c8")
	_, _ = r.Pass(ctx)
	silentFor(back, lostAfter)
	ns.set("node-f", &Process{Runner: "node-f/x", Running: []string{back}})
	_, _ = r.Pass(ctx)
	ns.set("node-f", nil)
	if ended, _ := r.Pass(ctx); len(ended) != 0 || status(back) != raftstore.TaskRunning {
		t.Fatalf("a node silent again right after it answered lost its batch: ended %v, status %s", ended, status(back))
	}
}

// Running lists a task from its start until its finish was attempted, even
// when the finish could not be written.
func TestRunningListsWhatThisProcessRuns(t *testing.T) {
	s, _, ctx := newStore(t)
	id, run, err := s.Start(ctx, "instruction_batch", "ingest c m", "c")
	if err != nil {
		t.Fatal(err)
	}
	if ids, starting := s.Running(); !slices.Equal(ids, []string{id}) || starting != 0 {
		t.Fatalf("running %v, starting %d", ids, starting)
	}
	s.Finish(ctx, id, run, "succeeded", "ok")
	if ids, _ := s.Running(); len(ids) != 0 {
		t.Fatalf("running after the finish: %v", ids)
	}
	if p := s.Process(); p.Runner != s.runner || p.Running == nil {
		t.Fatalf("process: %+v (running must be [] in JSON, not null)", p)
	}
}
