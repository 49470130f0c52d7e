package hostops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
	"github.com/svcd/svcd/workers/pluginkit"
)

// cmdSandbox is the part of the exec sandbox that lives in the worker: the
// cgroup tree, and the spawners whose Landlock domains commands inherit.
//
// Landlock and no_new_privs are per thread and inherited by what the
// thread forks. A spawner (pluginkit.Spawner) is one goroutine locked to
// its OS thread for good, so restricting that thread once restricts every
// command it forks from the command's first instruction, with no helper
// program to re-execute per command (a Go re-exec costs ≈15 ms, see
// rlimit_trace.go). Each spawner owns one scratch directory and its domain
// lets it write there (plus the configured write roots), so a command
// borrows a spawner for its whole run: one domain per command, and no
// command can write into another's scratch directory. After the command the
// directory is emptied in the background and the spawner goes back to the
// idle pool (or is retired, its thread with it, when the directory cannot
// be emptied or the pool is full). A command finding no idle spawner makes
// one: a thread, a mkdir and a ruleset, ≈0.1 ms.
type cmdSandbox struct {
	// cfg is the sandbox config new spawners are built from; Reconfigure
	// (reconfigure.go) swaps it, and a spawner built from an older one is
	// retired when taken, as a stale HiddenStamp is.
	cfg      atomic.Pointer[sandbox.Config]
	tree     *sandbox.Tree
	abi      int // Landlock ABI applied to spawner threads, 0: none
	problems []string
	// connect keeps commands from the daemon's own TCP ports (Landlock ABI
	// 4+), a ruleset built once per worker and stacked on each spawner;
	// nil: not applied (exec_network none, or no ABI 4).
	connect *sandbox.ConnectRuleset
	cleanup sync.WaitGroup

	owner   string // OwnerName of this worker's scratch directories
	scratch bool   // the scratch root exists: spawners get directories in it
	seq     atomic.Uint64
	mu      sync.Mutex
	idle    []*slot // spawners ready for a command, the last released on top
	closed  bool    // close ran: released spawners are retired
	// killedAll: KillAll killed every command's cgroup by its path; none
	// of them may be reused (sandbox.Cgroup.MarkKilled).
	killedAll atomic.Bool
}

// slot is a spawner thread with its Landlock domain and scratch directory,
// and, while idle, the cgroup its next command will run in, with the
// thread already living in that cgroup's v1 hierarchies (armed: see arm).
type slot struct {
	sp      *pluginkit.Spawner
	scratch string
	cg      *sandbox.Cgroup
	// hidden: the directories the read rules were listed from, as they
	// were; a change retires the spawner (sandbox/hidden.go).
	hidden sandbox.HiddenStamp
	// built: the config the spawner's Landlock rules came from.
	built *sandbox.Config
}

// idleSpawners is how many spawners wait for commands: commands that run at
// the same time beyond it make their own and retire them afterwards.
const idleSpawners = 8

// setupSandbox opens the worker's cgroup tree and checks that a spawner can
// be restricted. In required mode a missing layer is an error.
func setupSandbox(ctx context.Context, cfg sandbox.Config, do func(context.Context, func() error) error) (*cmdSandbox, error) {
	s := &cmdSandbox{owner: sandbox.OwnerName(os.Getpid())}
	s.cfg.Store(&cfg)
	if cfg.Mode == sandbox.ModeOff {
		return s, do(ctx, sandbox.SetNoNewPrivs)
	}
	tree, problems := sandbox.OpenTree(cfg.CgroupParent, os.Getpid(), cfg.WantsCPU())
	s.tree = tree
	if tree == nil {
		s.problems = append(s.problems, "cgroup: "+strings.Join(problems, "; "))
	} else {
		tree.Preset(cfg.Limits)
		go tree.Prepare()
	}
	if cfg.ScratchRoot == "" {
		s.problems = append(s.problems, "scratch: no scratch root")
	} else if err := os.MkdirAll(cfg.ScratchRoot, 0o711); err != nil {
		s.problems = append(s.problems, fmt.Sprintf("scratch root %s: %v", cfg.ScratchRoot, err))
	} else {
		s.scratch = true
		go sandbox.CleanStaleScratch(cfg.ScratchRoot)
	}
	s.abi = sandbox.LandlockABI()
	if s.abi == 0 {
		s.problems = append(s.problems, "landlock: the kernel has none")
	}
	if s.abi >= 4 && cfg.Network != sandbox.NetworkNone && len(cfg.DaemonPorts) > 0 {
		c, err := sandbox.NewConnectRuleset(s.abi, cfg.DaemonPorts)
		if err != nil {
			s.problems = append(s.problems, "connect: "+err.Error())
		}
		s.connect = c
	}
	// The first spawner now: it proves the ruleset applies (required mode
	// refuses to start otherwise), and the first command finds it waiting.
	first, err := s.newSlot()
	var restrictErr restrictError
	switch {
	case errors.As(err, &restrictErr) && s.abi > 0:
		s.problems = append(s.problems, "landlock: "+restrictErr.err.Error())
		s.abi = 0 // later spawners get no_new_privs only
	case errors.As(err, &restrictErr):
		return nil, err // no_new_privs is not optional
	case err != nil: // the scratch directory; commands try again
		s.problems = append(s.problems, "spawner: "+err.Error())
	default:
		s.arm(first)
		s.idle = append(s.idle, first)
	}
	if cfg.Mode == sandbox.ModeRequired && len(s.problems) > 0 {
		s.close()
		return nil, fmt.Errorf("exec_sandbox is required but: %s", strings.Join(s.problems, " | "))
	}
	return s, nil
}

