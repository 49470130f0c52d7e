// cgroup v1 (hybrid hosts): the spawner thread joins the command's v1
// cgroups for the fork, or lives in them between commands.

package sandbox

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Enter moves the calling thread (the spawner's locked thread) into the
// command's v1 cgroups, so the child it forks next is born there; Leave
// moves it back. No-ops without v1 limits.
func (c *Cgroup) Enter() error {
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for ctl, fd := range c.tasks {
		if _, err := unix.Write(fd, tid); err != nil {
			c.Leave()
			return fmt.Errorf("join v1 %s cgroup: %w", ctl, err)
		}
	}
	return nil
}

// Leave: see Enter.
func (c *Cgroup) Leave() {
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for ctl := range c.tasks {
		_, _ = unix.Write(c.tree.v1Home[ctl], tid)
	}
}

// CanHost: a spawner thread may live in this cgroup between commands. Only
// where v2 carries membership and kill: v1 lists a thread's whole process
// (the worker) in cgroup.procs, which a v1 kill would read; v2 never sees
// the thread, which moves in the v1 hierarchies only.
func (c *Cgroup) CanHost() bool { return c.v2 != "" && len(c.tasks) > 0 }

// Host moves the calling thread (a spawner's) into the v1 cgroups for good,
// ahead of the command it will fork, and counts it in the pids limit. Off
// the command's path: the fork then needs no Enter/Leave. Memory the
// worker touches is not charged here: v1 memcg charges pages to the mm
// owner (the worker's main thread), and the forked child is its own mm's
// owner. The OOM killer walks processes (thread-group leaders), never this
// thread.
func (c *Cgroup) Host() error {
	if !c.CanHost() {
		return errors.New("cgroup cannot host a thread")
	}
	if err := c.Enter(); err != nil {
		return err
	}
	c.hosted = true
	if err := c.setLimits(c.limits); err != nil {
		c.Unhost()
		return err
	}
	return nil
}

// Unhost moves the calling (hosted) thread back to the worker's own v1
// cgroups; call on that thread, before Recycle or Remove (a v1 cgroup with
// a task cannot be removed, and its pids counter would not reach 0). The
// pids limit is written back by the next SetLimits.
func (c *Cgroup) Unhost() {
	if c.hosted {
		c.Leave()
		c.hosted = false
	}
}

// Hosted: a spawner thread lives in the cgroup (Host).
func (c *Cgroup) Hosted() bool { return c.hosted }
