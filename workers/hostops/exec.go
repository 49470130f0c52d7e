package hostops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// runAs is the identity of commands: exec_user/exec_group (the sandbox)
// first, the older exec_run_as_uid/gid otherwise; -1 is unchanged.
func (l *Local) runAs() (uid, gid int) {
	uid, gid = l.cfg.Sandbox.UID, l.cfg.Sandbox.GID
	if uid < 0 {
		uid = l.cfg.RunAsUID
	}
	if gid < 0 {
		gid = l.cfg.RunAsGID
	}
	return uid, gid
}

// Shell is the interpreter of every command.
const Shell = "/bin/sh"

// Exec runs one command in its own session and process group, with no
// controlling terminal and stdin on /dev/null.
//
// The process group is what makes kills complete: on timeout, cancel (the
// HTTP client went away) or the shell's exit, SIGKILL goes to -pgid, so a
// background grandchild (`sleep 300 &`) goes too and cannot hold the output
// pipes open. The shell itself also carries Pdeathsig, in case this worker
// is killed before it can clean up.
func (l *Local) Exec(ctx context.Context, req ExecRequest, started func(Started)) (ExecResult, error) {
	res := ExecResult{ExitCode: -1, StartedAt: time.Now().UTC(), PeakMemoryBytes: -1, CPUTimeMicros: -1}
	finish := func(code, format string, args ...any) (ExecResult, error) {
		res.FinishedAt = time.Now().UTC()
		res.ErrorCode = code
		res.Error = fmt.Sprintf(format, args...)
		return res, nil
	}

	dir, code, err := l.execDir(req.Cwd)
	if err != nil {
		return finish(code, "%v", err)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	limits := l.cfg.Sandbox.Limits
	if req.Limits != nil {
		limits = *req.Limits
	}
	if err := limits.Within(l.cfg.Sandbox.MaxLimits); err != nil {
		return finish(CodeInvalidLimits, "limits: %v", err)
	}
	box, err := l.sandbox.begin(limits)
	if err != nil {
		return finish(CodeSpawnFailed, "sandbox: %v", err)
	}
	defer l.sandbox.handBack(box)
	boxEnded := false
	endBox := func() {
		if !boxEnded {
			boxEnded = true
			st := l.sandbox.end(box)
			res.OOMKilled, res.PidsLimitHit, res.PeakMemoryBytes, res.CPUTimeMicros = st.OOMKilled, st.PidsLimitHit, st.PeakMemory, st.CPUTimeMicros
		}
	}
	defer endBox()

	out, err := openOutputs()
	if err != nil {
		return finish(CodeSpawnFailed, "pipe: %v", err)
	}
	cmd, prog, startErr := l.startCommand(req.Command, dir, box, out)
	out.closeWriters()
	watch := watchExit(takePidfd(cmd))
	if startErr != nil {
		watch.close()
		out.closeReaders()
		return finish(CodeSpawnFailed, "start %s: %v", prog.path, startErr)
	}
	pgid := cmd.Process.Pid
	res.Pid = pgid
	st := Started{Pid: pgid}
	if box.cg != nil {
		st.Cgroup = box.cg.Path()
	}
	l.groups.add(st)
	defer l.groups.remove(pgid)
	if started != nil {
		started(st)
	}

	outBuf, errBuf := newCappedBuffer(l.cfg.OutputCap), newCappedBuffer(l.cfg.OutputCap)
	drained := make(chan struct{}, 2)
	go func() { outBuf.drain(out.stdoutR, l.readBufs); drained <- struct{}{} }()
	go func() { errBuf.drain(out.stderrR, l.readBufs); drained <- struct{}{} }()

	waitErr, killed := l.waitCommand(runCtx, ctx, cmd, watch, st, box, &res)
	// The shell is gone; whatever is left in its group (and its cgroup:
	// setsid, double forks) was started by this command and dies with it.
	KillGroup(pgid)
	endBox()
	l.awaitDrains(drained, out.stdoutR, out.stderrR)

	shellExit := -1
	if note, code := directSignalExit(cmd, prog, killed, res.OOMKilled); code >= 0 {
		shellExit = code
		_, _ = errBuf.Write([]byte(note))
	}
	res.FinishedAt = time.Now().UTC()
	res.Stdout, res.StdoutTruncated = outBuf.result()
	res.Stderr, res.StderrTruncated = errBuf.result()
	l.describeExit(&res, cmd.ProcessState, waitErr, ctx.Err(), shellExit)
	return res, nil
}

// execDir is the directory a command runs in, checked: it exists, is a
// directory and is within the allowed roots. On error, the code to answer.
func (l *Local) execDir(cwd string) (string, string, error) {
	dir, err := l.paths.dir(cwd)
	if err != nil {
		return "", CodeCwdNotFound, fmt.Errorf("cwd: %v", err)
	}
	if err := l.paths.check(dir); err != nil {
		return "", CodePathNotAllowed, fmt.Errorf("cwd %v", err)
	}
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return "", CodeCwdNotFound, fmt.Errorf("cwd %s does not exist", dir)
	case err != nil:
		return "", CodeCwdNotFound, fmt.Errorf("cwd %s: %v", dir, err)
	case !st.IsDir():
		return "", CodeCwdNotDirectory, fmt.Errorf("cwd %s is not a directory", dir)
	}
	return dir, "", nil
}

