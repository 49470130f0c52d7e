package hostops

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// currentSigaction reads sig's disposition without changing it.
func currentSigaction(t *testing.T, sig unix.Signal) sigaction {
	t.Helper()
	var cur sigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&cur)), 8, 0, 0); e != 0 {
		t.Fatal(e)
	}
	return cur
}

// With SIGCHLD at SIG_DFL (as in the worker), every exit is still seen with
// its status, by the pidfd wait, by plain waitid and by the limits tracer:
// the kernel only stops signalling. SIG_IGN would reap the children itself
// and every one of these would fail.
func TestExecWithQuietChildExits(t *testing.T) {
	old, err := quietChildExits()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := setSigaction(unix.SIGCHLD, &old); err != nil {
			t.Fatal(err)
		}
	})
	if old.handler == sigDFL {
		t.Fatal("SIGCHLD had no Go handler before: the test would prove nothing")
	}
	if cur := currentSigaction(t, unix.SIGCHLD); cur.handler != sigDFL {
		t.Fatalf("SIGCHLD handler %#x after quietChildExits, want SIG_DFL", cur.handler)
	}

	plain := newTestLocal(t, nil)
	noPidfd := newTestLocal(t, nil)
	noPidfd.pidfd = false
	limited := newTestLocal(t, func(c *Config) { c.Rlimits = map[string]uint64{"nofile": 64}; c.SelfExecutable = "" })
	if limited.now().noTrace {
		t.Log("tracing is not allowed here; the limited case goes through the shim")
	}
	for name, l := range map[string]*Local{"pidfd": plain, "waitid": noPidfd, "limited": limited} {
		res, err := l.Exec(context.Background(), ExecRequest{Command: "(sleep 0.05; echo late) & echo early; exit 3", Timeout: 5 * time.Second}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.ExitCode != 3 || res.ErrorCode != CodeNonZeroExit || !strings.HasPrefix(string(res.Stdout), "early") {
			t.Fatalf("%s: %+v", name, res)
		}
		res, _ = l.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 5 * time.Second}, nil)
		if !res.OK || res.ExitCode != 0 {
			t.Fatalf("%s: true: %+v", name, res)
		}
	}
}

// The worker reads its end without a thread (non-blocking, on the poller);
// the command's end blocks, so a command filling the pipe waits instead of
// failing with EAGAIN.
func TestOutputPipeEnds(t *testing.T) {
	r, w, err := outputPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	flags := func(fd uintptr) int {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fl
	}
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rfl int
	_ = rc.Control(func(fd uintptr) { rfl = flags(fd) })
	if rfl&unix.O_NONBLOCK == 0 {
		t.Fatal("read end blocks: its reader would hold a thread")
	}
	if fl := flags(w.Fd()); fl&unix.O_NONBLOCK != 0 {
		t.Fatal("write end is non-blocking: a command filling the pipe would get EAGAIN")
	}
	if fl, _ := unix.FcntlInt(w.Fd(), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
		t.Fatal("write end leaks into other children: no FD_CLOEXEC")
	}
	_ = rc.Control(func(fd uintptr) {
		if fl, _ := unix.FcntlInt(fd, unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
			t.Fatal("read end leaks into children: no FD_CLOEXEC")
		}
	})
}
