package hostops

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Exec children get their resource limits without a second program start:
// the child is started traced (PTRACE_TRACEME, set up by os/exec between
// fork and execve), so the kernel stops it right after its execve of the
// shell and before the shell's first instruction. The worker then sets the
// limits on it with prlimit(2) and detaches; the shell, and everything the
// command starts, runs limited from its first instruction on.
//
// Why not the alternatives: Go cannot run code between fork and exec, and
// prlimit after an ordinary Start leaves a window in which the command runs
// unlimited; the former shim (`svcd worker exec-shim`) re-executed the 28 MB
// Go binary on every limited exec (≈15 ms of runtime start); prlimit(1) from
// util-linux costs ≈2 ms of dynamic linking and may be missing; the shell's
// own `ulimit` differs between shells in flags and units. Tracing costs a
// wait4, one prlimit per limit and a detach: microseconds.
//
// ptrace requests must come from the thread that forked the child, which
// is why this runs inside the spawner's pinned thread (pluginkit.Spawner).
// Where ptrace is not allowed (a seccomp profile, Yama's ptrace_scope 3) a
// probe at start-up (canTraceLimits) finds out and the worker uses the shim.

// canTraceLimits starts one limited `sh -c 'exit 0'` by tracing and reports
// whether that worked.
func canTraceLimits(spawner *pluginkit.Spawner, limits map[string]uint64) error {
	cmd := exec.Command(Shell, "-c", "exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawner.Do(context.Background(), func() error { return startLimited(cmd, limits) }); err != nil {
		return err
	}
	return cmd.Wait()
}

// startLimited starts cmd (a plain `sh -c`) stopped at its execve, applies
// limits and lets it go. On the spawner's thread only.
func startLimited(cmd *exec.Cmd, limits map[string]uint64) error {
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	fail := func(err error) error {
		_ = unix.Kill(pid, unix.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("wait for the traced child: %w", err))
		}
		break
	}
	if !ws.Stopped() {
		// It died before its exec completed; we reaped it, so Wait on cmd
		// would fail. Nothing ran.
		return fmt.Errorf("child ended before its exec: %v", ws)
	}
	res := rlimitResources()
	for name, v := range limits {
		lim := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Prlimit(pid, res[name], &lim, nil); err != nil {
			return fail(fmt.Errorf("setrlimit %s=%d: %w", name, v, err))
		}
	}
	if err := unix.PtraceDetach(pid); err != nil {
		return fail(fmt.Errorf("detach the traced child: %w", err))
	}
	return nil
}
