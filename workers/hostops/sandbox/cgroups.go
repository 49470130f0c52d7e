package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DetectedParentName is the child cgroup svcd creates under its own cgroup
// in each hierarchy when exec_cgroup_parent is not set.
const DetectedParentName = "svcd-exec"

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

// Mode describes how commands are contained: "v2", "v2+v1" (hybrid: v2
// membership, v1 limits), "v1", or "" (none).
func (t *Tree) Mode() string {
	switch {
	case t == nil:
		return ""
	case t.v2 != "" && len(t.v1) > 0:
		return "v2+v1"
	case t.v2 != "":
		return "v2"
	case len(t.v1) > 0:
		return "v1"
	}
	return ""
}

// Controllers lists the limits this tree can enforce: memory, pids, cpu.
func (t *Tree) Controllers() []string {
	var out []string
	for _, c := range v1Controllers {
		if t.v2Ctl[c] || t.v1[c] != "" {
			out = append(out, c)
		}
	}
	return out
}

// Dir is the worker directory in the hierarchy that carries membership.
func (t *Tree) Dir() string {
	if t.v2 != "" {
		return t.v2
	}
	return t.v1["pids"]
}

// parentDirs resolves exec_cgroup_parent in each hierarchy. parent is a
// cgroup path ("/svcd-exec") relative to each hierarchy's root; empty is
// DetectedParentName under this process's own cgroup.
func parentDirs(h hierarchies, parent string) (v2 string, v1 map[string]string) {
	at := func(key, mnt string) string {
		if mnt == "" {
			return ""
		}
		if parent != "" {
			return filepath.Join(mnt, filepath.Clean("/"+parent))
		}
		own := h.own[key]
		if own == "" {
			own = mnt
		}
		return filepath.Join(own, DetectedParentName)
	}
	v1 = map[string]string{}
	for _, c := range v1Controllers {
		if d := at(c, h.v1[c]); d != "" {
			v1[c] = d
		}
	}
	return at("", h.v2), v1
}

// OpenTree creates the worker's directories under parent (see parentDirs)
// for worker pid, first removing stale ones of workers that are gone. What
// cannot be used is left out and named in the returned problems; a nil Tree
// means no cgroup at all.
func OpenTree(parent string, pid int, cpu bool) (*Tree, []string) {
	h := findHierarchies()
	v2p, v1p := parentDirs(h, parent)
	var problems []string
	t := &Tree{v2Ctl: map[string]bool{}, v1: map[string]string{}, v1Home: map[string]int{}}
	// w<pid>-<start>: the pid names the owner for CleanStale; the suffix
	// keeps two trees of one process (tests) apart.
	name := OwnerName(pid)
	if v2p != "" {
		// Stale directories go in the background: killed processes may take
		// a while to exit, and a restarting worker must serve at once.
		go CleanStale(v2p)
		if err := makeDir(v2p, name); err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v2 parent %s: %v", v2p, err))
		} else {
			t.v2 = filepath.Join(v2p, name)
			if _, err := os.Stat(filepath.Join(t.v2, "cgroup.kill")); err != nil {
				problems = append(problems, "cgroup v2 has no cgroup.kill (Linux 5.14+); kills read the process list")
			}
			for _, c := range v1Controllers {
				t.v2Ctl[c] = enableV2(v2p, t.v2, c)
			}
		}
	} else {
		problems = append(problems, "no cgroup v2 (unified) hierarchy is mounted")
	}
	for _, c := range v1Controllers {
		if t.v2Ctl[c] || v1p[c] == "" || h.own[c] == "" || (c == "cpu" && !cpu) {
			continue
		}
		go CleanStale(v1p[c])
		if err := makeDir(v1p[c], name); err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v1 %s parent %s: %v", c, v1p[c], err))
			continue
		}
		home, err := unix.Open(filepath.Join(h.own[c], "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v1 %s: %v", c, err))
			continue
		}
		t.v1[c] = filepath.Join(v1p[c], name)
		t.v1Home[c] = home
	}
	if t.v2 == "" && t.v1["pids"] == "" {
		return nil, problems
	}
	t.pool = make(chan *Cgroup, 4)
	return t, problems
}

// makeDir creates parent (and its parents) and parent/name.
func makeDir(parent, name string) error {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
		return fmt.Errorf("not a cgroup: %w", err)
	}
	err := os.Mkdir(filepath.Join(parent, name), 0o755)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

// enableV2 turns controller c on from parent's subtree down to the worker
// dir's, so command cgroups get its files. False where the host does not
// give v2 the controller (hybrid hosts) or the parent is not delegated.
func enableV2(parent, worker, c string) bool {
	// The parent's own parent (a delegated service cgroup whose processes
	// live in a leaf, systemd's DelegateSubgroup) may have to hand the
	// controller down first; where it cannot, the check below says so.
	_ = os.WriteFile(filepath.Join(filepath.Dir(parent), "cgroup.subtree_control"), []byte("+"+c), 0)
	avail, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil || !hasWord(string(avail), c) {
		return false
	}
	for _, d := range []string{parent, worker} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			return false
		}
	}
	return true
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
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
	_, err := unix.Pwrite(fd, []byte(v), 0)
	return err
}

// pread reads the opened control file key (small files only).
func (c *Cgroup) pread(key string) (string, bool) {
	fd, ok := c.files[key]
	if !ok {
		return "", false
	}
	var buf [512]byte
	n, err := unix.Pread(fd, buf[:], 0)
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
		if err := c.pwrite(x.key, x.v); err != nil && x.set {
			return fmt.Errorf("set %s limit: %w", x.ctl, err)
		}
	}
	c.limits, c.set, c.setHosted = l, true, c.hosted
	return nil
}

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

// FD is the v2 directory for SysProcAttr.CgroupFD, -1 without v2.
func (c *Cgroup) FD() int { return c.fd }

// Path is the directory that carries membership (what Kill acts on).
func (c *Cgroup) Path() string {
	if c.v2 != "" {
		return c.v2
	}
	return c.v1["pids"]
}

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

// CgroupWritePaths are what the hostops worker writes in the cgroup file
// systems: the parent directories (worker and command cgroups are made
// below them) and, for v1, the tasks files of its own cgroups (the spawner
// thread returns there after each fork). For the worker's own Landlock
// domain.
func CgroupWritePaths(parent string) (dirs, files []string) {
	h := findHierarchies()
	v2, v1 := parentDirs(h, parent)
	if v2 != "" {
		dirs = append(dirs, v2)
	}
	for c, d := range v1 {
		dirs = append(dirs, d)
		if own := h.own[c]; own != "" {
			files = append(files, filepath.Join(own, "tasks"))
		}
	}
	for _, d := range dirs {
		_ = os.MkdirAll(d, 0o755) // a rule needs the directory to exist
	}
	return dirs, files
}
