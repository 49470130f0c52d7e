package hostops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/workers/pluginkit"
)

var (
	// ErrHopClosed: the hop ended (the worker exited) before the call's result.
	ErrHopClosed = errors.New("hostops hop: the worker's connection closed before the result")
	// ErrHopStuck: a frame could not be written within hopWriteTimeout.
	ErrHopStuck = errors.New("hostops hop: write timed out")
	// ErrCancelSent marks an Exec that failed because its caller left,
	// after the cancel went to the worker (the hop's cancel frame was
	// written, or gRPC reset the stream). A worker that is still alive ends
	// the command itself, while the command still holds its cgroup; the
	// caller must then not kill that cgroup by its path: cgroups are reused,
	// and a kill that lands after the command ended would hit the next
	// command the worker runs there.
	ErrCancelSent = errors.New("hostops: the cancel was sent to the worker, which ends the command")
)

// hopClient is the supervisor's end of the exec hop: calls multiplexed by
// id on one connection, one reader goroutine. A call's goroutine writes its
// own request frame and is woken once, by its result (or the hop's end).
// The worker's Started frames wait on the hop's notes, which nothing polls:
// they are read when a call ends without its result (the worker died, the
// caller left), and every notesEvery results to keep the queue short. So
// an exec wakes the supervisor once, for its result.
type hopClient struct {
	conn    net.Conn
	notes   int // -1: none or closed; read under mu
	maxMsg  int
	results int // results since the notes were last read (reader only)

	wmu          sync.Mutex    // one frame per Write, whole
	writeTimeout time.Duration // how long a frame may wait for the worker to read (hopWriteTimeout)

	mu     sync.Mutex
	nextID uint32
	calls  map[uint32]*hopCall
	closed bool
	ended  error // why the hop ended: the first write or read error
}

type hopCall struct {
	started Started
	known   bool // started is set
	res     ExecResult
	err     error
	done    chan struct{}
}

// hopWriteTimeout bounds each frame's write. A worker reads its hop at
// once (one reader goroutine, frames of a few hundred bytes); one that has
// left a full socket buffer unread this long is stuck (stopped, wedged), and
// a write without a bound would hold every caller behind the write lock
// for ever. The hop is closed then: every call on it fails (the supervisor
// answers worker_call_failed naming the worker) and the calls after it too.
const hopWriteTimeout = 5 * time.Second

// notesEvery: the notes are read after this many results, so the worker's
// queue there (a socket buffer of ~200 KB) holds at most this many frames
// of finished calls besides those of running ones.
const notesEvery = 64

func newHopClient(hop *pluginkit.Hop, maxMsg int) *hopClient {
	c := &hopClient{conn: hop.Conn, notes: hop.Notes, maxMsg: maxMsg, calls: map[uint32]*hopCall{}, writeTimeout: hopWriteTimeout}
	go c.read()
	return c
}

// readNotes takes every Started frame queued on the notes, without
// waiting, into the calls still waiting. c.mu must be held.
func (c *hopClient) readNotes() {
	if c.notes < 0 {
		return
	}
	var buf [8 << 10]byte
	for {
		n, _, err := unix.Recvfrom(c.notes, buf[:], unix.MSG_DONTWAIT)
		if err != nil || n <= 0 { // EAGAIN: nothing more; 0: the worker's end is closed
			return
		}
		f, err := parseHopPacket(buf[:n], c.maxMsg)
		if err != nil || f.kind != hopStarted {
			continue // not from our worker's code; nothing to kill by it
		}
		var st pb.ExecStarted
		if proto.Unmarshal(f.payload, &st) != nil {
			continue
		}
		if call := c.calls[f.id]; call != nil {
			call.started, call.known = Started{Pid: int(st.Pid), Cgroup: st.Cgroup}, true
		}
	}
}

// takesExec: exec goes over the hop, which is open, or ended because the
// worker stopped reading (then the call fails at once: gRPC to that worker
// would wait as long, and the supervisor restarts it). A hop that ended
// otherwise (a bad frame) leaves exec to gRPC, as on a worker without one.
func (c *hopClient) takesExec() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed || errors.Is(c.ended, ErrHopStuck)
}

// end records why the hop ends, the first reason only.
func (c *hopClient) end(err error) {
	c.mu.Lock()
	if c.ended == nil {
		c.ended = err
	}
	c.mu.Unlock()
}

