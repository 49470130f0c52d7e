// Package agentd is the agent daemon: it owns agent sessions, drives one
// `codex app-server` child over JSON-RPC (codexrpc) and serves its own HTTP
// API and event WebSocket. The main daemon proxies /v1/agent/* to it.
package agentd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/workers/agentd/codexrpc"
	"github.com/svcd/svcd/workers/pluginkit"
)

// Config is what agentd runs with.
type Config struct {
	Listen         string   // default 127.0.0.1:4319
	DataDir        string   // the session store lives here
	Command        []string // default: codex app-server
	CodexHome      string   // CODEX_HOME for the child ("" = inherit)
	ApprovalPolicy string   // decline (default) | accept
	Token          string   // shared token writes must carry
	// TokenForReads: reads need the token too (the main daemon runs with
	// require_token = "all"); /healthz never does.
	TokenForReads bool
	// ProxySecret is the spawning daemon's per-spawn secret: agentd proves
	// with it that it is that daemon's agentd (proof.go).
	ProxySecret  string
	AllowedHosts []string
	RestartMin   time.Duration // child restart backoff, first step (default 200ms)
	RestartMax   time.Duration // and ceiling (default 10s)
	MaxWait      time.Duration // ceiling of a turn's wait (default 120s)
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:4319"
	}
	if len(c.Command) == 0 {
		c.Command = []string{"codex", "app-server"}
	}
	if c.ApprovalPolicy == "" {
		c.ApprovalPolicy = "decline"
	}
	if c.RestartMin <= 0 {
		c.RestartMin = 200 * time.Millisecond
	}
	if c.RestartMax <= 0 {
		c.RestartMax = 10 * time.Second
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 120 * time.Second
	}
}

// Daemon is a running agentd.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	store *Store
	hub   *hub

	mu       sync.Mutex
	sessions map[string]*Session
	byThread map[string]string // thread id → session id
	loaded   map[string]bool   // threads started or resumed in the current child
	child    *codexrpc.Client
	childSt  childStatus
	waiters  map[string][]chan struct{} // session id → turn-finished waiters
	started  time.Time
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup
	m        *daemonMetrics // metrics.go
	// spawner forks the child from one pinned thread, so its parent-death
	// signal fires when agentd dies and not when a Go thread retires.
	spawner *pluginkit.Spawner
	marker  string // ChildMarkerEnv's value for this instance's children (childreap.go)
}

type childStatus struct {
	State   string   `json:"state"` // starting | running | missing | unavailable | stopped
	Pid     int      `json:"pid,omitempty"`
	Command []string `json:"command"`
	Error   string   `json:"error,omitempty"`
	// LookedFor and Install are set when the state is missing: the
	// executable searched for (and where), and how to install it.
	LookedFor string    `json:"looked_for,omitempty"`
	Install   string    `json:"install,omitempty"`
	Restarts  int       `json:"restarts"`
	Since     time.Time `json:"since"`
}

// New opens the store and starts the child supervisor.
func New(cfg Config, log *slog.Logger) (*Daemon, error) {
	cfg.Defaults()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st, err := OpenStore(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	sessions, err := st.Load()
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: log, store: st, hub: newHub(), sessions: sessions,
		byThread: map[string]string{}, loaded: map[string]bool{}, waiters: map[string][]chan struct{}{},
		started: time.Now(), stop: make(chan struct{}), m: newDaemonMetrics(), spawner: pluginkit.NewSpawner(), marker: newID("agc_")}
	if pids := reapStaleChild(cfg.DataDir); len(pids) > 0 {
		log.Warn("killed what was left of the previous agentd's Codex child", "pids", pids)
	}
	for id, s := range sessions {
		if s.ThreadID != "" {
			d.byThread[s.ThreadID] = id
		}
		if s.Status == "running" { // agentd died mid-turn: that turn is lost
			d.finishTurnLocked(s, "failed", "agentd restarted while the turn ran; the turn was lost")
		}
	}
	d.childSt = childStatus{State: "starting", Command: cfg.Command, Since: time.Now()}
	_ = d.saveLocked()
	d.wg.Add(1)
	go d.superviseChild()
	return d, nil
}

// Close stops the child and the supervisor.
func (d *Daemon) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	close(d.stop)
	c := d.child
	d.mu.Unlock()
	if c != nil {
		c.Close()
	}
	d.wg.Wait()
	// The child is gone; what it started in a session of its own is not.
	killMarked(d.marker)
	forgetChild(d.cfg.DataDir)
	d.spawner.Close()
	d.hub.close()
}

