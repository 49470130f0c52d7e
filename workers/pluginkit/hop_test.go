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
	// As after exec: the child's ends without close-on-exec.
	fd, notesFD := int(child[0].Fd()), int(child[1].Fd())
	for _, f := range []int{fd, notesFD} {
		if _, err := unix.FcntlInt(uintptr(f), unix.F_SETFD, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(HopFDEnv, strconv.Itoa(fd)+","+strconv.Itoa(notesFD))
	hop, err := TakeHop()
	if err != nil || hop == nil || hop.Notes != notesFD {
		t.Fatalf("TakeHop: %+v %v", hop, err)
	}
	if flags, err := unix.FcntlInt(uintptr(notesFD), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("notes fd %d flags %#x %v: not close-on-exec", notesFD, flags, err)
	}
	conn := hop.Conn
	// A note is one packet, readable without waiting, and still there once
	// the worker's side is closed.
	if err := unix.Sendto(hop.Notes, []byte("note-1"), unix.MSG_DONTWAIT, nil); err != nil {
		t.Fatal(err)
	}
	defer hop.Close()
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
	if _, err := parent.Conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	if _, err := conn.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(parent.Conn, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q %v", buf, err)
	}
	// The worker's side gone (its process exited): the supervisor's reads
	// end, and the note written before is still there.
	hop.Close()
	if _, err := parent.Conn.Read(buf); err != io.EOF {
		t.Fatalf("read after the worker's end closed: %v", err)
	}
	note := make([]byte, 64)
	if n, _, err := unix.Recvfrom(parent.Notes, note, unix.MSG_DONTWAIT); err != nil || string(note[:n]) != "note-1" {
		t.Fatalf("note after the worker's end closed: %q %v", note[:n], err)
	}
	if n, _, err := unix.Recvfrom(parent.Notes, note, unix.MSG_DONTWAIT); n != 0 || err != nil {
		t.Fatalf("notes after the last one: %d %v, want end of file", n, err)
	}
}

func TestTakeHopAbsentOrBad(t *testing.T) {
	os.Unsetenv(HopFDEnv)
	if c, err := TakeHop(); c != nil || err != nil {
		t.Fatalf("no hop: %v %v", c, err)
	}
	for _, bad := range []string{"x", "1", "-3", "3", "3,3", "3,x", "5,2"} {
		t.Setenv(HopFDEnv, bad)
		if c, err := TakeHop(); c != nil || err == nil {
			t.Fatalf("%s=%q: %v %v", HopFDEnv, bad, c, err)
		}
	}
}
