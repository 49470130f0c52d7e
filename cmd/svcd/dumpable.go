package main

import "golang.org/x/sys/unix"

// Every svcd process (the supervisor, each worker, agentd, the witness) is
// made non-dumpable before anything else runs: its /proc/<pid> files that
// expose memory and secrets (environ, which may hold SVC_SHARED_TOKEN,
// maps, mem, fd) then belong to root and open only for a caller with
// CAP_SYS_PTRACE, so an exec'd command of the same uid (the shipped unit
// runs the daemon and its commands as svcd) cannot read them (issue 32).
// Commands themselves are dumpable again: execve resets the flag.
func init() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
