package workermgr

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// slot is one named worker: its current instance, the ones draining after
// a rolling restart, and its restart history. run is the only goroutine that
// starts instances, so starts never race.
type slot struct {
	m        *Manager
	spec     Spec
	restarts chan restartReq
	exits    chan *instance

	// guarded by mu
	mu          sync.Mutex
	state       string
	cur         *instance
	draining    map[*instance]struct{}
	changed     chan struct{} // closed and replaced on every change
	restartN    int
	lastExit    *ExitInfo
	lastError   string
	nextRetry   time.Time
	window      crashWindow
	consecutive int
	// A crash loop makes the worker failed until retryAt (failed.go);
	// failedRounds counts crash loops since it last ran stable.
	failedReason string
	retryAt      time.Time
	failedRounds int

	// metrics (metrics.go)
	tel          *carry
	restartsBy   map[string]uint64 // reason -> restarts
	nextReason   string            // why the next install happens, when it is not a rolling restart
	downSince    time.Time         // when the worker stopped serving (zero while it serves)
	recovery     hist              // seconds from down to serving again
	scrapeErrors uint64
}

type restartReq struct{ reply chan error }

func newSlot(m *Manager, sp Spec) *slot {
	return &slot{m: m, spec: sp, restarts: make(chan restartReq), exits: make(chan *instance, 8),
		state: StateStarting, draining: map[*instance]struct{}{}, changed: make(chan struct{}),
		tel: newCarry(), restartsBy: map[string]uint64{}}
}

// notify wakes lease waiters; call with mu held.
func (s *slot) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *slot) run(ctx context.Context, firstDone func()) {
	log := s.m.log.With("worker", s.spec.Name)
	var retry *time.Timer
	var retryC <-chan time.Time
	schedule := func(d time.Duration) {
		if retry != nil {
			retry.Stop()
		}
		retry = time.NewTimer(d)
		retryC = retry.C
	}
	cancelRetry := func() {
		if retry != nil {
			retry.Stop()
		}
		retry, retryC = nil, nil
	}
	defer cancelRetry()

	start := func() {
		inst, err := s.m.spawn(ctx, s.spec)
		if err != nil {
			log.Error("worker failed to start", "error", err)
			if d, ok := s.failed(nil, err); ok {
				schedule(d)
			}
			return
		}
		s.install(inst)
		log.Info("worker running", "pid", inst.pid)
		go s.watch(ctx, inst)
	}

	start()
	firstDone()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retryC:
			retry, retryC = nil, nil
			start()
		case inst := <-s.exits:
			if d, ok := s.exited(inst); ok {
				schedule(d)
			}
		case req := <-s.restarts:
			cancelRetry()
			s.mu.Lock()
			s.failedRounds = 0 // an operator's restart starts the doubling over
			s.mu.Unlock()
			inst, err := s.m.spawn(ctx, s.spec)
			if err != nil {
				log.Error("rolling restart: new instance did not come up; the old one keeps serving", "error", err)
				s.mu.Lock()
				s.lastError = err.Error()
				idle := s.cur == nil && s.state != StateFailed
				failedUntil := s.retryAt
				s.mu.Unlock()
				if idle {
					schedule(s.m.opts.BackoffBase)
				} else if !failedUntil.IsZero() {
					schedule(time.Until(failedUntil)) // keep the failed worker's own retry
				}
				req.reply <- err
				continue
			}
			s.mu.Lock()
			s.nextReason = ReasonRolling // an operator's restart, also of a failed worker
			s.mu.Unlock()
			old := s.install(inst)
			go s.watch(ctx, inst)
			log.Info("rolling restart: new instance serving", "pid", inst.pid)
			go func() {
				if old != nil {
					s.drain(old)
				}
				req.reply <- nil
			}()
		}
	}
}

