package tasks

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/periodic"
)

// Process is what a node's running process says of itself (GET /health):
// its runner id, the tasks it is running, and how many starts are in
// flight (their tasks may be listed in the store already).
type Process struct {
	Runner   string   `json:"runner"`
	Running  []string `json:"running_tasks"`
	Starting int      `json:"starting_tasks"`
}

// Process is this process as Liveness answers it.
func (s *Store) Process() Process {
	ids, starting := s.Running()
	return Process{Runner: s.runner, Running: ids, Starting: starting}
}

// Liveness is how the reaper asks about another node's process: what it
// answers (Process), or gone when nothing can be running there any more
// (the node is no longer a member, or its address refused the connection:
// no process listens), or an error when the node did not answer (frozen,
// cut off, slow): its tasks may be alive.
type Liveness func(ctx context.Context, nodeID string) (p Process, gone bool, err error)

// Reaper ends, on the leader and for as long as it leads, the running tasks
// whose process is gone or no longer runs them. A task is over when its
// runner is an earlier process of this node, when its node is gone or
// answers as another process (restarted), when its process answers
// without it (it ended, but a node that lost the lead could not write its
// finish), or when its node has not answered for LostAfter. A task whose
// process might still run it stays running, and its conversation
// instruction_running, so no renewal is typed into a conversation whose
// batch still runs on a frozen or cut-off node (chaos, stop 39); the bound
// is what that costs when the node is dead for good.
type Reaper struct {
	store     *Store
	live      Liveness
	lostAfter time.Duration
	log       hclog.Logger

	loop   *periodic.Loop // a pass every second while this node leads
	mu     sync.Mutex
	silent map[string]time.Time // task id → when its node first did not answer
}

// Reaper timings: a pass every second; a runner whose node said nothing
// for 15 s is taken as lost (longer than a raft election and the pauses a
// loaded host or a short partition cause; a batch block's own timeout is
// 30 s by default, so a frozen batch is still bounded).
const (
	ReapEvery     = time.Second
	ReapLostAfter = 15 * time.Second
	reapProbe     = time.Second
)

// NewReaper returns a reaper over store asking live about other nodes.
func NewReaper(store *Store, live Liveness, lostAfter time.Duration, log hclog.Logger) *Reaper {
	if lostAfter <= 0 {
		lostAfter = ReapLostAfter
	}
	r := &Reaper{store: store, live: live, lostAfter: lostAfter, log: log, silent: map[string]time.Time{}}
	r.loop = periodic.New(ReapEvery, func(ctx context.Context) {
		if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil && r.log != nil {
			r.log.Warn("task reaper: could not end the tasks whose process is gone", "error", err)
		}
	})
	return r
}

// node is the node part of a runner id.
func node(runner string) string {
	n, _, _ := strings.Cut(runner, "/")
	return n
}

// Pass looks once at every running task of another process and ends those
// it finds over. It answers the ended task ids.
func (r *Reaper) Pass(ctx context.Context) ([]string, error) {
	type task struct{ id, runner string }
	var running []task
	r.store.w.Read(func(st *raftstore.State) {
		for _, t := range st.Tasks.ByID {
			if t.Status == raftstore.TaskRunning && t.Runner != r.store.runner {
				running = append(running, task{t.ID, t.Runner})
			}
		}
	})
	self := node(r.store.runner)
	// Ask each other node once a pass, without holding the lock (a probe
	// may take its second).
	answers := map[string]answer{}
	for _, t := range running {
		n := node(t.runner)
		if _, asked := answers[n]; !asked && t.runner != "" && n != self {
			answers[n] = r.ask(ctx, n)
		}
	}
	now := time.Now()
	var over []string
	seen := map[string]bool{}
	r.mu.Lock()
	for _, t := range running {
		seen[t.id] = true
		a := answers[node(t.runner)]
		switch {
		case t.runner == "" || node(t.runner) == self:
			over = append(over, t.id) // unnamed, or an earlier process of this node
		case a.silent:
			since, ok := r.silent[t.id]
			if !ok {
				r.silent[t.id] = now
			} else if now.Sub(since) >= r.lostAfter {
				over = append(over, t.id)
			}
			continue
		case a.gone || a.p.Runner != t.runner:
			over = append(over, t.id) // gone, or another process answers there now
		case slices.Contains(a.p.Running, t.id) || a.p.Starting > 0:
			// Running there, or perhaps one of the starts in flight.
		default:
			over = append(over, t.id) // its process is done with it
		}
		delete(r.silent, t.id)
	}
	for id := range r.silent {
		if !seen[id] {
			delete(r.silent, id)
		}
	}
	r.mu.Unlock()
	if len(over) == 0 {
		return nil, nil
	}
	sort.Strings(over)
	v, err := r.store.w.Apply(ctx, raftstore.CmdTaskRecover, raftstore.TaskRecover{Tasks: over})
	if err != nil {
		return nil, err
	}
	ids, _ := v.([]string)
	if len(ids) > 0 && r.log != nil {
		r.log.Info("tasks whose process is gone or done with them ended failed (node_lost)", "count", len(ids), "first", ids[0])
	}
	return ids, nil
}

// answer is what one node said: its process, gone, or nothing (silent).
type answer struct {
	p      Process
	gone   bool
	silent bool
}

// ask is what node n answers.
func (r *Reaper) ask(ctx context.Context, n string) answer {
	ctx, cancel := context.WithTimeout(ctx, reapProbe)
	defer cancel()
	p, gone, err := r.live(ctx, n)
	switch {
	case gone:
		return answer{gone: true}
	case err != nil:
		if r.log != nil {
			r.log.Debug("task reaper: node did not answer", "node", n, "error", err)
		}
		return answer{silent: true}
	}
	return answer{p: p}
}

// Start runs a pass every second until Stop (the node leads meanwhile);
// each term judges silence afresh.
func (r *Reaper) Start() {
	if r.loop.Running() {
		return
	}
	r.mu.Lock()
	r.silent = map[string]time.Time{}
	r.mu.Unlock()
	r.loop.Start()
}

// Stop ends the passes (leadership lost) and waits for the one running.
func (r *Reaper) Stop() { r.loop.Stop() }