// outputs are a command's stdout and stderr pipes.
type outputs struct {
	stdoutR, stdoutW, stderrR, stderrW *os.File
}

func openOutputs() (outputs, error) {
	var o outputs
	var err error
	if o.stdoutR, o.stdoutW, err = outputPipe(); err != nil {
		return o, err
	}
	if o.stderrR, o.stderrW, err = outputPipe(); err != nil {
		o.stdoutR.Close()
		o.stdoutW.Close()
		return o, err
	}
	return o, nil
}

// closeWriters drops our copies of the write ends once the child has its.
func (o outputs) closeWriters() {
	o.stdoutW.Close()
	o.stderrW.Close()
}

func (o outputs) closeReaders() {
	o.stdoutR.Close()
	o.stderrR.Close()
}

// startCommand starts command in dir with the command's pipes, limits and
// cgroups: the program itself where the shell would only have run it, and
// the shell when that program did not start (a script without #!, not
// executable, a bad interpreter), which then says why in its own words,
// with its own exit status (126, 127).
func (l *Local) startCommand(command, dir string, box boxed, out outputs) (*exec.Cmd, program, error) {
	prog := l.plan(command, dir)
	cmd, err := l.spawn(prog, dir, box, out)
	if err != nil && prog.direct {
		prog = shellProgram(command)
		cmd, err = l.spawn(prog, dir, box, out)
	}
	return cmd, prog, err
}

// spawn starts prog with the command's pipes, limits and cgroups.
func (l *Local) spawn(prog program, dir string, box boxed, out outputs) (*exec.Cmd, error) {
	cmd := l.command(prog, dir, box)
	// *os.File writers: the child writes straight into our pipes and
	// Wait does not wait for copy goroutines; we drain them below.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.devNull, out.stdoutW, out.stderrW
	start := cmd.Start
	if l.traceLimits() {
		start = func() error { return startLimited(cmd, l.cfg.Rlimits) }
	}
	if cg := box.cg; cg != nil && !box.forksInside() {
		// v1 limits: the spawner thread forks from inside the
		// command's v1 cgroups (v2 membership comes from
		// CLONE_INTO_CGROUP). An armed spawner lives there already
		// (cmdSandbox.arm).
		inner := start
		start = func() error {
			if err := cg.Enter(); err != nil {
				return err
			}
			defer cg.Leave()
			return inner()
		}
	}
	return cmd, box.spawner(l.spawner).Do(context.Background(), start)
}

