package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/systemstate"
)

// Host is what the hub needs from the supervisor: the one write path (raft),
// reads of the FSM, and the one system-state assembly and mode switch that
// every surface shares.
type Host interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
	Read(fn func(s *raftstore.State))
	// ReadVersioned is Read that also says which version of the state fn
	// saw; StateVersion is the current one (raftstore Node). Pick keeps its
	// credentialed-record index until the version moves (credindex.go).
	ReadVersioned(fn func(s *raftstore.State)) uint64
	StateVersion() uint64
	SystemState() systemstate.State
	SetMode(ctx context.Context, mode, requestedBy, reason string) (systemstate.State, error)
	AutomationConversations() []bridgeproto.AutomationConversation
	// AutomationPage is one page of AutomationConversations: at most limit
	// after the cursor after ("": from the start) and the next page's
	// cursor ("" on the last).
	AutomationPage(limit int, after string) ([]bridgeproto.AutomationConversation, string)
}

// Hub owns every live plugin connection and every request or action waiting
// for a plugin's answer.
type Hub struct {
	cfg      Config
	log      hclog.Logger
	host     Host
	upgrader websocket.Upgrader

	mu      sync.Mutex
	conns   map[string]*Conn    // by clientId: the newest connection wins
	pending map[string]*Pending // by requestId / actionId
	latestA *RelayResult        // latest platform_a relay result (legacy current)
	// finished remembers recently finished ids so late frames for them are
	// dropped quietly (finished.go); late counts those frames.
	finished *finishedIDs
	late     lateFrames
	m        *hubMetrics // metrics.go
	// onConversation handles conversation_link and conversation_message.
	onConversation ConversationHandler
	// unpaired counts upgraded connections whose hello has not arrived; each
	// holds a socket and a goroutine for up to AuthTimeout (less under
	// pressure: hellodeadline.go). waiting holds their hello deadlines.
	unpaired       int
	waiting        map[*websocket.Conn]*waiter
	pressureLogged bool

	activity *activity
	// pairing rate-limits failed hellos and counts refusals (pairing.go).
	pairing *pairingGuard
	// hashKey keys stored code and credential hashes (Config.HashKey).
	hashKey []byte
	// refusalLog summarises refused hellos in the log (refusal_log.go).
	refusalLog *refusalLog
	// creds keeps Pick's credentialed-record index per state version.
	creds credCache
	// summary keeps the read model's record counts (summary.go).
	summary summaryCache

	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the hub's goroutines. closing (under mu) is set by Close
	// before it waits, and every wg.Add happens under mu after checking it:
	// an upgrade that finishes while Close runs must not start a connection
	// Close no longer waits for.
	wg      sync.WaitGroup
	closing bool
}

// New builds a hub; Start runs its background loops.
func New(cfg Config, host Host, log hclog.Logger) *Hub {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		cfg:        cfg,
		log:        log,
		host:       host,
		conns:      map[string]*Conn{},
		pending:    map[string]*Pending{},
		finished:   newFinishedIDs(finishedMemory),
		activity:   newActivity(),
		pairing:    newPairingGuard(cfg.PairingFailures, cfg.CodeGuessesGlobal),
		refusalLog: newRefusalLog(log),
		hashKey:    cfg.HashKey,
		m:          newHubMetrics(),
		ctx:        ctx,
		cancel:     cancel,
	}
	if len(h.hashKey) == 0 {
		h.hashKey = make([]byte, 32)
		_, _ = rand.Read(h.hashKey)
		log.Warn("no pairing hash key configured: pairings last only as long as this process")
	}
	h.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   16 << 10,
		WriteBufferSize:  16 << 10,
		// checkUpgrade has already decided on the Origin with the richer
		// rules and a JSON error; gorilla's own same-origin check would
		// refuse every extension origin.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return h
}

// Start runs the stale sweeper and the activity flusher until Close.
func (h *Hub) Start() {
	// Activity and status transitions are durable every SweepInterval
	// (stale_sweep_count, last_stale_sweep_*); refused pairings are
	// batched into one raft write every RefusalFlush.
	h.every(h.cfg.SweepInterval, func(ctx context.Context) {
		h.flushActivity(ctx)
		h.sweep(ctx)
	})
	h.every(h.cfg.RefusalFlush, h.flushRefusals)
	h.every(RefusalLogInterval, func(context.Context) { h.refusalLog.flush() })
}

// every runs fn each interval until Close, each run bounded by 5 s.
func (h *Hub) every(interval time.Duration, fn func(ctx context.Context)) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
			fn(ctx)
			cancel()
		}
	}()
}

// Close disconnects every plugin, fails every pending request and flushes
// the activity batch. It runs before raft shuts down.
func (h *Hub) Close() error {
	h.cancel()
	h.mu.Lock()
	h.closing = true
	conns := make([]*Conn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "daemon shutting down")
	}
	h.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h.flushActivity(ctx)
	h.flushRefusals(ctx)
	h.refusalLog.flush()
	return nil
}

