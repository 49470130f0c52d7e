// A command's cgroup: the Tree and Cgroup types, making one, its control
// files, its limits and its counters. Detection is in cgroups_detect.go,
// the v1 and v2 specifics in cgroups_v1.go and cgroups_v2.go, reuse and
// clean-up in cgroups_recycle.go.

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Tree is one hostops worker's cgroups: under the parent, a directory
// w<worker pid> per hierarchy, and in it one cgroup c<n> per command.
//
// Membership and kill use the unified (v2) tree: the command's first
// process is cloned straight into its cgroup (CLONE_INTO_CGROUP), and
// cgroup.kill ends every process in it, setsid or double-forked ones
// included. Limits use v2 controllers where the parent has them, and the v1
// hierarchy of the controller otherwise (hybrid hosts), where the spawner
// thread joins the command's v1 cgroups for the fork (Enter/Leave), so the
// command is born in them too.
type Tree struct {
	v2     string            // worker dir in the unified tree, "" when not used
	v2Ctl  map[string]bool   // controllers usable in v2 below the worker dir
	v1     map[string]string // controller → worker dir in its v1 hierarchy
	v1Home map[string]int    // controller → open tasks file of the worker's own v1 cgroup
	seq    atomic.Uint64
	pool   chan *Cgroup
	preset Limits // limits pool cgroups get when made (Preset)
}

// Preset sets the limits prepared cgroups are made with (the configured
// defaults), so a command with the defaults writes no limit file.
func (t *Tree) Preset(l Limits) { t.preset = l }

// Cgroup is one command's cgroup.
type Cgroup struct {
	tree *Tree
	Name string
	v2   string // dir, "" without v2
	fd   int    // open v2 dir for CLONE_INTO_CGROUP, -1 without
	v1   map[string]string
	// tasks are the v1 cgroups' tasks files, opened when the cgroup is
	// made: the spawner thread that writes them (Enter) is inside the
	// commands' Landlock domain, which may not open them.
	tasks map[string]int
	// files are the control files read or written per command, opened
	// ahead (with the cgroup, in the pool) so that the command's path pays
	// one pread or pwrite each instead of open, read, close.
	files  map[string]int
	limits Limits // what setLimits last wrote
	set    bool
	// hosted: a spawner thread lives in the v1 cgroups (Host), so a
	// command forked from it is born there with no migration on its path;
	// the pids limit counts that thread, so it is written one higher.
	hosted, setHosted bool
	// base are the counters a recycled cgroup had when it was handed back
	// (Recycle): Stats reports what the current command added.
	base   Stats
	reused bool // recycled: the peak is reset when it is taken again
	// killed: cgroup.kill was written to it (Kill, MarkKilled). Such a
	// cgroup is never reused: on recent kernels (kill_seq, Linux 6.14+) a
	// process cloned into a cgroup that was ever killed is killed at
	// birth, as this machine's 6.18 does with CLONE_INTO_CGROUP.
	killed bool
}

// Prepare makes one command cgroup ahead of need (mkdir is most of a
// cgroup's cost); New takes prepared ones first.
func (t *Tree) Prepare() {
	for len(t.pool) < cap(t.pool) {
		c, err := t.create()
		if err != nil {
			return
		}
		select {
		case t.pool <- c:
		default:
			c.Remove(0)
			return
		}
	}
}

// New returns a command cgroup with limits l set.
func (t *Tree) New(l Limits) (*Cgroup, error) {
	var c *Cgroup
	select {
	case c = <-t.pool:
	default:
		var err error
		if c, err = t.create(); err != nil {
			return nil, err
		}
	}
	if c.reused {
		// The peak of the command before; v1 and v2 (Linux 6.12+) reset it
		// on any write (Recycle checked that this one does).
		_ = c.pwrite(fPeak, "0")
	}
	if err := c.setLimits(l); err != nil {
		c.Remove(0)
		return nil, err
	}
	return c, nil
}

