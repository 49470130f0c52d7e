package hostops

import (
	"os"

	"golang.org/x/sys/unix"
)

// outputPipe is the pipe for one of a command's output streams: the read
// end non-blocking on Go's netpoller, for the worker's drain; the write end
// blocking and never registered with the poller, since only the child
// writes to it.
//
// os.Pipe registers both ends with the poller (two fcntl and an epoll_ctl
// each), then os/exec hands the write end to the child through Fd, which
// makes it blocking again (two more fcntl), and closing it unregisters it:
// ten system calls per command, in the worker, on the command's path, for a
// descriptor the worker never reads or polls.
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	// The child's end must block: a command writing to a full non-blocking
	// stdout would see EAGAIN instead of waiting for the worker to drain.
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETFL, 0); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile puts a non-blocking descriptor on the poller and leaves a
	// blocking one alone.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