// Config returns the effective configuration (defaults filled in).
func (h *Hub) Config() Config { return h.cfg }

// ServeWS upgrades an allowed request and runs the connection until it ends.
func (h *Hub) ServeWS(w http.ResponseWriter, r *http.Request) error {
	if err := h.checkUpgrade(r); err != nil {
		h.log.Warn("browser bridge connection refused", "remote", r.RemoteAddr, "reason", api.AsError(err).Code)
		return err
	}
	if h.ctx.Err() != nil {
		return api.Unavailable("shutting_down", "the daemon is shutting down")
	}
	if !h.claimUnpaired() {
		w.Header().Set("Retry-After", "1")
		h.log.Warn("browser bridge connection refused", "remote", r.RemoteAddr, "reason", "too_many_unpaired")
		return api.Unavailable("too_many_unpaired", "%d browser connections are already waiting to pair (browser_max_unpaired); send hello promptly and retry", h.cfg.MaxUnpaired).
			WithDetails(map[string]any{"limit": h.cfg.MaxUnpaired, "retry_after_ms": 1000})
	}
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.releaseUnpaired()
		// Upgrade has written its own HTTP error.
		h.log.Debug("websocket upgrade failed", "error", err)
		return nil
	}
	h.mu.Lock()
	if h.closing {
		h.unpaired--
		h.mu.Unlock()
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "daemon shutting down"), time.Now().Add(time.Second))
		_ = ws.Close()
		return nil
	}
	h.wg.Add(1)
	h.mu.Unlock()
	c := newConn(h, ws, r.RemoteAddr)
	go func() {
		defer h.wg.Done()
		c.run()
	}()
	return nil
}

// Unpaired is how many connections are waiting for their hello.
func (h *Hub) Unpaired() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unpaired
}

// roomFor reports whether clientID may pair now: it replaces its own live
// connection, or the hub is below MaxClients.
func (h *Hub) roomFor(clientID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, known := h.conns[clientID]
	return known || len(h.conns) < h.cfg.MaxClients
}

// register makes c the live connection of its client, replacing an older
// one. It reports false when the hub is full: every live connection holds
// two goroutines and a send queue, so an authenticated plugin opening
// connections under ever new clientIds must not grow them without bound.
func (h *Hub) register(c *Conn) bool {
	h.mu.Lock()
	old := h.conns[c.clientID]
	if old == nil && len(h.conns) >= h.cfg.MaxClients {
		h.mu.Unlock()
		return false
	}
	h.conns[c.clientID] = c
	h.mu.Unlock()
	if old != nil {
		old.close(CloseReplaced, "replaced by a newer connection with the same clientId")
	}
	return true
}

// unregister forgets c (if still current) and fails its pending work.
func (h *Hub) unregister(c *Conn) bool {
	h.mu.Lock()
	current := h.conns[c.clientID] == c
	if current {
		delete(h.conns, c.clientID)
	}
	var failed []*Pending
	for id, p := range h.pending {
		if p.conn == c {
			delete(h.pending, id)
			failed = append(failed, p)
		}
	}
	h.mu.Unlock()
	for _, p := range failed {
		p.fail("client_disconnected", "the browser client disconnected before answering")
	}
	return current
}

// conn returns the live connection of clientID.
func (h *Hub) conn(clientID string) *Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[clientID]
}

// liveConns is a copy of the live connections.
func (h *Hub) liveConns() []*Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Conn, 0, len(h.conns))
	for _, c := range h.conns {
		out = append(out, c)
	}
	return out
}

// Reachable reports whether clientID is paired and connected now.
func (h *Hub) Reachable(clientID string) bool { return h.conn(clientID) != nil }

// Connected is the number of paired plugins.
func (h *Hub) Connected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// BroadcastSnapshot pushes a fresh state_snapshot to every plugin. The
// supervisor calls it after every system mode change (and renewal writes).
func (h *Hub) BroadcastSnapshot() {
	conns := h.liveConns()
	if len(conns) == 0 {
		return
	}
	msg := h.snapshot()
	for _, c := range conns {
		c.send(msg)
	}
}

func (h *Hub) snapshot() bridgeproto.StateSnapshot {
	convs := h.host.AutomationConversations()
	if convs == nil {
		convs = []bridgeproto.AutomationConversation{}
	}
	return bridgeproto.StateSnapshot{
		Type:    bridgeproto.TypeStateSnapshot,
		System:  h.host.SystemState(),
		Browser: bridgeproto.SnapshotBrowser{AutomationConversations: convs},
	}
}

// NewID returns a random id for requests and actions.
func NewID(prefix string) string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