// install makes inst current and returns the previous instance, now
// draining (nil if there was none).
func (s *slot) install(inst *instance) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur
	if old != nil {
		s.draining[old] = struct{}{}
	}
	if old != nil || s.lastExit != nil || s.restartN > 0 || s.state == StateFailed {
		s.restartN++
		reason := s.nextReason
		if old != nil || reason == "" {
			reason = ReasonRolling
		}
		s.restartsBy[reason]++
	}
	if !s.downSince.IsZero() {
		s.recovery.observe(time.Since(s.downSince).Seconds())
	}
	s.nextReason, s.downSince = "", time.Time{}
	if s.state == StateFailed {
		s.window.reset()
		s.consecutive = 0
	}
	s.cur, s.state, s.lastError, s.nextRetry = inst, StateRunning, "", time.Time{}
	s.failedReason, s.retryAt = "", time.Time{}
	s.notify()
	return old
}

// drain lets calls on old finish (bounded) and stops it.
func (s *slot) drain(old *instance) {
	n := old.inFlight()
	drain := s.m.opts.drainTimeout()
	if !old.waitIdle(drain) {
		s.m.log.Warn("rolling restart: calls still running on the old instance at the drain deadline are cut",
			"worker", s.spec.Name, "pid", old.pid, "in_flight", old.inFlight(), "drain_timeout_ms", drain.Milliseconds())
	}
	// Read the old instance's own series once more: what it counted since
	// the last scrape is kept (carry.go).
	s.m.gatherInto(s, old)
	old.killWith("replaced by a rolling restart")
	s.tel.retire(old.pid)
	s.mu.Lock()
	delete(s.draining, old)
	s.mu.Unlock()
	s.m.log.Info("rolling restart: old instance stopped", "worker", s.spec.Name, "pid", old.pid, "drained_calls", n)
}

// exited handles the exit of inst. An instance that is not current (it was
// replaced or stopped) needs nothing; the current one is restarted after a
// backoff, unless it crash-loops.
func (s *slot) exited(inst *instance) (time.Duration, bool) {
	s.tel.retire(inst.pid)
	s.mu.Lock()
	current := inst == s.cur
	s.mu.Unlock()
	if !current {
		return 0, false
	}
	return s.failed(inst, nil)
}

// failed records an unexpected exit of inst (or a failed start: inst nil,
// err set) and returns the delay before the next start, or false when the
// worker is now failed.
func (s *slot) failed(inst *instance, err error) (time.Duration, bool) {
	now := time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	uptime := time.Duration(0)
	if inst != nil {
		info := inst.exitInfo()
		s.lastExit = &info
		uptime = info.At.Sub(inst.started)
		s.cur = nil
		s.nextReason = exitReason(inst, info)
		s.downSince = info.At
	}
	if err != nil {
		s.lastError = err.Error()
		s.nextReason = ReasonBackoff
		if s.downSince.IsZero() {
			s.downSince = now
		}
	}
	if uptime >= s.m.opts.StableAfter {
		// The instance ran healthy for a while: this is a first crash, not
		// a loop. Earlier exits neither lengthen the backoff nor count
		// towards marking the worker failed, so one kill after a calm
		// period is back after BackoffBase plus a start.
		s.consecutive = 0
		s.window.reset()
		s.failedRounds = 0
	}
	s.consecutive++
	n := s.window.add(now, s.m.opts.CrashLoopWindow)
	if n >= s.m.opts.CrashLoopCount {
		d := s.markFailed(now, n)
		s.m.log.Error("worker is crash-looping; marked failed, it tries again on its own (POST /v1/workers/restart tries now)",
			"worker", s.spec.Name, "exits", n, "window_ms", s.m.opts.CrashLoopWindow.Milliseconds(), "last_exit", describe(s.lastExit), "last_error", s.lastError,
			"retry_in_ms", d.Milliseconds(), "retry_at", s.retryAt.Format(time.RFC3339))
		return d, true
	}
	d := backoff(s.consecutive, s.m.opts.BackoffBase, s.m.opts.BackoffMax)
	s.state = StateRestarting
	s.nextRetry = now.Add(d)
	s.notify()
	s.m.log.Warn("worker exited unexpectedly; restarting", "worker", s.spec.Name, "last_exit", describe(s.lastExit),
		"error", s.lastError, "retry_in_ms", d.Milliseconds(), "recent_exits", n)
	return d, true
}

func describe(e *ExitInfo) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("pid %d %s", e.Pid, e.Reason)
}