// waitCommand waits for the command's exit. Timeout and cancel (the HTTP
// client went away) kill the group from the context's own callback, which
// ends the wait; so this goroutine waits itself, with no waiter goroutine
// and no select to wake per command. killed: our kill ended it.
func (l *Local) waitCommand(runCtx, callerCtx context.Context, cmd *exec.Cmd, watch exitWatch, st Started, box boxed, res *ExecResult) (waitErr error, killed bool) {
	stopKill := context.AfterFunc(runCtx, st.Kill)
	waitErr = watch.wait(cmd)
	killed = !stopKill()
	if killed {
		res.TimedOut = callerCtx.Err() == nil // our deadline, not the caller's cancel
		if box.cg != nil {
			box.cg.MarkKilled() // st.Kill wrote its cgroup.kill by path
		}
	}
	if ps := cmd.ProcessState; ps != nil && box.cg != nil && ps.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		// Killed by someone: maybe through its cgroup's cgroup.kill by path
		// (the supervisor's kill of a call that failed, an operator), after
		// which every process cloned into that cgroup would die at birth.
		box.cg.MarkKilled()
	}
	return waitErr, killed
}

// directSignalExit: a directly run program ended by a signal is reported
// as the shell reports its child's, where the shell would have lived on:
// not for our own kills, nor for a SIGKILL other than the OOM killer's (the
// group's or cgroup's kill, from wherever, would have ended the shell too).
// code is -1 when the exit stands as it is.
func directSignalExit(cmd *exec.Cmd, prog program, killed, oomKilled bool) (note string, code int) {
	ps := cmd.ProcessState
	if ps == nil || !prog.direct || killed {
		return "", -1
	}
	if ws := ps.Sys().(syscall.WaitStatus); ws.Signaled() && (ws.Signal() != syscall.SIGKILL || oomKilled) {
		code, note = shellSignal(ws)
		return note, code
	}
	return "", -1
}

// awaitDrains waits for both output readers. Normally the pipes are at EOF
// already (every writer is gone) and no timer is needed; when something left
// the group (setsid) and still holds a pipe, reading stops after the kill
// grace. A reader that is only behind — its pipe still holds output the
// command wrote before it ended, and the machine has not run the reader
// yet — is not cut off at the grace: closing then dropped the end of the
// output of a call reported whole (TestExecWaitModes under a parallel make
// test: 294912 of 300000 bytes, ok, not truncated). It gets until the pipe
// is empty, at most slowReaderCap.
func (l *Local) awaitDrains(drained <-chan struct{}, pipes ...*os.File) {
	var grace <-chan time.Time
	var timer *time.Timer
	start := time.Now()
	for n := 0; n < len(pipes); {
		select {
		case <-drained:
			n++
			continue
		default:
		}
		if grace == nil {
			timer = time.NewTimer(l.cfg.KillGrace())
			defer timer.Stop()
			grace = timer.C
		}
		select {
		case <-drained:
			n++
		case <-grace:
			if unreadOutput(pipes) && time.Since(start) < slowReaderCap {
				timer.Reset(l.cfg.KillGrace())
				continue
			}
			for _, p := range pipes {
				p.Close()
			}
		}
	}
	for _, p := range pipes {
		p.Close()
	}
}

// slowReaderCap bounds how long awaitDrains waits for readers behind on
// output still in their pipes (a writer that escaped every kill and never
// stops writing would otherwise hold the call forever).
const slowReaderCap = 10 * time.Second

// unreadOutput reports whether any pipe still holds bytes no reader has
// taken (FIONREAD, which Linux names TIOCINQ). The descriptor is reached through SyscallConn: File.Fd would put
// it into blocking mode, and a Close would then no longer end its read.
func unreadOutput(pipes []*os.File) bool {
	for _, p := range pipes {
		rc, err := p.SyscallConn()
		if err != nil {
			continue
		}
		n := 0
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
		if n > 0 {
			return true
		}
	}
	return false
}

