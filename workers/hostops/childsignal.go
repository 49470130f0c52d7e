package hostops

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Command exits without a signal.
//
// The Go runtime installs a handler for every signal, SIGCHLD included,
// and ignores SIGCHLD in it. So each command's exit makes the kernel
// interrupt a thread of the worker, usually the spawner's pinned thread
// (the child's parent), which wakes up to run a handler that does nothing:
// one more thread switch per command on a machine busy running the command.
// The worker learns of exits through the command's pidfd and waitid
// (exitwait.go), and the limits tracer through wait4; neither needs the
// signal.
//
// SIG_DFL for SIGCHLD also means "ignore", but the kernel then drops the
// signal without waking anybody. Unlike SIG_IGN (or SA_NOCLDWAIT) it does
// not reap children automatically, so waitid still sees every exit and its
// status. Exec'd commands get SIG_DFL for SIGCHLD either way.

// sigaction is the kernel's struct sigaction on 64-bit Linux, large enough
// for every layout (with or without sa_restorer).
type sigaction struct {
	handler  uintptr
	flags    uintptr
	restorer uintptr
	mask     uint64
}

// sigDFL is the handler value of SIG_DFL.
const sigDFL = 0

// quietChildExits sets SIGCHLD to SIG_DFL for the whole worker process and
// returns the previous disposition. Call it only in the worker (Serve),
// which never uses os/signal for SIGCHLD: Notify would install Go's
// handler again.
func quietChildExits() (sigaction, error) {
	return setSigaction(unix.SIGCHLD, &sigaction{handler: sigDFL})
}

// setSigaction installs act for sig and returns the previous one.
func setSigaction(sig unix.Signal, act *sigaction) (sigaction, error) {
	var old sigaction
	const sigsetSize = 8 // the kernel's sigset_t, 64 signals
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(&old)), sigsetSize, 0, 0); e != 0 {
		return old, e
	}
	return old, nil
}
