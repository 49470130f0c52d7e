// Package workermgr runs svcd's worker processes (hostops, and later relay,
// scheduler, agentd) for the supervisor over go-plugin: it spawns each one
// by re-executing the svcd binary, checks its health, restarts it with capped
// exponential backoff when it dies, marks it failed when it crash-loops, and
// performs rolling restarts that never drop a call in flight.
package workermgr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/svcd/svcd/workers/pluginkit"
)

// States of a worker.
const (
	StateStarting   = "starting"
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateFailed     = "failed"
	StateStopped    = "stopped"
)

// Errors a lease can fail with; callers map them onto API errors.
var (
	ErrUnknownWorker = errors.New("unknown worker")
	ErrFailed        = errors.New("worker is failed (crash loop); it tries again on its own (retry_at in GET /v1/workers), or restart it now with POST /v1/workers/restart")
	ErrUnavailable   = errors.New("worker is not available")
	ErrClosed        = errors.New("worker manager is closed")
	ErrNoWorkers     = errors.New("this process runs no workers")
)

// Spec describes one worker.
type Spec struct {
	Name   string
	Plugin plugin.Plugin // the client half's plugin (Impl unset)
	Env    []string      // extra KEY=VALUE for this worker (its config)
	MaxMsg int           // gRPC message limit both ways
	// Hop: each start of the worker also gets a private socketpair
	// (pluginkit.NewHopPair), handed to the dispensed client half when it
	// is a pluginkit.HopAttacher.
	Hop bool
	// EnvAt, when set, adds KEY=VALUE computed at each spawn (a config a
	// SIGHUP may have changed since the manager was made).
	EnvAt func() []string
}

// Options tune the manager; zero values take the defaults below.
type Options struct {
	Executable      string   // default os.Executable()
	Environ         []string // base environment of workers (already filtered)
	Logger          hclog.Logger
	StartTimeout    time.Duration // handshake + first ping
	BackoffBase     time.Duration // first restart delay
	BackoffMax      time.Duration // cap of the restart delay
	StableAfter     time.Duration // uptime after which an exit is a first crash: backoff and crash-loop count start over
	CrashLoopCount  int           // this many exits …
	CrashLoopWindow time.Duration // … within this window mark the worker failed
	FailedRetry     time.Duration // a failed worker tries again after this, doubling …
	FailedRetryMax  time.Duration // … up to this
	HealthInterval  time.Duration // ping period
	HealthFailures  int           // consecutive failed pings before a kill
	DrainTimeout    time.Duration // rolling restart: wait for calls on the old instance
	PollInterval    time.Duration // how often an exit is looked for
	// DrainTimeoutAt, when set, replaces DrainTimeout at each drain (it
	// follows exec_timeout_max_ms, which a SIGHUP may raise).
	DrainTimeoutAt func() time.Duration
}

// drainTimeout is the drain bound in force now.
func (o *Options) drainTimeout() time.Duration {
	if o.DrainTimeoutAt != nil {
		if d := o.DrainTimeoutAt(); d > 0 {
			return d
		}
	}
	return o.DrainTimeout
}

func (o *Options) defaults() error {
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own executable: %w", err)
		}
		o.Executable = exe
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.StartTimeout, 10*time.Second)
	set(&o.BackoffBase, 50*time.Millisecond)
	set(&o.BackoffMax, 30*time.Second)
	set(&o.StableAfter, 10*time.Second)
	set(&o.CrashLoopWindow, 60*time.Second)
	set(&o.FailedRetry, 5*time.Minute)
	set(&o.FailedRetryMax, time.Hour)
	if o.FailedRetryMax < o.FailedRetry {
		o.FailedRetryMax = o.FailedRetry
	}
	set(&o.HealthInterval, 2*time.Second)
	set(&o.DrainTimeout, 30*time.Second)
	set(&o.PollInterval, 20*time.Millisecond)
	if o.CrashLoopCount <= 0 {
		o.CrashLoopCount = 5
	}
	if o.HealthFailures <= 0 {
		o.HealthFailures = 3
	}
	return nil
}

// Manager owns every worker slot.
type Manager struct {
	opts    Options
	log     hclog.Logger
	spawner *pluginkit.Spawner
	slots   map[string]*slot
	names   []string
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

// New builds a manager for specs. Nothing runs until Start.
func New(opts Options, specs ...Spec) (*Manager, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: opts.Logger, slots: map[string]*slot{}}
	for _, sp := range specs {
		if _, dup := m.slots[sp.Name]; dup {
			return nil, fmt.Errorf("worker %q declared twice", sp.Name)
		}
		m.slots[sp.Name] = newSlot(m, sp)
		m.names = append(m.names, sp.Name)
	}
	sort.Strings(m.names)
	return m, nil
}