// describeExit fills exit code, signal, ok and the error fields.
// shellExit >= 0 is the exit status the shell would have reported for a
// directly run program that a signal ended (shellSignal).
func (l *Local) describeExit(res *ExecResult, ps *os.ProcessState, waitErr, callerErr error, shellExit int) {
	if ps == nil {
		res.ErrorCode, res.Error = CodeSpawnFailed, fmt.Sprintf("wait: %v", waitErr)
		return
	}
	res.ExitCode = ps.ExitCode()
	if shellExit >= 0 {
		res.ExitCode = shellExit
	} else if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = unix.SignalName(ws.Signal())
		if res.Signal == "" {
			res.Signal = ws.Signal().String()
		}
	}
	switch {
	case res.OOMKilled && !res.TimedOut && callerErr == nil && (res.Signal != "" || res.ExitCode != 0):
		res.ErrorCode, res.Error = CodeOOMKilled, "a process of the command was killed at the memory limit (exec_limits memory)"
	case res.TimedOut:
		res.ErrorCode, res.Error = CodeTimedOut, fmt.Sprintf("timed out after %d ms; the process group was killed", res.FinishedAt.Sub(res.StartedAt).Milliseconds())
	case callerErr != nil:
		res.ErrorCode, res.Error = CodeCanceled, "the caller went away; the process group was killed"
	case res.Signal != "":
		res.ErrorCode, res.Error = CodeSignaled, "killed by "+res.Signal
	case res.ExitCode != 0:
		res.ErrorCode, res.Error = CodeNonZeroExit, fmt.Sprintf("exit status %d", res.ExitCode)
	default:
		res.OK = true
	}
}

// traceLimits: limits are set and applied by tracing the child to its
// execve (rlimit_trace.go), not by the shim.
func (l *Local) traceLimits() bool { return len(l.cfg.Rlimits) > 0 && !l.noTrace }

// plan is how command runs in dir: the program itself where the shell
// would only have run it (direct.go), else the shell. Not through the
// rlimit shim, whose re-exec takes the shell's arguments, nor with
// SVCD_EXEC_DIRECT=off (Config.ShellAlways, for comparisons).
func (l *Local) plan(command, dir string) program {
	if l.cfg.ShellAlways || !l.shellIsDash || l.shimmed() {
		return shellProgram(command)
	}
	return planExec(command, dir, l.env)
}

// shimmed: limits are set and applied by the re-exec shim (tracing is not
// allowed here).
func (l *Local) shimmed() bool {
	return len(l.cfg.Rlimits) > 0 && !l.traceLimits() && l.cfg.SelfExecutable != ""
}

// command builds the child: prog (through the rlimit shim when limits are
// set and tracing is not allowed), own process group, Pdeathsig, optional
// uid/gid, the filtered environment.
func (l *Local) command(prog program, dir string, box boxed) *exec.Cmd {
	var cmd *exec.Cmd
	env := l.env
	switch {
	case l.shimmed():
		cmd = exec.Command(l.cfg.SelfExecutable, append([]string{"worker", ShimName}, prog.args...)...)
		env = append(append([]string(nil), env...), RlimitsEnv+"="+FormatRlimits(l.cfg.Rlimits))
	case prog.direct:
		// Path and argv as the shell would pass them to execve: argv[0]
		// is the word as typed, a relative path is relative to Dir (no
		// exec.Command: it would search PATH for a path without a slash).
		cmd = &exec.Cmd{Path: prog.path, Args: prog.args}
		env = prog.env
	default:
		cmd = exec.Command(prog.path, prog.args[1:]...)
	}
	if box.scratch != "" {
		env = append(append([]string(nil), env...), "TMPDIR="+box.scratch)
	}
	cmd.Dir = dir
	cmd.Env = env
	// A session of its own (and so a process group of its own, whose id is
	// the pid, as the group kills expect): no controlling terminal, so
	// /dev/tty does not open and TIOCSTI cannot type into the terminal a
	// daemon was started from (issue 32).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if box.cg != nil && box.cg.FD() >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, box.cg.FD()
	}
	if l.cfg.Sandbox.Network == sandbox.NetworkNone {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if l.pidfd {
		fd := -1
		cmd.SysProcAttr.PidFD = &fd
	}
	if uidSet, gidSet := l.runAs(); uidSet >= 0 || gidSet >= 0 {
		uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
		if uidSet >= 0 {
			uid = uint32(uidSet)
		}
		if gidSet >= 0 {
			gid = uint32(gidSet)
		}
		// Groups empty: drop the daemon's supplementary groups too.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
	}
	return cmd
}
