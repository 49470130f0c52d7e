package workermgr

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/svcd/svcd/workers/pluginkit"
)

// instance is one worker process. A plugin.Client cannot be started again
// once its process is gone, so every (re)start makes a new instance.
type instance struct {
	name    string
	client  *plugin.Client
	cmd     *exec.Cmd
	rpc     plugin.ClientProtocol
	raw     any
	conn    *grpc.ClientConn // the go-plugin connection: the worker's Telemetry service is on it
	pid     int
	started time.Time

	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to 0 (drain waits on it)

	expected   atomic.Bool // stopped on purpose: not a crash
	exited     chan struct{}
	exitOnce   sync.Once
	exit       ExitInfo
	killOnce   sync.Once
	killReason string
	unhealthy  atomic.Bool // killed by the health check (restart reason "unhealthy")
}

// spawn starts a worker process by re-executing svcd as `svcd worker NAME`,
// on the spawner's pinned thread, and waits until it answers a ping.
//
// The child gets Pdeathsig SIGTERM (the worker kills its commands' process
// groups on SIGTERM before exiting) and its own process group, so a terminal
// ^C reaches only the supervisor, which then stops workers in order.
func (m *Manager) spawn(ctx context.Context, sp Spec) (*instance, error) {
	cmd := exec.Command(m.opts.Executable, pluginkit.WorkerArgs(sp.Name)...)
	cmd.Env = append(append([]string(nil), m.opts.Environ...), sp.Env...)
	if sp.EnvAt != nil {
		cmd.Env = append(cmd.Env, sp.EnvAt()...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cfg := pluginkit.ClientConfig(pluginkit.ClientOptions{Name: sp.Name, Plugin: sp.Plugin, MaxMsg: sp.MaxMsg, Logger: m.log.Named(sp.Name)})
	var hop *pluginkit.Hop
	if sp.Hop {
		parent, child, err := pluginkit.NewHopPair()
		if err != nil {
			return nil, fmt.Errorf("start worker %s: %w", sp.Name, err)
		}
		hop = parent
		cmd.ExtraFiles = child
		cmd.Env = append(cmd.Env, pluginkit.HopFDEnv+"="+pluginkit.HopFDValue(0))
		defer func() { // the worker has its own copies once started
			for _, f := range child {
				f.Close()
			}
		}()
	}
	cfg.Cmd = cmd
	cfg.StartTimeout = m.opts.StartTimeout
	client := plugin.NewClient(cfg)

	err := m.spawner.Do(ctx, func() error { _, err := client.Start(); return err })
	if err != nil {
		client.Kill()
		if hop != nil {
			hop.Close()
		}
		return nil, fmt.Errorf("start worker %s: %w", sp.Name, err)
	}
	inst := &instance{name: sp.Name, client: client, cmd: cmd, pid: cmd.Process.Pid, started: time.Now().UTC(), exited: make(chan struct{})}
	fail := func(err error) (*instance, error) {
		if hop != nil {
			hop.Close()
		}
		inst.killWith("failed to come up")
		return nil, fmt.Errorf("worker %s (pid %d): %w", sp.Name, inst.pid, err)
	}
	if inst.rpc, err = client.Client(); err != nil {
		return fail(err)
	}
	if gc, ok := inst.rpc.(*plugin.GRPCClient); ok {
		inst.conn = gc.Conn
	}
	if inst.raw, err = inst.rpc.Dispense(sp.Name); err != nil {
		return fail(err)
	}
	if hop != nil {
		// From here the client half owns the hop: it ends at the worker's
		// exit (the peer's end closes with the process).
		if a, ok := inst.raw.(pluginkit.HopAttacher); ok {
			a.AttachHop(hop, sp.MaxMsg)
		} else {
			hop.Close()
		}
		hop = nil
	}
	if err := inst.ping(m.opts.StartTimeout); err != nil {
		return fail(fmt.Errorf("first ping: %w", err))
	}
	return inst, nil
}

// ping asks go-plugin's health service, bounded by timeout (Ping itself
// takes no context).
func (i *instance) ping(timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- i.rpc.Ping() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		return errors.New("ping timed out")
	case <-i.exited:
		return errors.New("process exited")
	}
}

func (i *instance) acquire() {
	i.mu.Lock()
	i.inflight++
	i.mu.Unlock()
}

func (i *instance) release() {
	i.mu.Lock()
	i.inflight--
	if i.inflight == 0 && i.idle != nil {
		close(i.idle)
		i.idle = nil
	}
	i.mu.Unlock()
}

func (i *instance) inFlight() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.inflight
}

// waitIdle waits until no call holds the instance, it exits, or timeout.
func (i *instance) waitIdle(timeout time.Duration) bool {
	i.mu.Lock()
	if i.inflight == 0 {
		i.mu.Unlock()
		return true
	}
	if i.idle == nil {
		i.idle = make(chan struct{})
	}
	idle := i.idle
	i.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-i.exited:
		return true
	case <-t.C:
		return false
	}
}

// kill stops the instance on purpose (rolling restart, shutdown): a graceful
// go-plugin close first, SIGKILL after go-plugin's grace period.
func (i *instance) kill() { i.killWith("stopped by the worker manager") }

func (i *instance) killWith(reason string) {
	i.killOnce.Do(func() {
		i.expected.Store(true)
		i.killReason = reason
		i.client.Kill()
		i.markExited()
	})
}

// markExited records the exit once; the caller knows the process is gone.
func (i *instance) markExited() {
	i.exitOnce.Do(func() {
		info := ExitInfo{Pid: i.pid, Code: -1, At: time.Now().UTC(), Expected: i.expected.Load(), Reason: i.killReason}
		// ProcessState is written by go-plugin's wait goroutine before it
		// flags the client exited (under the client's lock), so reading it
		// after Exited() is ordered.
		if i.client.Exited() && i.cmd.ProcessState != nil {
			ps := i.cmd.ProcessState
			info.Code = ps.ExitCode()
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				info.Signal = unix.SignalName(ws.Signal())
			}
		}
		if info.Reason == "" {
			switch {
			case info.Signal != "":
				info.Reason = "killed by " + info.Signal
			default:
				info.Reason = fmt.Sprintf("exited with code %d", info.Code)
			}
		}
		i.exit = info
		close(i.exited)
	})
}

func (i *instance) exitInfo() ExitInfo {
	<-i.exited
	return i.exit
}
