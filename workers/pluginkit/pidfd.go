package pluginkit

import (
	"os"

	"golang.org/x/sys/unix"
)

// Pidfd is a process's pidfd (Linux 5.4+) on Go's netpoller. It becomes
// readable when the process exits, so waiting for that parks a goroutine
// without holding an OS thread (as waitid would) or waking up to poll (as
// asking go-plugin's Exited would). The hostops worker waits for commands
// this way, the worker manager for workers.
type Pidfd struct{ f *os.File }

// WatchPidfd takes ownership of fd (negative: none) and puts it on the
// netpoller. nil means no pidfd: the caller waits its own way.
func WatchPidfd(fd int) *Pidfd {
	if fd < 0 {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	return &Pidfd{f: os.NewFile(uintptr(fd), "pidfd")}
}

// OpenPidfd opens a pidfd for pid and watches it; nil when the kernel has
// no pidfds or the process is already gone.
func OpenPidfd(pid int) *Pidfd {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	return WatchPidfd(fd)
}

// Exited returns once the process has exited (it can be reaped now; the
// reaping is left to whoever started it), or once p is closed or cannot be
// polled.
func (p *Pidfd) Exited() {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			if err == unix.EINTR {
				continue
			}
			return err != nil || n > 0
		}
	})
}

// Close releases the pidfd; a goroutine parked in Exited returns.
func (p *Pidfd) Close() { p.f.Close() }