func (d *Daemon) superviseChild() {
	defer d.wg.Done()
	backoff := d.cfg.RestartMin
	for {
		// A command that is not installed is not a crash: say so (state
		// missing) and look again now and then, without counting restarts,
		// so it is picked up once installed.
		if missing := lookupChild(d.cfg.Command); missing != nil {
			d.mu.Lock()
			if d.closed {
				d.mu.Unlock()
				return
			}
			if d.childSt.State != "missing" {
				d.log.Warn("agent child not installed; agentd runs without it", "looked_for", missing.LookedFor)
			}
			missing.Restarts, missing.Since = d.childSt.Restarts, time.Now()
			if d.childSt.State == "missing" {
				missing.Since = d.childSt.Since
			}
			d.childSt = *missing
			d.mu.Unlock()
			select {
			case <-time.After(d.cfg.RestartMax):
				continue
			case <-d.stop:
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		env := []string{ChildMarkerEnv + "=" + d.marker}
		if d.cfg.CodexHome != "" {
			env = append(env, "CODEX_HOME="+d.cfg.CodexHome)
		}
		recordChild(d.cfg.DataDir, d.marker, 0) // the marker before the fork: a kill mid-start leaves nothing unknown
		c, err := codexrpc.Start(ctx, codexrpc.Options{Command: d.cfg.Command, Env: env,
			OnNotification: d.onNotification, OnRequest: d.onRequest, Spawn: d.spawner.Do})
		cancel()
		if c != nil {
			recordChild(d.cfg.DataDir, d.marker, c.Pid())
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			d.childSt = childStatus{State: "unavailable", Command: d.cfg.Command, Error: err.Error(),
				Restarts: d.childSt.Restarts, Since: time.Now()}
			d.mu.Unlock()
			d.log.Warn("agent child unavailable", "error", err)
		} else {
			d.child = c
			d.loaded = map[string]bool{}
			d.childSt = childStatus{State: "running", Pid: c.Pid(), Command: d.cfg.Command,
				Restarts: d.childSt.Restarts, Since: time.Now()}
			d.mu.Unlock()
			d.publish(Event{Type: "agentd/child_started", Message: "codex app-server is running"})
			backoff = d.cfg.RestartMin
			d.resumeThreads(c)
			select {
			case <-c.Done():
			case <-d.stop:
				return
			}
			d.childExited(c)
		}
		select {
		case <-time.After(backoff):
		case <-d.stop:
			return
		}
		backoff = min(backoff*2, d.cfg.RestartMax)
		d.mu.Lock()
		d.childSt.Restarts++
		d.mu.Unlock()
	}
}

// installHint says how to get the Codex CLI agentd drives by default.
const installHint = "install the pinned Codex CLI: npm install -g @openai/codex@0.169.0 (or `make tools`, which puts it in .tools/codex), then set agentd_command to its path plus app-server if it is not on PATH"

// lookupChild returns a missing status when the child's executable cannot
// be found (PATH lookup, or the path as given), nil when it can.
func lookupChild(cmd []string) *childStatus {
	if len(cmd) == 0 {
		return &childStatus{State: "missing", Command: cmd, Error: "agentd_command is empty", Install: installHint}
	}
	if _, err := exec.LookPath(cmd[0]); err == nil {
		return nil
	} else {
		where := cmd[0]
		if !strings.ContainsRune(cmd[0], '/') {
			where = cmd[0] + " on PATH=" + os.Getenv("PATH")
		}
		return &childStatus{State: "missing", Command: cmd, LookedFor: where, Install: installHint,
			Error: "the agent child command is not installed: " + err.Error()}
	}
}

// resumeThreads resumes every known session's thread in a fresh child, so
// the next turn finds it loaded. A thread Codex cannot resume (it never had
// a turn, so nothing was persisted) is started again on the next turn.
func (d *Daemon) resumeThreads(c *codexrpc.Client) {
	d.mu.Lock()
	var todo []Session
	for _, s := range d.sessions {
		if s.ThreadID != "" {
			todo = append(todo, s.clone())
		}
	}
	d.mu.Unlock()
	for _, s := range todo {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := c.ResumeThread(ctx, s.ThreadID, s.Cwd)
		cancel()
		d.mu.Lock()
		if err == nil {
			d.loaded[s.ThreadID] = true
		}
		d.mu.Unlock()
	}
}

func (d *Daemon) childExited(c *codexrpc.Client) {
	msg := "the codex app-server child exited mid-turn"
	if err := c.Err(); err != nil {
		msg += " (" + err.Error() + ")"
	}
	d.mu.Lock()
	d.child = nil
	d.loaded = map[string]bool{}
	d.childSt = childStatus{State: "unavailable", Command: d.cfg.Command, Error: "child exited; restarting",
		Restarts: d.childSt.Restarts, Since: time.Now()}
	var failed []string
	for _, s := range d.sessions {
		if s.Status == "running" {
			d.finishTurnLocked(s, "failed", msg)
			failed = append(failed, s.SessionID)
		}
	}
	_ = d.saveLocked()
	d.mu.Unlock()
	d.log.Warn("agent child exited", "failed_turns", len(failed))
	d.publish(Event{Type: "agentd/child_exited", Message: msg})
	for _, id := range failed {
		d.publish(Event{Type: "agentd/turn_failed", SessionID: id, Message: msg})
	}
}

// finishTurnLocked ends a session's running turn and wakes its waiters.
func (d *Daemon) finishTurnLocked(s *Session, status, errMsg string) {
	s.Status = "idle"
	s.LastTurnStatus = status
	s.LastTurnError = errMsg
	s.LastTurnFinished = time.Now().UTC()
	s.UpdatedAt = s.LastTurnFinished
	d.m.turns.WithLabelValues(turnStatusLabel(status)).Inc()
	if !s.LastTurnStarted.IsZero() {
		d.m.turnTime.Observe(s.LastTurnFinished.Sub(s.LastTurnStarted).Seconds())
	}
	for _, ch := range d.waiters[s.SessionID] {
		close(ch)
	}
	delete(d.waiters, s.SessionID)
}

func (d *Daemon) saveLocked() error {
	err := d.store.Save(d.sessions)
	if err != nil {
		d.log.Error("saving sessions", "error", err)
	}
	return err
}

func (d *Daemon) onRequest(method string, params json.RawMessage) (any, error) {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		var p struct {
			ThreadID string `json:"threadId"`
			TurnID   string `json:"turnId"`
		}
		_ = json.Unmarshal(params, &p)
		ev := Event{Type: method, TurnID: p.TurnID, Message: "answered " + d.cfg.ApprovalPolicy + " by policy", At: time.Now().UTC()}
		d.mu.Lock()
		if s := d.sessions[d.byThread[p.ThreadID]]; s != nil {
			ev.SessionID = s.SessionID
			s.addEvent(ev)
		}
		d.mu.Unlock()
		d.publish(ev)
		return codexrpc.ApprovalDecision(d.cfg.ApprovalPolicy), nil
	}
	d.publish(Event{Type: method, Message: "server request agentd does not handle"})
	return nil, errors.New("agentd does not handle " + method)
}

// onNotification folds Codex notifications into session state and forwards
// them on the event stream. Unknown methods are kept as events, never fatal.
func (d *Daemon) onNotification(method string, params json.RawMessage) {
	var p struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
		Delta    string `json:"delta"`
		Turn     *struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"turn"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		WillRetry bool `json:"willRetry"`
	}
	_ = json.Unmarshal(params, &p)
	turnID := p.TurnID
	if turnID == "" && p.Turn != nil {
		turnID = p.Turn.ID
	}
	ev := Event{Type: method, TurnID: turnID, At: time.Now().UTC()}
	d.mu.Lock()
	s := d.sessions[d.byThread[p.ThreadID]]
	if s != nil {
		ev.SessionID = s.SessionID
		running := s.Status == "running" && (s.LastTurnID == "" || turnID == "" || s.LastTurnID == turnID)
		switch method {
		case "turn/started":
			if running && s.LastTurnID == "" {
				s.LastTurnID = turnID
			}
		case "item/agentMessage/delta":
			ev.Delta = p.Delta
			if running {
				s.LastTurnOutput += p.Delta
			}
		case "error":
			if p.Error != nil {
				ev.Message = p.Error.Message
				if running && !p.WillRetry {
					s.LastTurnError = p.Error.Message
				}
			}
		case "turn/completed":
			if running {
				status := "completed"
				errMsg := s.LastTurnError
				if p.Turn != nil && p.Turn.Status != "" {
					status = p.Turn.Status
					if p.Turn.Error != nil && p.Turn.Error.Message != "" {
						errMsg = p.Turn.Error.Message
					}
				}
				if status == "completed" {
					errMsg = ""
				}
				ev.Message = status
				d.finishTurnLocked(s, status, errMsg)
			}
		}
		s.addEvent(ev)
		if method == "turn/completed" || method == "turn/started" {
			_ = d.saveLocked()
		}
	}
	d.mu.Unlock()
	d.hub.publish(ev)
}

func (d *Daemon) publish(e Event) {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	d.hub.publish(e)
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// errChild is the error for a turn when no child is running.
func (d *Daemon) errChildLocked() error {
	return api.Unavailable("agent_child_unavailable", "the agent child (%v) is not running: %s",
		d.cfg.Command, d.childSt.Error)
}
