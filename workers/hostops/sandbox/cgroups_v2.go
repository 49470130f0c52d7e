// cgroup v2: membership (CLONE_INTO_CGROUP) and kill.

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FD is the v2 directory for SysProcAttr.CgroupFD, -1 without v2.
func (c *Cgroup) FD() int { return c.fd }

// Path is the directory that carries membership (what Kill acts on).
func (c *Cgroup) Path() string {
	if c.v2 != "" {
		return c.v2
	}
	return c.v1["pids"]
}

// Kill ends every process in the cgroup.
func (c *Cgroup) Kill() {
	c.killed = true
	if c.pwrite(fKill, "1") != nil {
		KillCgroup(c.Path())
	}
}

// KillLeft kills what is left in the cgroup: nothing to do, and the cgroup
// stays reusable, when its v2 process list is empty (nothing in it can
// fork any more once it is empty).
func (c *Cgroup) KillLeft() {
	if procs, ok := c.pread(fProcs); ok && strings.TrimSpace(procs) == "" {
		return
	}
	c.Kill()
}

// MarkKilled records a kill written by path (Started.Kill: timeout, cancel,
// shutdown): the cgroup will not be reused.
func (c *Cgroup) MarkKilled() { c.killed = true }

// KillCgroup ends every process in cgroup dir (and its descendants, on v2):
// cgroup.kill where the kernel has it, otherwise SIGKILL to each listed
// process until the list stays empty (a fork may race one read).
func KillCgroup(dir string) {
	if dir == "" || !strings.HasPrefix(dir, "/sys/fs/cgroup/") {
		return
	}
	if err := writeFile(filepath.Join(dir, "cgroup.kill"), "1"); err == nil {
		return
	}
	self := os.Getpid()
	for i := 0; i < 100; i++ {
		pids := procs(dir)
		if len(pids) == 0 || len(pids) == 1 && pids[0] == self {
			return
		}
		for _, p := range pids {
			// Never the worker: a v1 cgroup lists the process of a thread
			// it holds (a hosted spawner, see Host).
			if p != self {
				_ = unix.Kill(p, unix.SIGKILL)
			}
		}
	}
}

// procs lists the processes of dir and of its child cgroups.
func procs(dir string) []int {
	var out []int
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, procs(filepath.Join(dir, e.Name()))...)
		}
	}
	return out
}
