package hostops

import (
	"sync"
	"syscall"
)

// groups tracks the process groups and cgroups of running commands, so the
// worker can kill every one of them when it is told to stop or its parent
// dies.
type groups struct {
	mu   sync.Mutex
	live map[int]string // pgid → cgroup dir ("" without one)
}

func newGroups() *groups { return &groups{live: map[int]string{}} }

func (g *groups) add(st Started) {
	g.mu.Lock()
	g.live[st.Pid] = st.Cgroup
	g.mu.Unlock()
}

func (g *groups) remove(pgid int) {
	g.mu.Lock()
	delete(g.live, pgid)
	g.mu.Unlock()
}

// killAll kills every tracked command (cgroup and group) and returns how
// many.
func (g *groups) killAll() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pgid, cg := range g.live {
		Started{Pid: pgid, Cgroup: cg}.Kill()
	}
	return len(g.live)
}

// KillGroup sends SIGKILL to process group pgid (a negative pid to kill(2)).
// ESRCH (the group is already gone) is the common, harmless outcome.
func KillGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
