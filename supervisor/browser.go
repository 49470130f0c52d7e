package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/keyderive"
	"github.com/svcd/svcd/shared/keyrange"
	"github.com/svcd/svcd/shared/systemstate"
	"github.com/svcd/svcd/supervisor/bridge"
	"github.com/svcd/svcd/supervisor/relayadmit"
	"github.com/svcd/svcd/supervisor/relayhttp"
	"github.com/svcd/svcd/supervisor/renewal"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/relay"
)

// browserSide is the supervisor's browser area: the WebSocket hub, the
// relay engine (in-process or the relay worker) and the flusher that
// persists relay state through raft.
type browserSide struct {
	hub     *bridge.Hub
	relay   relay.Relay
	admit   *relayadmit.Admitter // performance (issue 15): leases and batched outcomes
	flusher *relay.Flusher
	// requests is the relay's HTTP side (POST /v1/browser/request).
	requests *relayhttp.Relay
	// records keeps the read model's entries' JSON (bridge/readmodeljson.go).
	records *bridge.ReadModelJSON
	cancel  context.CancelFunc
	done    chan struct{}
}

// startBrowser builds the hub and the relay and registers their shutdown.
func (s *Server) startBrowser(ctx context.Context) error {
	peers, err := s.cfg.BrowserPeerNets()
	if err != nil {
		return err
	}
	pairing := s.cfg.BrowserPairingToken
	if pairing == "" {
		pairing = s.token
	}
	hub := bridge.New(bridge.Config{
		PairingToken:      pairing,
		CodesOnly:         !s.cfg.TokenPairing(),
		HashKey:           keyderive.Derive(s.clusterKey, keyderive.PairingHash),
		TokenScopes:       s.tokenPairingScopes(),
		AllowedOrigins:    s.cfg.BrowserOrigins(),
		AllowedPeers:      peers,
		KeepaliveInterval: ms(s.cfg.BrowserKeepaliveMs),
		MaxMessageBytes:   s.cfg.BrowserMaxMessageBytes,
		MaxUnpaired:       int(s.cfg.BrowserMaxUnpaired),
		ActionTimeout:     ms(s.cfg.BrowserActionTimeoutMs),
		RequestTimeout:    ms(s.cfg.BrowserRequestTimeoutMs),
		StaleAfter:        ms(s.cfg.BrowserStaleAfterMs),
		LostAfter:         ms(s.cfg.BrowserLostAfterMs),
		SweepInterval:     ms(s.cfg.BrowserSweepIntervalMs),
	}, bridgeHost{s}, s.log.Named("bridge"))

	policy := s.relayPolicy()
	rl := s.relayBackend(policy)
	b := &browserSide{hub: hub, relay: rl, records: bridge.NewReadModelJSON(), done: make(chan struct{})}
	b.flusher = relay.NewFlusher(rl, ms(policy.FlushIntervalMs), s.saveRelayStates, func(err error) {
		s.log.Debug("relay state flush failed", "error", err)
	})
	// Restore persisted windows, backoff and breakers before the first request.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := rl.Restore(rctx, s.persistedRelayStates()); err != nil {
		s.log.Warn("relay state not restored into the engine yet", "error", err)
	}
	cancel()

	b.admit = s.relayAdmitter(rl, b.flusher)
	b.requests = &relayhttp.Relay{Hub: hub, Admit: b.admit, Flusher: b.flusher, Log: s.log, Decode: s.decode}

	fctx, fcancel := context.WithCancel(context.Background())
	b.cancel = fcancel
	go func() {
		defer close(b.done)
		admitDone := make(chan struct{})
		go func() { defer close(admitDone); b.admit.Run(fctx) }()
		b.flusher.Run(fctx)
		<-admitDone
	}()
	hub.Start()
	s.browser = b
	s.modeHooks = append(s.modeHooks, hub.BroadcastSnapshot)
	s.onClose(func() error {
		err := hub.Close()
		b.cancel()
		<-b.done
		return err
	})
	return nil
}

