package pluginkit

import (
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The worker's side takes the inherited descriptor named by HopFDEnv: the
// connection works both ways, the variable is gone from the environment and
// the descriptor will not be inherited by what the worker executes.
func TestTakeHop(t *testing.T) {
	parent, child, err := NewHopPair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	// As after exec: the child's end without close-on-exec.
	fd := int(child.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	t.Setenv(HopFDEnv, strconv.Itoa(fd))
	conn, err := TakeHop()
	if err != nil || conn == nil {
		t.Fatalf("TakeHop: %v %v", conn, err)
	}
	defer conn.Close()
	if _, ok := os.LookupEnv(HopFDEnv); ok {
		t.Fatalf("%s still in the environment", HopFDEnv)
	}
	// The inherited number is closed (the connection holds a close-on-exec
	// duplicate), so a command cannot inherit it.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("fd %d still open after TakeHop: %v", fd, err)
	}
	sc, err := conn.(interface {
		SyscallConn() (syscall.RawConn, error)
	}).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	_ = sc.Control(func(fd uintptr) { flags, _ = unix.FcntlInt(fd, unix.F_GETFD, 0) })
	if flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("the hop's descriptor is not close-on-exec (flags %#x)", flags)
	}
	if _, err := parent.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	if _, err := conn.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(parent, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q %v", buf, err)
	}
	// The worker's end gone (its process exited): the supervisor's reads end.
	conn.Close()
	if _, err := parent.Read(buf); err != io.EOF {
		t.Fatalf("read after the worker's end closed: %v", err)
	}
}

func TestTakeHopAbsentOrBad(t *testing.T) {
	os.Unsetenv(HopFDEnv)
	if c, err := TakeHop(); c != nil || err != nil {
		t.Fatalf("no hop: %v %v", c, err)
	}
	for _, bad := range []string{"x", "1", "-3"} {
		t.Setenv(HopFDEnv, bad)
		if c, err := TakeHop(); c != nil || err == nil {
			t.Fatalf("%s=%q: %v %v", HopFDEnv, bad, c, err)
		}
	}
}
