package hostops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// cmdSandbox is the part of the exec sandbox that lives in the worker: the
// cgroup tree, and the spawner thread's Landlock domain and no_new_privs.
//
// Landlock and no_new_privs are per thread and inherited by what the
// thread forks. Every command is forked by the spawner's one locked thread
// (pluginkit.Spawner), so restricting that thread once at start restricts
// every command from its first instruction, with no helper program to
// re-execute per command (a Go re-exec costs ≈15 ms, see rlimit_trace.go).
// The price: one domain for all commands, so "the scratch directory" is
// the scratch root, in which each command gets its own directory by
// convention (TMPDIR) rather than by rule.
type cmdSandbox struct {
	cfg      sandbox.Config
	tree     *sandbox.Tree
	abi      int // Landlock ABI applied to the spawner thread, 0: none
	problems []string
	cleanup  sync.WaitGroup
}

// setupSandbox opens the worker's cgroup tree and restricts the spawner
// thread. In required mode a missing layer is an error.
func setupSandbox(ctx context.Context, cfg sandbox.Config, do func(context.Context, func() error) error) (*cmdSandbox, error) {
	s := &cmdSandbox{cfg: cfg}
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
	if cfg.ScratchRoot != "" {
		if err := os.MkdirAll(cfg.ScratchRoot, 0o711); err != nil {
			s.problems = append(s.problems, fmt.Sprintf("scratch root %s: %v", cfg.ScratchRoot, err))
		}
	}
	abi := sandbox.LandlockABI()
	err := do(ctx, func() error {
		if abi == 0 {
			return sandbox.SetNoNewPrivs()
		}
		write := cfg.WriteRoots
		if len(write) == 0 {
			write = []string{"/"} // not resolved by the supervisor: unrestricted
		}
		_, err := sandbox.RestrictThread(sandbox.Ruleset{
			Write: write, Read: cfg.ReadRoots, WriteFiles: sandbox.DeviceFiles,
			Sockets: true, Scoped: true,
		}, abi)
		return err
	})
	switch {
	case err != nil && abi > 0:
		s.problems = append(s.problems, "landlock: "+err.Error())
	case err != nil:
		return nil, err // no_new_privs is not optional
	case abi == 0:
		s.problems = append(s.problems, "landlock: the kernel has none")
	default:
		s.abi = abi
	}
	if cfg.Mode == sandbox.ModeRequired && len(s.problems) > 0 {
		tree.Close()
		return nil, fmt.Errorf("exec_sandbox is required but: %s", strings.Join(s.problems, " | "))
	}
	return s, nil
}

// boxed is one command's share: its cgroup and scratch directory.
type boxed struct {
	cg      *sandbox.Cgroup
	scratch string
}

// begin makes the command's cgroup (with limits l) and scratch directory.
func (s *cmdSandbox) begin(l sandbox.Limits) (boxed, error) {
	var c boxed
	if s == nil {
		return c, nil
	}
	if s.tree != nil {
		cg, err := s.tree.New(l)
		if err != nil {
			return c, fmt.Errorf("cgroup: %w", err)
		}
		c.cg = cg
	}
	if s.cfg.ScratchRoot != "" {
		name := fmt.Sprintf("x%d", time.Now().UnixNano())
		if c.cg != nil {
			name = c.cg.Name + "-" + name
		}
		d := filepath.Join(s.cfg.ScratchRoot, name)
		if err := os.Mkdir(d, 0o700); err == nil {
			if s.cfg.UID >= 0 || s.cfg.GID >= 0 {
				_ = os.Chown(d, s.cfg.UID, s.cfg.GID)
			}
			c.scratch = d
		}
	}
	return c, nil
}

// end kills what is left of the command and removes its cgroup and
// scratch directory in the background (rmdir of a v1 memory cgroup is slow
// and nothing waits for it); stats are read first.
func (s *cmdSandbox) end(c boxed) sandbox.Stats {
	st := sandbox.Stats{PeakMemory: -1, CPUTimeMicros: -1}
	if c.cg != nil {
		c.cg.Kill()
		st = c.cg.Stats()
	}
	if c.cg == nil && c.scratch == "" {
		return st
	}
	s.cleanup.Add(1)
	go func() {
		defer s.cleanup.Done()
		if c.cg != nil {
			_ = c.cg.Remove(10 * time.Second)
		}
		if c.scratch != "" {
			_ = os.RemoveAll(c.scratch)
		}
		if s.tree != nil {
			s.tree.Prepare()
		}
	}()
	return st
}

// close waits for removals and removes the worker's cgroup directories.
func (s *cmdSandbox) close() {
	if s == nil {
		return
	}
	s.cleanup.Wait()
	s.tree.Close()
}