// watch notices the exit of inst (polling go-plugin, which reaps it) and
// kills it when it stops answering pings.
func (s *slot) watch(ctx context.Context, inst *instance) {
	exitc, stopExit := pidExit(inst.pid)
	defer stopExit()
	pollEvery := s.m.opts.PollInterval
	if exitc != nil && pollEvery < exitSafetyPoll {
		pollEvery = exitSafetyPoll // the pidfd tells; polling is the safety net
	}
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	fastPolls := 0
	health := time.NewTicker(s.m.opts.HealthInterval)
	defer health.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-inst.exited:
			return
		case <-exitc:
			// Gone; go-plugin's wait goroutine reaps it within moments
			// (once the worker's stdout and stderr reach EOF). Poll fast
			// for a while, then at the normal pace should that take long.
			exitc = nil
			fastPolls = 200
			poll.Reset(time.Millisecond)
		case <-poll.C:
			if fastPolls > 0 {
				if fastPolls--; fastPolls == 0 {
					poll.Reset(s.m.opts.PollInterval)
				}
			}
			if inst.client.Exited() {
				inst.markExited()
				select {
				case s.exits <- inst:
				case <-ctx.Done():
				}
				return
			}
		case <-health.C:
			if err := inst.ping(s.m.opts.HealthInterval); err != nil {
				fails++
				s.m.log.Warn("worker did not answer a health ping", "worker", s.spec.Name, "pid", inst.pid, "error", err, "failures", fails)
				if fails >= s.m.opts.HealthFailures {
					inst.unhealthy.Store(true)
					// SIGKILL the process: the poll above then reports an
					// unexpected exit and the normal restart path runs.
					_ = inst.cmd.Process.Kill()
				}
				continue
			}
			fails = 0
		}
	}
}

// exitSafetyPoll is how often watch polls for an exit the pidfd already
// reports: only in case the pidfd was opened on a reused pid.
const exitSafetyPoll = time.Second

// lease hands out the current instance, waiting while it (re)starts.
func (s *slot) lease(ctx context.Context) (*Lease, error) {
	// The deadline timer is made only once there is something to wait for:
	// almost every lease finds the instance up.
	var deadline *time.Timer
	for {
		s.mu.Lock()
		if s.cur != nil {
			inst := s.cur
			inst.acquire()
			s.mu.Unlock()
			return &Lease{inst: inst}, nil
		}
		state, changed := s.state, s.changed
		lastExit := describe(s.lastExit)
		retryAt := s.retryAt.Format(time.RFC3339)
		s.mu.Unlock()
		switch state {
		case StateFailed:
			return nil, fmt.Errorf("%s: %w (last exit: %s; retry at %s)", s.spec.Name, ErrFailed, lastExit, retryAt)
		case StateStopped:
			return nil, ErrClosed
		}
		if deadline == nil {
			deadline = time.NewTimer(s.m.opts.StartTimeout)
			defer deadline.Stop()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("%s: %w: still %s after %s (last exit: %s)", s.spec.Name, ErrUnavailable, state, s.m.opts.StartTimeout, lastExit)
		}
	}
}

// stopAll marks the slot stopped and returns every live instance.
func (s *slot) stopAll() []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*instance
	if s.cur != nil {
		out = append(out, s.cur)
	}
	for d := range s.draining {
		out = append(out, d)
	}
	s.cur, s.state = nil, StateStopped
	s.draining = map[*instance]struct{}{}
	s.notify()
	return out
}

func (s *slot) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{Name: s.spec.Name, State: s.state, Restarts: s.restartN, LastError: s.lastError, Protocol: "grpc", FailedReason: s.failedReason}
	if !s.retryAt.IsZero() {
		t := s.retryAt
		in.RetryAt = &t
	}
	if s.lastExit != nil {
		e := *s.lastExit
		in.LastExit = &e
	}
	if s.cur != nil {
		in.Pid = s.cur.pid
		t := s.cur.started
		in.StartedAt = &t
		in.InFlight = s.cur.inFlight()
	}
	for d := range s.draining {
		in.Draining += d.inFlight()
	}
	if !s.nextRetry.IsZero() {
		t := s.nextRetry
		in.NextRetryAt = &t
	}
	return in
}
