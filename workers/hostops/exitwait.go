package hostops

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Waiting for a command's exit without an OS thread.
//
// cmd.Wait blocks a thread in waitid(2) for the whole run of the command.
// In the worker (one P, see Serve) that makes the runtime hand the P to
// another thread so the output readers can run, and back when the command
// ends: several thread wake-ups per command on a machine that is busy
// running the command. A pidfd (Linux 5.4+: pollable, and waitid P_PIDFD)
// is just another descriptor on Go's netpoller instead, so the command's
// exit and the EOF on its pipes arrive in the same epoll wake-up, and
// cmd.Wait afterwards reaps a process that has already exited.

// pidfdWaitable reports whether this kernel can wait on a pidfd: waitid on a
// pidfd of a process that is not our child answers ECHILD when P_PIDFD is
// known, EINVAL when it is not.
func pidfdWaitable() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	return unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == unix.ECHILD
}

// exitWatch waits for one started command through its pidfd.
type exitWatch struct {
	p *pluginkit.Pidfd // nil: no pidfd, wait in waitid like cmd.Wait does
}

// watchExit takes ownership of pidfd (-1: none) and puts it on the netpoller.
func watchExit(pidfd int) exitWatch { return exitWatch{p: pluginkit.WatchPidfd(pidfd)} }

// takePidfd is the pidfd the start left in cmd (-1: none or failed start).
func takePidfd(cmd *exec.Cmd) int {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.PidFD == nil {
		return -1
	}
	fd := *cmd.SysProcAttr.PidFD
	*cmd.SysProcAttr.PidFD = -1
	return fd
}

// close releases the pidfd of a command that is not waited for here.
func (w exitWatch) close() {
	if w.p != nil {
		w.p.Close()
	}
}

// wait returns cmd.Wait's result once the command has exited, having parked
// this goroutine on the netpoller until then; cmd.Wait then reaps a process
// that has already exited.
func (w exitWatch) wait(cmd *exec.Cmd) error {
	if w.p != nil {
		w.p.Exited()
		w.p.Close()
	}
	return cmd.Wait()
}
