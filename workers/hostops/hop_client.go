package hostops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/shared/reqid"
)

// ErrHopClosed: the hop ended (the worker exited) before the call's result.
var ErrHopClosed = errors.New("hostops hop: the worker's connection closed before the result")

// hopClient is the supervisor's end of the exec hop: calls multiplexed by
// id on one connection, one reader goroutine. A call's goroutine writes its
// own request frame and is woken once, by its result (or the hop's end);
// the Started frame is taken by the reader and kept with the call, not
// handed across, so it costs the caller no wake-up.
type hopClient struct {
	conn   net.Conn
	maxMsg int

	wmu sync.Mutex // one frame per Write, whole

	mu     sync.Mutex
	nextID uint32
	calls  map[uint32]*hopCall
	closed bool
}

type hopCall struct {
	started Started
	known   bool // started is set
	res     ExecResult
	err     error
	done    chan struct{}
}

func newHopClient(conn net.Conn, maxMsg int) *hopClient {
	c := &hopClient{conn: conn, maxMsg: maxMsg, calls: map[uint32]*hopCall{}}
	go c.read()
	return c
}

// usable: the hop has not ended.
func (c *hopClient) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
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
		c.mu.Unlock()
		return ExecResult{}, ErrHopClosed
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = call
	c.mu.Unlock()

	if err := c.write(appendHopFrame(make([]byte, 0, hopHeader+len(payload)), hopExec, id, payload)); err != nil {
		c.forget(id)
		return ExecResult{}, fmt.Errorf("hostops hop: send: %w", err)
	}
	report := func() {
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
		c.forget(id)
		_ = c.write(appendHopFrame(nil, hopCancel, id, nil))
		report()
		return ExecResult{}, ctx.Err()
	}
}

func (c *hopClient) forget(id uint32) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

func (c *hopClient) write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(frame)
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
	c.mu.Lock()
	c.closed = true
	calls := c.calls
	c.calls = map[uint32]*hopCall{}
	c.mu.Unlock()
	for _, call := range calls {
		call.err = fmt.Errorf("%w (%v)", ErrHopClosed, err)
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
