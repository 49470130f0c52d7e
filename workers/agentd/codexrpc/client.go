// Package codexrpc is the client side of `codex app-server`: JSON-RPC 2.0
// messages as JSON lines over the child's stdin/stdout (Codex omits the
// "jsonrpc" member). Calls wait for their answer; notifications and server
// requests (approvals) go to handlers the owner sets.
package codexrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Options says how to run the child.
type Options struct {
	Command []string // default: codex app-server
	Env     []string // extra KEY=VALUE entries (CODEX_HOME among them)
	Dir     string
	// OnNotification receives every notification, known or not, in arrival order.
	OnNotification func(method string, params json.RawMessage)
	// OnRequest answers a server request (approvals); nil answers a JSON-RPC error.
	OnRequest func(method string, params json.RawMessage) (any, error)
	// OnSend sees every line sent to the child (tests validate them against the schema).
	OnSend func(line []byte)
	// Stderr receives the child's stderr (default: discarded).
	Stderr io.Writer
	// Spawn runs start (which forks the child) on an OS thread that lives
	// as long as the calling process (pluginkit.Spawner.Do): the child's
	// parent-death signal fires when the thread that forked it exits, so a
	// child forked from an arbitrary Go thread could be killed at random.
	// Nil: start runs on the caller's goroutine, locked to its thread for
	// the fork (fine for tests and short-lived callers).
	Spawn func(ctx context.Context, start func() error) error
}

// RPCError is an error the child answered.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("codex error %d: %s", e.Code, e.Message) }

// ErrExited is returned for calls pending or made after the child exited.
var ErrExited = errors.New("codex app-server exited")

type message struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *RPCError        `json:"error,omitempty"`
}

type result struct {
	raw json.RawMessage
	err error
}

// Client is one running child.
type Client struct {
	opts   Options
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	writeM sync.Mutex
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan result
	exited  bool

	done    chan struct{}
	waitErr error
}

// Start runs the child and performs initialize + initialized.
func Start(ctx context.Context, opts Options) (*Client, error) {
	if len(opts.Command) == 0 {
		opts.Command = []string{"codex", "app-server"}
	}
	cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
	cmd.Env = append(childEnviron(os.Environ()), opts.Env...)
	cmd.Dir = opts.Dir
	// Its own process group: the npm `codex` launcher is a node script that
	// runs the native binary as a child, and a kill must reach both.
	// SIGKILL when agentd dies, even by SIGKILL: otherwise the child ends
	// only once it notices its stdin closed, which a busy turn may not do
	// for a long time. Pdeathsig is not inherited: the launcher's native
	// child loses its stdin and exits, and agentd's next start kills what is
	// left of the group (agentd's childreap.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	spawn := opts.Spawn
	if spawn == nil {
		spawn = lockedStart
	}
	if err := spawn(ctx, cmd.Start); err != nil {
		return nil, fmt.Errorf("start %v: %w", opts.Command, err)
	}
	c := &Client{opts: opts, cmd: cmd, stdin: stdin, pending: map[int64]chan result{}, done: make(chan struct{})}
	go c.readLoop(stdout)
	init := map[string]any{"clientInfo": map[string]any{"name": "svcd-agentd", "title": "svcd agentd", "version": "1"}}
	if _, err := c.Call(ctx, "initialize", init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// lockedStart forks on the caller's thread, locked for the fork.
func lockedStart(_ context.Context, start func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return start()
}

// childEnviron drops secrets the agent must not see: the shared token and
// agentd's own configuration (which carries it).
func childEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "SVC_SHARED_TOKEN=") || strings.HasPrefix(kv, "SVCD_AGENTD_CONFIG=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Pid is the child's process id, which is also its process group id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Done is closed when the child has exited.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the child exited (after Done).
func (c *Client) Err() error { return c.waitErr }

func (c *Client) send(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if c.opts.OnSend != nil {
		c.opts.OnSend(b)
	}
	c.writeM.Lock()
	defer c.writeM.Unlock()
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// Call sends a request and waits for its answer or ctx.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.exited {
		c.mu.Unlock()
		return nil, ErrExited
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%w: %v", ErrExited, err)
	}
	select {
	case r := <-ch:
		return r.raw, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

func (c *Client) readLoop(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not JSON-RPC: ignore, never fatal
		}
		switch {
		case m.ID != nil && m.Method != "":
			go c.answer(*m.ID, m.Method, m.Params)
		case m.ID != nil:
			var id int64
			if json.Unmarshal(*m.ID, &id) != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- result{err: m.Error}
				} else {
					ch <- result{raw: m.Result}
				}
			}
		case m.Method != "":
			if c.opts.OnNotification != nil {
				c.opts.OnNotification(m.Method, m.Params)
			}
		}
	}
	c.waitErr = c.cmd.Wait()
	c.mu.Lock()
	c.exited = true
	for id, ch := range c.pending {
		ch <- result{err: ErrExited}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) answer(id json.RawMessage, method string, params json.RawMessage) {
	if c.opts.OnRequest == nil {
		_ = c.send(map[string]any{"id": id, "error": RPCError{Code: -32601, Message: "agentd does not handle " + method}})
		return
	}
	res, err := c.opts.OnRequest(method, params)
	if err != nil {
		_ = c.send(map[string]any{"id": id, "error": RPCError{Code: -32603, Message: err.Error()}})
		return
	}
	_ = c.send(map[string]any{"id": id, "result": res})
}

// Kill ends the child's whole process group at once.
func (c *Client) Kill() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	_ = c.cmd.Process.Kill()
}

// Close closes stdin, which makes app-server exit, and kills it if it lingers.
func (c *Client) Close() {
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-timeAfter():
		c.Kill()
		<-c.done
	}
}
