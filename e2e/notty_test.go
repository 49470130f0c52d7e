package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/e2e/harness"
)

// ttyProbe reports its session, its stdin, and whether TIOCSTI (push a
// byte into a terminal's input, as if typed) works on each path given.
const ttyProbe = `package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

func main() {
	sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	stdin, _ := os.Readlink("/proc/self/fd/0")
	fmt.Printf("session sid=%d pid=%d stdin=%s\n", sid, os.Getpid(), stdin)
	for _, p := range os.Args[1:] {
		f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOCTTY, 0)
		if err != nil {
			fmt.Printf("tiocsti %s: open: %v\n", p, err)
			continue
		}
		c := byte('#')
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			fmt.Printf("tiocsti %s: %v\n", p, e)
		} else {
			fmt.Printf("tiocsti %s: INJECTED\n", p)
		}
		f.Close()
	}
}
`

// openPty is a new pseudo-terminal: its controller and the terminal's path.
func openPty(t *testing.T) (controller, terminal *os.File, path string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	path = fmt.Sprintf("/dev/pts/%d", n)
	s, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s, path
}

// Issue 32, attack 3: a command of a daemon started from a terminal kept
// the daemon's session, opened /dev/tty and typed into the operator's shell
// with TIOCSTI. Each command now leads a session of its own with no
// controlling terminal and stdin on /dev/null.
func TestCommandHasNoTerminal(t *testing.T) {
	t.Parallel()
	probe := buildProbe(t, "ttyprobe", ttyProbe)
	for _, way := range strangerWays(t) {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			_, tty, ttyPath := openPty(t)
			if way.name == "unprivileged daemon" {
				// A terminal of the user the daemon runs as, as when that
				// user starts it from their own shell.
				if err := os.Chown(ttyPath, 65534, -1); err != nil {
					t.Fatal(err)
				}
			}
			// The control: a process in the terminal's session does inject.
			ctl := exec.Command(probe, "/dev/tty")
			ctl.Stdin = tty
			ctl.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			out, err := ctl.Output()
			if err != nil || !strings.Contains(string(out), "tiocsti /dev/tty: INJECTED") {
				t.Skipf("TIOCSTI does not work on this host even from the terminal's session (legacy_tiocsti 0?): %v %s", err, out)
			}

			d := way.start(t, harness.Options{TTY: tty})
			daemonSid, err := unix.Getsid(d.Pid())
			if err != nil {
				t.Fatal(err)
			}
			// /dev/tty, and the terminal by its path: TIOCSTI on a terminal
			// that is not the caller's own needs CAP_SYS_ADMIN.
			r := execCall(t, d, map[string]any{"command": probe + " /dev/tty " + ttyPath, "cwd": "/"})
			got := r.Result.Stdout
			t.Logf("daemon session %d; command: %s", daemonSid, got)
			if !r.OK {
				t.Fatalf("exec: %+v", r)
			}
			if strings.Contains(got, "INJECTED") {
				t.Fatalf("a command typed into the daemon's terminal: %s", got)
			}
			if !strings.Contains(lineWith(got, "tiocsti /dev/tty"), "no such device or address") {
				t.Fatalf("a command opened /dev/tty (it has a controlling terminal): %s", got)
			}
			var sid, pid int
			var stdin string
			fmt.Sscanf(lineWith(got, "session"), "session sid=%d pid=%d stdin=%s", &sid, &pid, &stdin)
			if sid != pid || sid == daemonSid || stdin != "/dev/null" {
				t.Fatalf("the command is not a session leader of its own with stdin on /dev/null: sid %d pid %d (daemon's session %d) stdin %q", sid, pid, daemonSid, stdin)
			}
		})
	}
}
