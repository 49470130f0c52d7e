package hostops

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Both ways of waiting for a command (pidfd on the netpoller, plain
// waitid) must give the same outcomes: exit noticed while a background
// grandchild holds the pipes, large output on both streams, timeouts and a
// process that escaped the group.
func TestExecWaitModes(t *testing.T) {
	if !pidfdWaitable() {
		t.Log("this kernel cannot wait on a pidfd; only the waitid mode runs")
	}
	for _, mode := range []struct {
		name  string
		pidfd bool
	}{{"pidfd", true}, {"waitid", false}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.pidfd && !pidfdWaitable() {
				t.Skip("no pidfd wait on this kernel")
			}
			// The escaped test's pid file is outside the command's scratch
			// directory (emptied after the command): a write root.
			pidDir := t.TempDir()
			l := newTestLocal(t, func(c *Config) {
				c.OutputCap, c.KillGraceMs = 1<<20, 300
				c.Sandbox.WriteRoots = append(c.Sandbox.WriteRoots, pidDir)
			})
			l.pidfd = mode.pidfd
			t.Run("background grandchild holds stdout", func(t *testing.T) { testExecBackgroundChild(t, l) })
			t.Run("large output on both streams", func(t *testing.T) { testExecLargeOutput(t, l) })
			t.Run("timeout", func(t *testing.T) { testExecTimeout(t, l) })
			t.Run("escaped the group", func(t *testing.T) { testExecEscaped(t, l, pidDir) })
		})
	}
}

func testExecBackgroundChild(t *testing.T, l *Local) {
	res, err := l.Exec(context.Background(), ExecRequest{Command: "echo hi; sleep 30 & exit 3", Timeout: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The shell's exit is what ends the call: not the timeout, not the
	// sleep (which dies with the group).
	if res.TimedOut || res.ExitCode != 3 || res.ErrorCode != CodeNonZeroExit || string(res.Stdout) != "hi\n" {
		t.Fatalf("%+v", res)
	}
	waitGroupGone(t, res.Pid)
}

func testExecLargeOutput(t *testing.T, l *Local) {
	// More than a pipe buffer on each stream: the readers must run while
	// the command does, or it blocks.
	res, err := l.Exec(context.Background(), ExecRequest{Command: "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2", Timeout: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Stdout) != 300000 || len(res.Stderr) != 200000 || res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("ok=%v stdout=%d stderr=%d %+v", res.OK, len(res.Stdout), len(res.Stderr), res.Error)
	}
}

func testExecTimeout(t *testing.T, l *Local) {
	res, err := l.Exec(context.Background(), ExecRequest{Command: "echo started; sleep 30", Timeout: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !res.TimedOut || res.ErrorCode != CodeTimedOut || res.Signal != "SIGKILL" || string(res.Stdout) != "started\n" {
		t.Fatalf("%+v", res)
	}
	waitGroupGone(t, res.Pid)
}

func testExecEscaped(t *testing.T, l *Local, pidDir string) {
	// setsid leaves the group and keeps stdout open: the call still ends
	// (after the kill grace) with what was read.
	pidFile := filepath.Join(pidDir, "pid")
	res, err := l.Exec(context.Background(), ExecRequest{Command: "echo out; setsid sh -c 'echo $$ > " + pidFile + "; exec sleep 30' & while [ ! -s " + pidFile + " ]; do sleep 0.01; done", Timeout: 20 * time.Second}, nil)
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.TimedOut || string(res.Stdout) != "out\n" {
		t.Fatalf("%+v", res)
	}
}

// waitGroupGone polls until process group pgid has no live member left.
// Zombies do not count: who reaps an orphan (init, a subreaper) and when is
// not this package's business.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := liveGroupMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members: %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// liveGroupMembers lists the pids in group pgid that are not zombies.
func liveGroupMembers(pgid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var live []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
			live = append(live, pid)
		}
	}
	return live
}