// Start spawns every worker and waits (bounded by ctx) until each one is
// healthy or has had its first attempt fail; a worker that fails to start is
// retried in the background, so the daemon comes up either way.
func (m *Manager) Start(ctx context.Context) {
	m.spawner = pluginkit.NewSpawner()
	m.ctx, m.cancel = context.WithCancel(context.Background())
	var first sync.WaitGroup
	for _, name := range m.names {
		s := m.slots[name]
		first.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(m.ctx, first.Done)
		}()
	}
	done := make(chan struct{})
	go func() { first.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close stops every worker (gracefully, then by force) and ends the spawner
// thread. Calls in flight fail.
func (m *Manager) Close() error {
	m.once.Do(func() {
		if m.cancel == nil {
			return
		}
		m.cancel()
		m.wg.Wait()
		var wg sync.WaitGroup
		for _, s := range m.slots {
			for _, inst := range s.stopAll() {
				wg.Add(1)
				go func() { defer wg.Done(); inst.kill() }()
			}
		}
		wg.Wait()
		m.spawner.Close()
	})
	return nil
}

// Names lists the managed workers, sorted.
func (m *Manager) Names() []string { return append([]string(nil), m.names...) }

// List reports every worker.
func (m *Manager) List() []Info {
	out := make([]Info, 0, len(m.names))
	for _, n := range m.names {
		out = append(out, m.slots[n].info())
	}
	return out
}

// Get reports one worker.
func (m *Manager) Get(name string) (Info, bool) {
	s, ok := m.slots[name]
	if !ok {
		return Info{}, false
	}
	return s.info(), true
}

// Restart performs a rolling restart of name: start a new instance, wait
// until it answers a ping, send new calls to it, let calls on the old one
// finish (up to DrainTimeout), then stop the old one. A failed worker is
// started afresh and its crash-loop history forgotten.
func (m *Manager) Restart(ctx context.Context, name string) (Info, error) {
	s, ok := m.slots[name]
	if !ok {
		return Info{}, fmt.Errorf("%w %q", ErrUnknownWorker, name)
	}
	if m.ctx == nil || m.ctx.Err() != nil {
		return Info{}, ErrClosed
	}
	req := restartReq{reply: make(chan error, 1)}
	select {
	case s.restarts <- req:
	case <-ctx.Done():
		return Info{}, ctx.Err()
	case <-m.ctx.Done():
		return Info{}, ErrClosed
	}
	select {
	case err := <-req.reply:
		return s.info(), err
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
}

// Lease hands out the current instance of name for one call. It waits,
// bounded by ctx and StartTimeout, while the worker is (re)starting. Call
// Release when the call is over: a rolling restart waits for it.
func (m *Manager) Lease(ctx context.Context, name string) (*Lease, error) {
	if m == nil {
		return nil, ErrNoWorkers
	}
	s, ok := m.slots[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownWorker, name)
	}
	return s.lease(ctx)
}

// Lease is one call's hold on a worker instance.
type Lease struct {
	inst *instance
	once sync.Once
}

// Raw is the dispensed client half (for hostops, a hostops.HostOps).
func (l *Lease) Raw() any { return l.inst.raw }

// Pid is the worker process id.
func (l *Lease) Pid() int { return l.inst.pid }

// Release ends the call's hold. Safe to call more than once.
func (l *Lease) Release() { l.once.Do(l.inst.release) }

// Exited reports whether the instance's process has exited, waiting up to
// wait for the exit to be noticed (a failed call usually means it is dying).
func (l *Lease) Exited(wait time.Duration) (ExitInfo, bool) {
	select {
	case <-l.inst.exited:
		return l.inst.exitInfo(), true
	case <-time.After(wait):
		return ExitInfo{}, false
	}
}

// Alive reports, without waiting, that the instance's process has not been
// seen to exit.
func (l *Lease) Alive() bool {
	select {
	case <-l.inst.exited:
		return false
	default:
		return true
	}
}

// Call leases name, asserts its client half to T and runs fn with it.
func Call[T any](ctx context.Context, m *Manager, name string, fn func(T, *Lease) error) error {
	l, err := m.Lease(ctx, name)
	if err != nil {
		return err
	}
	defer l.Release()
	impl, ok := l.Raw().(T)
	if !ok {
		return fmt.Errorf("worker %q: client half is %T", name, l.Raw())
	}
	return fn(impl, l)
}
