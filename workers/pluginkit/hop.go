package pluginkit

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// A hop is a second, private connection between the supervisor and one
// worker process, next to go-plugin's gRPC connection, for a hot path that
// gRPC makes too slow (hostops' exec: gRPC's reader and writer goroutines on
// both sides and its HTTP/2 frames cost about a quarter of a fork/exec of
// `true`). It is one end of a socketpair the supervisor creates for each
// worker start and passes as an inherited descriptor, so nothing else can
// connect to it: no listener, no address, no credentials. gRPC stays for
// everything else (health, metrics, control).

// HopFDEnv names the worker's inherited descriptor of its hop.
const HopFDEnv = "SVCD_WORKER_HOP_FD"

// HopAttacher is implemented by a dispensed client half that can use a hop;
// the worker manager hands it the supervisor's end once the worker is up,
// with the worker's message limit (Spec.MaxMsg).
type HopAttacher interface {
	AttachHop(conn net.Conn, maxMsg int)
}

// NewHopPair makes the two ends of a hop: the supervisor's as a net.Conn,
// the worker's as a file to put in the child's ExtraFiles (the caller
// closes it once the child has started).
func NewHopPair() (parent net.Conn, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("hop socketpair: %w", err)
	}
	pf := os.NewFile(uintptr(fds[0]), "hop-supervisor")
	defer pf.Close() // FileConn dups it
	parent, err = net.FileConn(pf)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("hop conn: %w", err)
	}
	return parent, os.NewFile(uintptr(fds[1]), "hop-worker"), nil
}

// TakeHop is the worker's side: the hop the supervisor passed, or nil when
// it passed none. It marks the descriptor close-on-exec (the commands a
// worker runs must not inherit it) and removes HopFDEnv from the process's
// environment (nor its name).
func TakeHop() (net.Conn, error) {
	v, ok := os.LookupEnv(HopFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(HopFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not an inherited descriptor", HopFDEnv, v)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "hop")
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("hop descriptor %d: %w", fd, err)
	}
	return conn, nil
}