// relayPolicy is the configured relay policy with defaults filled in.
func (s *Server) relayPolicy() relay.Policy {
	return relay.Policy{
		WindowMs: s.cfg.RelayWindowMs, WindowMax: int(s.cfg.RelayWindowMax), MaxInFlight: int(s.cfg.RelayMaxInFlight),
		MaxWaitMs: s.cfg.RelayMaxWaitMs, BackoffBaseMs: s.cfg.RelayBackoffBaseMs, BackoffMaxMs: s.cfg.RelayBackoffMaxMs,
		BreakerFailures: int(s.cfg.RelayBreakerFailures), BreakerOpenMs: s.cfg.RelayBreakerOpenMs, FlushIntervalMs: s.cfg.RelayFlushIntervalMs,
	}.WithDefaults()
}

// relayBackend is the engine the supervisor talks to: the relay worker when
// the process runs workers, otherwise (tests, relay_in_process) an engine in
// this process.
func (s *Server) relayBackend(p relay.Policy) relayadmit.Backend {
	if s.workers == nil || s.cfg.RelayInProcess {
		return relay.NewEngine(p)
	}
	return &managedRelay{s: s}
}

// relaySpecs is the relay worker's entry for the worker manager, unless the
// engine runs in-process.
func (s *Server) relaySpecs() []workermgr.Spec {
	if s.cfg.RelayInProcess {
		return nil
	}
	enc, err := relay.EncodePolicy(s.relayPolicy())
	if err != nil {
		s.log.Error("relay policy not encodable; relay worker not started", "error", err)
		return nil
	}
	return []workermgr.Spec{{
		Name:   relay.Name,
		Plugin: &relay.Plugin{},
		Env:    []string{relay.PolicyEnv + "=" + enc, "SVCD_WORKER_LOG_LEVEL=" + s.cfg.LogLevel},
		MaxMsg: relay.MaxMessage(),
	}}
}

// managedRelay is relay.Relay over the relay worker. Each call leases the
// current instance; a new instance (first start or restart after a crash)
// gets the persisted state restored before its first call, so windows,
// backoff and breakers survive a worker crash as they survive a restart.
type managedRelay struct {
	s   *Server
	mu  sync.Mutex
	pid int // the instance that has been restored
}

// relayCallTimeout bounds a call while the worker is down or restarting:
// the caller then gets a 503 rather than a hang.
const relayCallTimeout = 3 * time.Second

func (m *managedRelay) call(ctx context.Context, fn func(relay.Relay) error) error {
	ctx, cancel := context.WithTimeout(ctx, relayCallTimeout)
	defer cancel()
	return workermgr.Call(ctx, m.s.workers, relay.Name, func(r relay.Relay, l *workermgr.Lease) error {
		m.mu.Lock()
		if m.pid != l.Pid() {
			if err := r.Restore(ctx, m.s.persistedRelayStates()); err != nil {
				m.mu.Unlock()
				return fmt.Errorf("restore relay state into worker pid %d: %w", l.Pid(), err)
			}
			m.pid = l.Pid()
		}
		m.mu.Unlock()
		return fn(r)
	})
}

func (m *managedRelay) Admit(ctx context.Context, target string) (d relay.Decision, err error) {
	err = m.call(ctx, func(r relay.Relay) error { d, err = r.Admit(ctx, target); return err })
	return d, err
}

func (m *managedRelay) Report(ctx context.Context, o relay.Outcome) (changed bool, err error) {
	err = m.call(ctx, func(r relay.Relay) error { changed, err = r.Report(ctx, o); return err })
	return changed, err
}

// Lease implements relay.Leaser over the worker (see relayadmit).
func (m *managedRelay) Lease(ctx context.Context, r relay.LeaseRequest) (reply relay.LeaseReply, err error) {
	err = m.call(ctx, func(rl relay.Relay) error {
		l, ok := rl.(relay.Leaser)
		if !ok {
			return fmt.Errorf("the relay worker's client cannot lease")
		}
		reply, err = l.Lease(ctx, r)
		return err
	})
	return reply, err
}

func (m *managedRelay) Status(ctx context.Context, keys keyrange.Range) (st relay.Status, err error) {
	err = m.call(ctx, func(r relay.Relay) error { st, err = r.Status(ctx, keys); return err })
	return st, err
}

func (m *managedRelay) TakeDirty(ctx context.Context) (states []relay.TargetState, err error) {
	err = m.call(ctx, func(r relay.Relay) error { states, err = r.TakeDirty(ctx); return err })
	return states, err
}

