package pluginkit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A hop is a second, private connection between the supervisor and one
// worker process, next to go-plugin's gRPC connection, for a hot path that
// gRPC makes too slow (hostops' exec: gRPC's reader and writer goroutines on
// both sides and its HTTP/2 frames cost about a quarter of a fork/exec of
// `true`). It is made of socketpairs the supervisor creates for each worker
// start and passes as inherited descriptors, so nothing else can connect to
// it: no listener, no address, no credentials. gRPC stays for everything
// else (health, metrics, control).
//
// A hop has two parts:
//
//   - Conn, a stream both sides read and write: calls and answers.
//   - Notes, a SOCK_SEQPACKET pair the worker writes and the supervisor does
//     not poll: it reads what is queued there only when it needs it (a
//     call that ended without its answer) or now and then to keep the queue
//     short. What the worker writes there reaches the supervisor's socket
//     at once and stays readable after the worker dies, without waking the
//     supervisor for each message.

// HopFDEnv names the worker's inherited descriptors of its hop:
// "CONN,NOTES".
const HopFDEnv = "SVCD_WORKER_HOP_FD"

// Hop is one side of a hop. Notes is a raw descriptor (-1: none) in
// blocking mode, never on Go's netpoller, so nothing waits on it; read or
// write it with MSG_DONTWAIT.
type Hop struct {
	Conn  net.Conn
	Notes int
}

// Close closes both parts.
func (h *Hop) Close() {
	h.Conn.Close()
	if h.Notes >= 0 {
		unix.Close(h.Notes)
		h.Notes = -1
	}
}

// HopAttacher is implemented by a dispensed client half that can use a hop;
// the worker manager hands it the supervisor's side once the worker is up,
// with the worker's message limit (Spec.MaxMsg). It then owns the hop.
type HopAttacher interface {
	AttachHop(h *Hop, maxMsg int)
}

// NewHopPair makes a hop: the supervisor's side, and the worker's two
// descriptors to put in the child's ExtraFiles in this order, with
// HopFDEnv set to HopFDValue(first) (the caller closes them once the child
// has started).
func NewHopPair() (parent *Hop, child []*os.File, err error) {
	conn, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("hop socketpair: %w", err)
	}
	notes, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Close(conn[0])
		unix.Close(conn[1])
		return nil, nil, fmt.Errorf("hop notes socketpair: %w", err)
	}
	pf := os.NewFile(uintptr(conn[0]), "hop-supervisor")
	defer pf.Close() // FileConn dups it
	pc, err := net.FileConn(pf)
	if err != nil {
		unix.Close(conn[1])
		unix.Close(notes[0])
		unix.Close(notes[1])
		return nil, nil, fmt.Errorf("hop conn: %w", err)
	}
	return &Hop{Conn: pc, Notes: notes[0]},
		[]*os.File{os.NewFile(uintptr(conn[1]), "hop-worker"), os.NewFile(uintptr(notes[1]), "hop-notes-worker")}, nil
}

// HopFDValue is HopFDEnv's value for a child whose ExtraFiles start at
// index first with NewHopPair's two files (fd 3 is ExtraFiles[0]).
func HopFDValue(first int) string {
	return strconv.Itoa(3+first) + "," + strconv.Itoa(4+first)
}

// TakeHop is the worker's side: the hop the supervisor passed, or nil when
// it passed none. It makes both descriptors close-on-exec (the commands a
// worker runs must not inherit them) and removes HopFDEnv from the
// process's environment (nor its name).
func TakeHop() (*Hop, error) {
	v, ok := os.LookupEnv(HopFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(HopFDEnv)
	connFD, notesFD, err := parseHopFDs(v)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(connFD)
	syscall.CloseOnExec(notesFD)
	f := os.NewFile(uintptr(connFD), "hop")
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		unix.Close(notesFD)
		return nil, fmt.Errorf("hop descriptor %d: %w", connFD, err)
	}
	return &Hop{Conn: conn, Notes: notesFD}, nil
}

func parseHopFDs(v string) (conn, notes int, err error) {
	a, b, ok := strings.Cut(v, ",")
	bad := errors.New("not two inherited descriptors")
	if !ok {
		return 0, 0, fmt.Errorf("%s=%q: %w", HopFDEnv, v, bad)
	}
	conn, err1 := strconv.Atoi(a)
	notes, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || conn < 3 || notes < 3 || conn == notes {
		return 0, 0, fmt.Errorf("%s=%q: %w", HopFDEnv, v, bad)
	}
	return conn, notes, nil
}