// Exec is HostOps.Exec over the hop. started is called, in this goroutine,
// before Exec returns, whenever the worker said the command exists: on an
// error (the worker died, ctx ended) the caller kills what it names.
func (c *hopClient) Exec(ctx context.Context, req ExecRequest, started func(Started)) (ExecResult, error) {
	pr := &pb.ExecRequest{Command: req.Command, Cwd: req.Cwd, TimeoutMs: req.Timeout.Milliseconds()}
	if l := req.Limits; l != nil {
		pr.HasLimits, pr.MemoryBytes, pr.Pids, pr.Cpu = true, l.MemoryBytes, l.Pids, l.CPU
	}
	reqBytes, err := proto.Marshal(pr)
	if err != nil {
		return ExecResult{}, err
	}
	payload := appendHopExecPayload(make([]byte, 0, 1+64+len(reqBytes)), reqid.From(ctx), reqBytes)
	if len(payload) > c.maxMsg {
		return ExecResult{}, fmt.Errorf("hostops hop: request of %d bytes over the limit of %d", len(payload), c.maxMsg)
	}
	call := &hopCall{done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		err := fmt.Errorf("%w (%w)", ErrHopClosed, c.ended)
		c.mu.Unlock()
		return ExecResult{}, err
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = call
	c.mu.Unlock()

	if err := c.write(appendHopFrame(make([]byte, 0, hopHeader+len(payload)), hopExec, id, payload)); err != nil {
		c.forget(id)
		return ExecResult{}, fmt.Errorf("hostops hop: send: %w", err)
	}
	report := func() { // call is out of c.calls: nothing writes it any more
		c.mu.Lock()
		st, known := call.started, call.known
		c.mu.Unlock()
		if known && started != nil {
			started(st)
		}
	}
	select {
	case <-call.done:
		report()
		return call.res, call.err
	case <-ctx.Done():
		// The worker kills the command on the cancel; should the cancel not
		// arrive (the worker died), the caller kills what Started named.
		werr := c.write(appendHopFrame(nil, hopCancel, id, nil))
		c.mu.Lock()
		c.readNotes()
		delete(c.calls, id)
		c.mu.Unlock()
		report()
		if werr != nil {
			return ExecResult{}, fmt.Errorf("%w; the cancel could not be sent: %w", ctx.Err(), werr)
		}
		return ExecResult{}, fmt.Errorf("%w (%w)", ctx.Err(), ErrCancelSent)
	}
}

func (c *hopClient) forget(id uint32) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// write sends one frame within writeTimeout. A write that fails or times
// out may have sent part of the frame, so the stream is unusable: the hop is
// closed, which ends the reader and fails every waiting call.
func (c *hopClient) write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.conn.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
		return err
	}
	_, err := c.conn.Write(frame)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: the worker did not read its hop for %v (stopped or stuck); the hop is closed", ErrHopStuck, c.writeTimeout)
	}
	c.end(err)
	c.conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != err { // it had ended already (a write before this one)
		return fmt.Errorf("%w (%w)", ErrHopClosed, c.ended)
	}
	return err
}

// read takes the worker's frames until the hop ends, then fails every call
// still waiting with ErrHopClosed.
func (c *hopClient) read() {
	r := bufio.NewReader(c.conn)
	var scratch []byte
	var err error
	for {
		var f hopFrame
		f, scratch, err = readHopFrame(r, c.maxMsg, scratch)
		if err != nil {
			break
		}
		if err = c.deliver(f); err != nil {
			break
		}
	}
	c.conn.Close()
	c.end(err)
	c.mu.Lock()
	c.closed = true
	// What the worker noted before it died is still queued there.
	c.readNotes()
	if c.notes >= 0 {
		unix.Close(c.notes)
		c.notes = -1
	}
	calls := c.calls
	c.calls = map[uint32]*hopCall{}
	ended := c.ended
	c.mu.Unlock()
	for _, call := range calls {
		call.err = fmt.Errorf("%w (%w)", ErrHopClosed, ended)
		close(call.done)
	}
}

func (c *hopClient) deliver(f hopFrame) error {
	switch f.kind {
	case hopStarted:
		var st pb.ExecStarted
		if err := proto.Unmarshal(f.payload, &st); err != nil {
			return fmt.Errorf("%w: started: %v", errHopFrame, err)
		}
		c.mu.Lock()
		if call := c.calls[f.id]; call != nil {
			call.started, call.known = Started{Pid: int(st.Pid), Cgroup: st.Cgroup}, true
		}
		c.mu.Unlock()
	case hopResult:
		var res pb.ExecResult
		if err := proto.Unmarshal(f.payload, &res); err != nil {
			return fmt.Errorf("%w: result: %v", errHopFrame, err)
		}
		c.mu.Lock()
		call := c.calls[f.id]
		delete(c.calls, f.id)
		if c.results++; c.results >= notesEvery {
			c.results = 0
			c.readNotes()
		}
		c.mu.Unlock()
		if call != nil { // nil: its caller went away already
			call.res = execResultFromPB(&res)
			close(call.done)
		}
	default:
		return fmt.Errorf("%w: kind %d from the worker", errHopFrame, f.kind)
	}
	return nil
}