// writeRoots are a spawner's write roots: the configured ones, with the
// scratch root narrowed to the spawner's own directory.
func writeRoots(cfg *sandbox.Config, scratch string) []string {
	out := make([]string, 0, len(cfg.WriteRoots)+1)
	for _, r := range cfg.WriteRoots {
		if filepath.Clean(r) != filepath.Clean(cfg.ScratchRoot) {
			out = append(out, r)
		}
	}
	if scratch != "" {
		out = append(out, scratch)
	}
	return out
}

// newSlot starts a spawner thread, makes its scratch directory and
// restricts the thread (Landlock where the kernel has it, no_new_privs
// always).
func (s *cmdSandbox) newSlot() (*slot, error) {
	cfg := s.cfg.Load()
	sl := &slot{built: cfg}
	if s.scratch {
		d := filepath.Join(cfg.ScratchRoot, s.owner+"-s"+strconv.FormatUint(s.seq.Add(1), 10))
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("scratch directory: %w", err)
		}
		if cfg.UID >= 0 || cfg.GID >= 0 {
			_ = os.Chown(d, cfg.UID, cfg.GID)
		}
		sl.scratch = d
	}
	sl.sp = pluginkit.NewSpawner()
	abi := s.abi
	var reads []string
	if cfg.HidesFiles(abi) {
		reads, sl.hidden, _ = sandbox.HiddenReads(cfg.Hidden)
	}
	err := sl.sp.Do(context.Background(), func() error {
		// Every command this thread forks execs with no capability.
		if err := sandbox.DropThreadCapabilities(); err != nil {
			return err
		}
		if abi == 0 {
			return sandbox.SetNoNewPrivs()
		}
		_, err := sandbox.RestrictThread(sandbox.Ruleset{
			Write: writeRoots(cfg, sl.scratch), Read: orReads(cfg.ReadRoots, reads), WriteFiles: sandbox.DeviceFiles,
			Sockets: true, Scoped: true, IoctlDev: true,
		}, abi)
		if err == nil && s.connect != nil {
			err = s.connect.RestrictThread()
		}
		return err
	})
	if err != nil {
		s.retire(sl)
		return nil, restrictError{err}
	}
	return sl, nil
}

// restrictError: a spawner thread could not be restricted.
type restrictError struct{ err error }

func (e restrictError) Error() string { return "restrict the spawner thread: " + e.err.Error() }
func (e restrictError) Unwrap() error { return e.err }

// retire ends a spawner's thread and removes its scratch directory (and
// its armed cgroup, the thread moved out first).
func (s *cmdSandbox) retire(sl *slot) {
	cg := sl.cg
	sl.cg = nil
	if cg != nil {
		_ = sl.sp.Do(context.Background(), func() error { cg.Unhost(); return nil })
	}
	sl.sp.Close()
	if cg != nil {
		_ = cg.Remove(time.Second)
	}
	if sl.scratch != "" {
		_ = os.RemoveAll(sl.scratch)
	}
}

// boxed is one command's share: its cgroup, and the spawner (with its
// scratch directory) it borrowed.
type boxed struct {
	cg      *sandbox.Cgroup
	slot    *slot
	scratch string
}

// forksInside: the spawner thread already lives in the command's v1
// cgroups (an armed slot), so the fork needs no Enter/Leave.
func (b boxed) forksInside() bool { return b.cg != nil && b.cg.Hosted() }

// arm gives an idle spawner the cgroup of its next command and moves the
// thread into that cgroup's v1 hierarchies (Cgroup.Host), so that joining
// and leaving them (four writes to v1 tasks files, ≈25 µs quiet and
// hundreds under load) is off the command's path. Where a thread cannot
// live in a command's cgroup (no v2 membership), the spawner stays unarmed
// and the fork enters and leaves as before.
func (s *cmdSandbox) arm(sl *slot) {
	if s.tree == nil || sl.cg != nil {
		return
	}
	cg, err := s.tree.New(s.cfg.Load().Limits)
	if err != nil {
		return
	}
	if !cg.CanHost() || sl.sp.Do(context.Background(), cg.Host) != nil {
		s.tree.Recycle(cg, time.Second)
		return
	}
	sl.cg = cg
}