// Restore is a no-op here: every new instance is restored from the FSM on
// its first call, which is the only state a worker may start from.
func (m *managedRelay) Restore(ctx context.Context, _ []relay.TargetState) error { return nil }

func (s *Server) persistedRelayStates() []relay.TargetState {
	var out []relay.TargetState
	s.node.Read(func(st *raftstore.State) {
		for _, t := range st.Relay.Targets {
			out = append(out, fromStoreTarget(*t))
		}
	})
	return out
}

func (s *Server) saveRelayStates(ctx context.Context, states []relay.TargetState) error {
	p := raftstore.RelaySave{Targets: make([]raftstore.RelayTarget, len(states))}
	for i, t := range states {
		p.Targets[i] = toStoreTarget(t)
	}
	_, err := s.apply(ctx, raftstore.CmdRelaySave, p)
	return err
}

func msTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func timeMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func toStoreTarget(t relay.TargetState) raftstore.RelayTarget {
	return raftstore.RelayTarget{
		Target: t.Target, WindowStart: msTime(t.WindowStartMs), WindowCount: t.WindowCount,
		BackoffUntil: msTime(t.BackoffUntilMs), BackoffLevel: t.BackoffLevel,
		Breaker: t.Breaker, BreakerFailures: t.BreakerFailures, BreakerOpenedAt: msTime(t.BreakerOpenedMs),
		LastStatus: t.LastStatus, LastOutcomeAt: msTime(t.LastOutcomeMs), Admitted: t.Admitted, Refused: t.Refused,
	}
}

func fromStoreTarget(t raftstore.RelayTarget) relay.TargetState {
	return relay.TargetState{
		Target: t.Target, WindowStartMs: timeMs(t.WindowStart), WindowCount: t.WindowCount,
		BackoffUntilMs: timeMs(t.BackoffUntil), BackoffLevel: t.BackoffLevel,
		Breaker: t.Breaker, BreakerFailures: t.BreakerFailures, BreakerOpenedMs: timeMs(t.BreakerOpenedAt),
		LastStatus: t.LastStatus, LastOutcomeMs: timeMs(t.LastOutcomeAt), Admitted: t.Admitted, Refused: t.Refused,
	}
}

// bridgeHost lends the hub the supervisor's one write path, its FSM reads,
// and the shared system-state assembly and mode switch.
type bridgeHost struct{ s *Server }

func (h bridgeHost) Apply(ctx context.Context, typ string, payload any) (any, error) {
	return h.s.apply(ctx, typ, payload)
}

func (h bridgeHost) Read(fn func(*raftstore.State)) { h.s.node.Read(fn) }

func (h bridgeHost) ReadVersioned(fn func(*raftstore.State)) uint64 {
	return h.s.node.ReadVersioned(fn)
}

func (h bridgeHost) StateVersion() uint64 { return h.s.node.StateVersion() }

func (h bridgeHost) SystemState() systemstate.State { return h.s.SystemState() }

func (h bridgeHost) SetMode(ctx context.Context, mode, by, reason string) (systemstate.State, error) {
	if _, err := h.s.SetMode(ctx, raftstore.SetSystemMode{Mode: mode, RequestedBy: by, Reason: reason}); err != nil {
		return systemstate.State{}, err
	}
	return h.s.SystemState(), nil
}

// AutomationConversations is every linked conversation's automation view,
// for state_snapshot.browser.automation_conversations (plugin overlays).
func (h bridgeHost) AutomationConversations() []bridgeproto.AutomationConversation {
	if h.s.convs == nil {
		return []bridgeproto.AutomationConversation{}
	}
	return h.s.convs.Automation()
}

// AutomationPage is one page of AutomationConversations (GET /v1/browser);
// after is a renewal cursor the route has checked.
func (h bridgeHost) AutomationPage(limit int, after string) ([]bridgeproto.AutomationConversation, string) {
	if h.s.convs == nil {
		return []bridgeproto.AutomationConversation{}, ""
	}
	var from *renewal.Cursor
	if c, ok := renewal.ParseCursor(after); ok {
		from = &c
	}
	page, next := h.s.convs.AutomationPage(limit, from)
	if next == nil {
		return page, ""
	}
	return page, next.String()
}
