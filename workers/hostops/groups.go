package hostops

import (
	"sync"
	"syscall"
)

// groups tracks the process groups of running commands, so the worker can
// kill every one of them when it is told to stop or its parent dies.
type groups struct {
	mu   sync.Mutex
	live map[int]struct{}
}

func newGroups() *groups { return &groups{live: map[int]struct{}{}} }

func (g *groups) add(pgid int) {
	g.mu.Lock()
	g.live[pgid] = struct{}{}
	g.mu.Unlock()
}

func (g *groups) remove(pgid int) {
	g.mu.Lock()
	delete(g.live, pgid)
	g.mu.Unlock()
}

// killAll sends SIGKILL to every tracked group and returns how many.
func (g *groups) killAll() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pgid := range g.live {
		KillGroup(pgid)
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
