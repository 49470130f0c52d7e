// Reuse and clean-up: recycling command cgroups, removing them, and the
// stale directories of workers that are gone.

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Recycle takes a command's cgroup back once its processes are gone: into
// the pool when it can be reused as good as new (the pool has room, the
// peak can be reset, little memory is still charged to it), else removed.
// Reuse saves the mkdir and rmdir of a cgroup in each hierarchy, ≈0.3 ms of
// CPU per command on a hybrid host.
func (t *Tree) Recycle(c *Cgroup, wait time.Duration) {
	if len(t.pool) < cap(t.pool) && c.renew(wait) {
		select {
		case t.pool <- c:
			return
		default:
		}
	}
	_ = c.Remove(wait)
	t.Prepare()
}

// Refresh readies a hosted cgroup (Host) for its thread's next command in
// place, the thread staying in it: once the command's processes are gone,
// the peak is reset and the counters so far become the base. False when it
// cannot be reused (Unhost, then Recycle).
func (t *Tree) Refresh(c *Cgroup, wait time.Duration) bool {
	return c.hosted && c.renew(wait)
}

// renew readies c for another command once its processes are gone: never
// a cgroup that was killed (kill_seq), and only when its peak can be reset;
// the counters so far become the base of the next command's Stats.
func (c *Cgroup) renew(wait time.Duration) bool {
	if !c.waitEmpty(wait) || c.killed || !c.resettable() {
		return false
	}
	c.base = c.counters()
	c.reused = true
	return true
}

// reuseMaxCharge is the memory (page cache of files the command left
// elsewhere) a cgroup may still be charged with to be reused: it counts
// against the next command's limit and peak.
const reuseMaxCharge = 1 << 20

// waitEmpty kills what is left and waits for every process of the cgroup
// to be gone (reaped, so the pids counter is back to 0).
func (c *Cgroup) waitEmpty(wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	tasks := "0"
	if c.hosted && !c.tree.v2Ctl["pids"] {
		tasks = "1" // the hosted spawner thread, in the v1 pids cgroup
	}
	for delay := 50 * time.Microsecond; ; delay *= 2 {
		procs, okP := c.pread(fProcs)
		pids, okC := c.pread(fPidsCur)
		if (!okP || strings.TrimSpace(procs) == "") && (!okC || strings.TrimSpace(pids) == tasks) && (okP || okC) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		c.Kill()
		if delay > 20*time.Millisecond {
			delay = 20 * time.Millisecond
		}
		time.Sleep(delay)
	}
}

// resettable: the peak can be reset and little memory is left charged.
func (c *Cgroup) resettable() bool {
	if _, ok := c.files[fPeak]; ok && c.pwrite(fPeak, "0") != nil {
		return false
	}
	if b, ok := c.pread(fMemCur); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
		if err != nil || n > reuseMaxCharge {
			return false
		}
	}
	return true
}

// Remove kills what is left and deletes the cgroup, waiting up to wait for
// the killed processes to be gone (rmdir of a populated cgroup fails).
func (c *Cgroup) Remove(wait time.Duration) error {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	for ctl, fd := range c.tasks {
		unix.Close(fd)
		delete(c.tasks, ctl)
	}
	for k, fd := range c.files {
		unix.Close(fd)
		delete(c.files, k)
	}
	var err error
	if c.v2 != "" {
		err = removeDir(c.v2, wait)
	}
	for _, d := range c.v1 {
		if e := removeDir(d, wait); err == nil {
			err = e
		}
	}
	return err
}

// removeDir rmdirs a cgroup, killing and retrying while it is busy.
func removeDir(dir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for delay := 50 * time.Microsecond; ; delay *= 2 {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		KillCgroup(dir)
		if delay > 20*time.Millisecond {
			delay = 20 * time.Millisecond
		}
		time.Sleep(delay)
	}
}

// Close removes the pool and the worker's directories (commands are gone).
func (t *Tree) Close() {
	if t == nil {
		return
	}
	for {
		select {
		case c := <-t.pool:
			c.Remove(time.Second)
			continue
		default:
		}
		break
	}
	if t.v2 != "" {
		removeTree(t.v2)
	}
	for _, d := range t.v1 {
		removeTree(d)
	}
	for _, fd := range t.v1Home {
		unix.Close(fd)
	}
}

// removeTree kills and removes dir's child cgroups, then dir.
func removeTree(dir string) {
	KillCgroup(dir)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = removeDir(dir, 2*time.Second)
}

// CleanStale removes the w<pid>-<stamp> directories under parent whose
// owner is gone (a daemon killed with its worker), killing what is left in
// them. A live owner's directory, this process's or another daemon's (or
// test's), is left alone: the owner lives when its pid runs a process that
// started before the directory was made (a reused pid started after).
func CleanStale(parent string) (removed int) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		owner, stamp, _ := strings.Cut(strings.TrimPrefix(e.Name(), "w"), "-")
		pid, err := strconv.Atoi(owner)
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "w") || err != nil || ownerAlive(pid, stamp) {
			continue
		}
		removeTree(filepath.Join(parent, e.Name()))
		removed++
	}
	return removed
}

// ownerAlive: pid runs, and started no later than stamp (base-36 unix
// nanoseconds of the directory's creation) plus a second of clock-tick
// slack.
func ownerAlive(pid int, stamp string) bool {
	if pid == os.Getpid() {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	made, err := strconv.ParseInt(stamp, 36, 64)
	if err != nil {
		return true // not ours to judge
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return true
	}
	if f[0] == "Z" || f[0] == "X" {
		return false // exited, not yet reaped (its parent may be frozen or gone)
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22: starttime
	boot := bootTime()
	if err != nil || boot == 0 {
		return true
	}
	started := boot + ticks*int64(time.Second)/100 // USER_HZ is 100 on Linux
	return started <= made+int64(time.Second)
}

// bootTime is the boot time in unix nanoseconds (/proc/stat btime), 0 when
// unknown.
func bootTime() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n * int64(time.Second)
		}
	}
	return 0
}