// spawner is the thread that must fork the command: the borrowed one, or
// shared when the sandbox is off.
func (b boxed) spawner(shared *pluginkit.Spawner) *pluginkit.Spawner {
	if b.slot != nil {
		return b.slot.sp
	}
	return shared
}

// begin makes the command's cgroup (with limits l) and borrows a spawner.
func (s *cmdSandbox) begin(l sandbox.Limits) (boxed, error) {
	var c boxed
	if s == nil || s.cfg.Load().Mode == sandbox.ModeOff {
		return c, nil
	}
	if c.slot = s.take(); c.slot != nil && (!c.slot.hidden.Fresh() || c.slot.built != s.cfg.Load()) {
		// A directory the read rules were listed from changed: an entry
		// made there since would be unreadable to this spawner's commands.
		// Or a SIGHUP changed the roots its Landlock rules were built from.
		go s.retire(c.slot)
		c.slot = nil
	}
	if c.slot == nil {
		sl, err := s.newSlot()
		if err != nil {
			return c, fmt.Errorf("spawner: %w", err)
		}
		c.slot = sl
	}
	c.scratch = c.slot.scratch
	if s.tree == nil {
		return c, nil
	}
	if c.cg, c.slot.cg = c.slot.cg, nil; c.cg != nil {
		if err := c.cg.SetLimits(l); err != nil {
			s.handBack(c)
			return boxed{}, fmt.Errorf("cgroup: %w", err)
		}
		return c, nil
	}
	cg, err := s.tree.New(l)
	if err != nil {
		s.handBack(c)
		return boxed{}, fmt.Errorf("cgroup: %w", err)
	}
	c.cg = cg
	return c, nil
}

// take borrows the idle spawner released last (its thread is the likeliest
// to be warm), nil when none is idle.
func (s *cmdSandbox) take() *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.idle)
	if n == 0 {
		return nil
	}
	sl := s.idle[n-1]
	s.idle = s.idle[:n-1]
	return sl
}

// release empties a spawner's scratch directory, arms it and puts it back
// to the idle pool, or retires it.
func (s *cmdSandbox) release(sl *slot) {
	if sl.scratch != "" && sandbox.EmptyDir(sl.scratch) != nil {
		s.retire(sl)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.arm(sl)
	}
	s.mu.Lock()
	keep := !s.closed && len(s.idle) < idleSpawners
	if keep {
		s.idle = append(s.idle, sl)
	}
	s.mu.Unlock()
	if !keep {
		s.retire(sl)
	}
}

// end kills what is left of the command and reads its cgroup's counters.
// The cgroup and the spawner stay the command's until handBack.
func (s *cmdSandbox) end(c boxed) sandbox.Stats {
	st := sandbox.Stats{PeakMemory: -1, CPUTimeMicros: -1}
	if c.cg != nil {
		if s.killedAll.Load() {
			c.cg.MarkKilled()
		}
		c.cg.KillLeft()
		st = c.cg.Stats()
	}
	return st
}

// handBack returns the command's cgroup and spawner in the background
// (emptying the scratch directory and recycling the cgroup are not the
// caller's wait). Exec defers it to its very end: the worker runs on one P
// (Serve), and a goroutine started earlier would run first, ahead of the
// output drains and of the answer, as soon as Exec blocked.
func (s *cmdSandbox) handBack(c boxed) {
	if c.cg == nil && c.slot == nil {
		return
	}
	s.cleanup.Add(1)
	go func() {
		defer s.cleanup.Done()
		if c.forksInside() && c.slot != nil && s.tree.Refresh(c.cg, 10*time.Second) {
			// The thread stays: the cgroup is its next command's, as
			// good as new, with no migration or mkdir at all.
			c.slot.cg = c.cg
			s.release(c.slot)
			return
		}
		if c.forksInside() {
			// Out of the cgroup before it is recycled: its pids counter
			// must reach 0, and rmdir needs it empty.
			_ = c.slot.sp.Do(context.Background(), func() error { c.cg.Unhost(); return nil })
		}
		if c.cg != nil {
			// Recycle waits for the killed processes to be gone, so none
			// writes into the scratch directory once it is emptied.
			s.tree.Recycle(c.cg, 10*time.Second)
		}
		if c.slot != nil {
			s.release(c.slot)
		}
	}()
}

// close waits for releases, retires the idle spawners and removes the
// worker's cgroup directories.
func (s *cmdSandbox) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cleanup.Wait()
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, sl := range idle {
		s.retire(sl)
	}
	s.tree.Close()
}

// orReads is exec_read_roots when set, else the reads that hide the
// daemon's files (nil: everything is readable).
func orReads(readRoots, hiding []string) []string {
	if readRoots != nil {
		return readRoots
	}
	return hiding
}