func (t *Tree) create() (*Cgroup, error) {
	c := &Cgroup{tree: t, Name: "c" + strconv.FormatUint(t.seq.Add(1), 10), fd: -1, v1: map[string]string{}, tasks: map[string]int{}, files: map[string]int{}}
	if t.v2 != "" {
		d := filepath.Join(t.v2, c.Name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
		c.v2 = d
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.Remove(0)
			return nil, err
		}
		c.fd = fd
	}
	for ctl, w := range t.v1 {
		d := filepath.Join(w, c.Name)
		if err := os.Mkdir(d, 0o755); err != nil {
			c.Remove(0)
			return nil, err
		}
		c.v1[ctl] = d
		fd, err := unix.Open(filepath.Join(d, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.Remove(0)
			return nil, err
		}
		c.tasks[ctl] = fd
	}
	c.openFiles()
	if err := c.setLimits(t.preset); err != nil {
		c.Remove(0)
		return nil, err
	}
	return c, nil
}

// file keys of Cgroup.files.
const (
	fKill    = "kill"
	fCPUStat = "cpu.stat"
	fOOM     = "oom"
	fPeak    = "peak"
	fPidsEv  = "pids.events"
	fMemMax  = "memory.max"
	fPidsMax = "pids.max"
	fCPUMax  = "cpu.max"
	fProcs   = "cgroup.procs" // v2 membership, for Recycle
	fPidsCur = "pids.current"
	fMemCur  = "memory.current"
)

// openFiles opens the per-command control files that exist.
func (c *Cgroup) openFiles() {
	open := func(key, dir, name string, flag int) {
		if dir == "" {
			return
		}
		if fd, err := unix.Open(filepath.Join(dir, name), flag|unix.O_CLOEXEC, 0); err == nil {
			c.files[key] = fd
		}
	}
	t := c.tree
	open(fKill, c.v2, "cgroup.kill", unix.O_WRONLY)
	open(fProcs, c.v2, "cgroup.procs", unix.O_RDONLY)
	open(fCPUStat, c.v2, "cpu.stat", unix.O_RDONLY)
	if t.v2Ctl["memory"] {
		open(fOOM, c.v2, "memory.events", unix.O_RDONLY)
		open(fPeak, c.v2, "memory.peak", unix.O_RDWR) // written to reset it (Recycle)
		open(fMemMax, c.v2, "memory.max", unix.O_WRONLY)
		open(fMemCur, c.v2, "memory.current", unix.O_RDONLY)
	} else {
		open(fOOM, c.v1["memory"], "memory.oom_control", unix.O_RDONLY)
		open(fPeak, c.v1["memory"], "memory.max_usage_in_bytes", unix.O_RDWR)
		open(fMemMax, c.v1["memory"], "memory.limit_in_bytes", unix.O_WRONLY)
		open(fMemCur, c.v1["memory"], "memory.usage_in_bytes", unix.O_RDONLY)
	}
	pidsDir := c.v1["pids"]
	if t.v2Ctl["pids"] {
		pidsDir = c.v2
	}
	open(fPidsEv, pidsDir, "pids.events", unix.O_RDONLY)
	open(fPidsMax, pidsDir, "pids.max", unix.O_WRONLY)
	open(fPidsCur, pidsDir, "pids.current", unix.O_RDONLY)
	if t.v2Ctl["cpu"] {
		open(fCPUMax, c.v2, "cpu.max", unix.O_WRONLY)
	} else {
		open(fCPUMax, c.v1["cpu"], "cpu.cfs_quota_us", unix.O_WRONLY)
	}
}

// pwrite writes v to the opened control file key.
func (c *Cgroup) pwrite(key, v string) error {
	fd, ok := c.files[key]
	if !ok {
		return fmt.Errorf("no %s file", key)
	}
	// A write that lowers a memory limit makes the kernel reclaim first, and
	// a signal (Go's own preemption SIGURG among them) interrupts it with
	// EINTR: retry, as Go's os.File does for its own writes. Seen once as
	// "set memory limit: interrupted system call" in TestSandboxMemoryHogOOMKilledAlone.
	for {
		_, err := unix.Pwrite(fd, []byte(v), 0)
		if err != unix.EINTR {
			return err
		}
	}
}

// pread reads the opened control file key (small files only).
func (c *Cgroup) pread(key string) (string, bool) {
	fd, ok := c.files[key]
	if !ok {
		return "", false
	}
	var buf [512]byte
	n, err := unix.Pread(fd, buf[:], 0)
	for err == unix.EINTR {
		n, err = unix.Pread(fd, buf[:], 0)
	}
	if err != nil || n < 0 {
		return "", false
	}
	return string(buf[:n]), true
}

// setLimits writes l to the controllers' files (v2 or v1). A limit the
// host cannot enforce is an error only when it is set.
func (c *Cgroup) setLimits(l Limits) error {
	if c.set && c.limits == l && c.setHosted == c.hosted {
		return nil
	}
	quota := int64(l.CPU * 100000)
	if quota > 0 && quota < 1000 {
		quota = 1000
	}
	v2 := func(ctl string) bool { return c.tree.v2Ctl[ctl] }
	num := func(n int64, none string) string {
		if n > 0 {
			return strconv.FormatInt(n, 10)
		}
		return none
	}
	pidsMax := l.Pids
	if pidsMax > 0 && c.hosted && !v2("pids") {
		pidsMax++ // the hosting spawner thread is a task of the v1 cgroup
	}
	mem, pids, cpu := num(l.MemoryBytes, "-1"), num(pidsMax, "max"), num(quota, "-1")
	if v2("memory") {
		mem = num(l.MemoryBytes, "max")
	}
	if v2("cpu") {
		cpu = num(quota, "max") + " 100000"
	}
	for _, x := range []struct {
		key, ctl, v string
		set, had    bool
	}{
		{fMemMax, "memory", mem, l.MemoryBytes > 0, c.limits.MemoryBytes > 0},
		{fPidsMax, "pids", pids, l.Pids > 0, c.limits.Pids > 0 || c.setHosted != c.hosted},
		{fCPUMax, "cpu", cpu, quota > 0, c.limits.CPU > 0},
	} {
		if !x.set && !x.had {
			continue // nothing to set, nothing to undo
		}
		if !c.tree.has(x.ctl) {
			// The host gives no such controller to the command cgroups:
			// the layer is missing (Probe lists it in /v1/runtime, and
			// required mode refuses to start), the command runs without it.
			continue
		}
		if err := c.pwrite(x.key, x.v); err != nil && x.set {
			return fmt.Errorf("set %s limit: %w", x.ctl, err)
		}
	}
	c.limits, c.set, c.setHosted = l, true, c.hosted
	return nil
}

// has: the tree can enforce controller ctl (v2 below the worker dir, or
// its v1 hierarchy).
func (t *Tree) has(ctl string) bool { return t.v2Ctl[ctl] || t.v1[ctl] != "" }

// SetLimits sets the command's limits on a cgroup taken with New (or
// hosting a spawner): one pwrite per limit that changed.
func (c *Cgroup) SetLimits(l Limits) error { return c.setLimits(l) }

func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stats are what the kernel counted for a command.
type Stats struct {
	OOMKilled     bool  // the memory limit's OOM killer ended a process
	PidsLimitHit  bool  // a fork failed at the pids limit
	PeakMemory    int64 // bytes, -1 when not known
	CPUTimeMicros int64 // user+system, -1 when not known

	oomKills, pidsMaxHits int64 // the kernel's cumulative counts
}

// Stats reads the counters; call after the command ended, before Remove
// or Recycle. Counters are what this command added to a recycled cgroup.
func (c *Cgroup) Stats() Stats {
	s := c.counters()
	if s.CPUTimeMicros >= 0 && c.base.CPUTimeMicros > 0 {
		s.CPUTimeMicros -= c.base.CPUTimeMicros
	}
	s.OOMKilled = s.oomKills > c.base.oomKills
	s.PidsLimitHit = s.pidsMaxHits > c.base.pidsMaxHits
	return s
}

// counters reads the cgroup's cumulative counters.
func (c *Cgroup) counters() Stats {
	s := Stats{PeakMemory: -1, CPUTimeMicros: -1}
	if v, ok := c.keyed(fCPUStat, "usage_usec"); ok {
		s.CPUTimeMicros = v
	}
	if v, ok := c.keyed(fOOM, "oom_kill"); ok {
		s.oomKills = v
	}
	if b, ok := c.pread(fPeak); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 64); err == nil {
			s.PeakMemory = n
		}
	}
	if v, ok := c.keyed(fPidsEv, "max"); ok {
		s.pidsMaxHits = v
	}
	return s
}

// keyed reads "key value" lines of the opened control file f.
func (c *Cgroup) keyed(f, key string) (int64, bool) {
	b, ok := c.pread(f)
	if !ok {
		return 0, false
	}
	for _, line := range strings.Split(b, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
