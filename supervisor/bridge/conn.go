package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Close codes the bridge uses beyond the RFC 6455 ones.
const (
	CloseUnauthorized = 4401 // pairing refused, or the client's credential was revoked
	CloseReplaced     = 4409 // a newer connection took the clientId
	CloseReadTimeout  = 4408 // no frame (data or pong) within the read deadline
)

// Conn is one plugin connection. Data frames are written under wmu: by the
// writer goroutine, which drains the queue send fills (send never blocks: a
// client too slow to drain its queue is dropped instead of growing the
// daemon's memory), or by sendNow on the caller's goroutine when nothing is
// queued and nobody is writing (issue 15: the hop to the writer goroutine
// was on every relayed request's path).
type Conn struct {
	hub    *Hub
	ws     *websocket.Conn
	remote string

	clientID    string
	browser     string
	platforms   []string // declared in the hello (validated: platform_a/b/c only)
	auth        string   // how the hello authenticated: token or credential
	batched     bool     // the hello announced stream_events (bridgeproto.CapStreamEvents): hello_ok took it
	connectedAt time.Time
	lastSeen    atomic.Int64 // unix nanos of the last inbound frame

	out       chan []byte
	queued    atomic.Int64 // frames in out not yet written; sendNow writes only at 0
	wmu       sync.Mutex   // held around every data-frame write
	done      chan struct{}
	closeOnce sync.Once
	closeCode int
	closeText string

	bad int // reader goroutine only: recent invalid messages
}

func newConn(h *Hub, ws *websocket.Conn, remote string) *Conn {
	return &Conn{hub: h, ws: ws, remote: remote, out: make(chan []byte, h.cfg.SendQueue), done: make(chan struct{})}
}

// ClientID is the plugin's clientId.
func (c *Conn) ClientID() string { return c.clientID }

// LastSeen is when the last frame arrived.
func (c *Conn) LastSeen() time.Time { return time.Unix(0, c.lastSeen.Load()) }

func (c *Conn) run() {
	ws := c.ws
	ws.SetReadLimit(c.hub.cfg.MaxMessageBytes)
	c.hub.awaitHello(ws)
	outcome, paired := c.pair()
	c.hub.helloDecided(ws)
	c.hub.releaseUnpaired()
	c.hub.m.pairings.WithLabelValues(outcome).Inc()
	if !paired {
		_ = ws.Close()
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	c.close(websocket.CloseNormalClosure, "")
	<-writerDone
	_ = ws.Close()
	c.hub.m.closed(c.closeCode)

	if c.hub.unregister(c) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.hub.host.Apply(ctx, raftstore.CmdBrowserClient, raftstore.BrowserClientEvent{ClientID: c.clientID, Event: "disconnect"}); err != nil {
			c.hub.log.Warn("could not record browser client disconnect", "client_id", c.clientID, "error", err)
		}
	}
	c.hub.log.Info("browser client disconnected", "client_id", c.clientID, "code", c.closeCode, "reason", c.closeText)
}

// pair reads the first message, which must be a hello with the pairing
// token. Before it, the plugin receives nothing but a close frame.
// It also says which pairing outcome to count (metrics.go).
func (c *Conn) pair() (string, bool) {
	refuse := func(outcome string, code int, text string) (string, bool) {
		deadline := time.Now().Add(time.Second)
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), deadline)
		c.hub.refusalLog.note(remoteIP(c.remote), text) // one line per source per interval
		return outcome, false
	}
	// refuseWith says why in an error frame first (the popup shows it),
	// then closes with 4401. The reason never quotes what the plugin sent.
	refuseWith := func(r *refusal) (string, bool) {
		b, _ := json.Marshal(bridgeproto.Error{Type: bridgeproto.TypeError, Code: r.code, Message: r.message, RefType: bridgeproto.TypeHello})
		_ = c.ws.SetWriteDeadline(time.Now().Add(time.Second))
		_ = c.ws.WriteMessage(websocket.TextMessage, b)
		return refuse(r.code, CloseUnauthorized, r.code) // a bridgeproto error code: a bounded label
	}
	typ, data, err := c.ws.ReadMessage()
	if err != nil {
		c.hub.log.Debug("browser client left before pairing", "remote", c.remote, "error", err)
		return "left", false
	}
	if typ != websocket.TextMessage {
		c.hub.pairing.refused("", remoteIP(c.remote), &refusal{"invalid_hello", "first message must be a hello text frame"}, time.Now())
		return refuse("bad_hello", CloseUnauthorized, "first message must be a hello text frame")
	}
	m, err := bridgeproto.Parse(data)
	if err != nil {
		c.hub.pairing.refused("", remoteIP(c.remote), &refusal{"invalid_hello", "first message must be a valid hello"}, time.Now())
		return refuse("bad_hello", CloseUnauthorized, "first message must be a valid hello")
	}
	hello, ok := m.(*bridgeproto.Hello)
	if !ok {
		c.hub.pairing.refused("", remoteIP(c.remote), &refusal{"invalid_hello", "first message must be hello"}, time.Now())
		return refuse("bad_hello", CloseUnauthorized, "first message must be hello")
	}
	actx, acancel := context.WithTimeout(c.hub.ctx, 5*time.Second)
	auth, ref := c.hub.authenticate(actx, c.remote, hello)
	acancel()
	if ref != nil {
		return refuseWith(ref)
	}
	c.auth = auth.kind
	c.clientID, c.browser, c.platforms = hello.ClientID, hello.Browser, hello.Platforms
	c.batched = hello.Has(bridgeproto.CapStreamEvents)
	const full = "too many browser clients connected; try again later"
	if !c.hub.roomFor(c.clientID) {
		return refuse("full", websocket.CloseTryAgainLater, full)
	}
	c.connectedAt = time.Now().UTC()
	c.lastSeen.Store(c.connectedAt.UnixNano())
	_ = c.ws.SetReadDeadline(time.Now().Add(c.hub.cfg.ReadTimeout))
	c.ws.SetPongHandler(func(string) error {
		c.lastSeen.Store(time.Now().UnixNano())
		return c.ws.SetReadDeadline(time.Now().Add(c.hub.cfg.ReadTimeout))
	})

	ctx, cancel := context.WithTimeout(c.hub.ctx, 5*time.Second)
	defer cancel()
	if _, err := c.hub.host.Apply(ctx, raftstore.CmdBrowserClient, raftstore.BrowserClientEvent{
		ClientID: hello.ClientID, Browser: hello.Browser, ExtensionVersion: hello.ExtensionVersion, Event: "connect", ShellRuntime: hello.ShellRuntime,
	}); err != nil {
		return refuse("record_failed", websocket.CloseTryAgainLater, "daemon cannot record the client right now")
	}
	if !c.hub.register(c) {
		// Another client took the last slot since roomFor: undo the
		// connect this client was already recorded with.
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_, _ = c.hub.host.Apply(dctx, raftstore.CmdBrowserClient, raftstore.BrowserClientEvent{ClientID: c.clientID, Event: "disconnect"})
		return refuse("full", websocket.CloseTryAgainLater, full)
	}
	var caps []string
	if c.batched {
		caps = []string{bridgeproto.CapStreamEvents}
	}
	c.send(bridgeproto.HelloOK{
		Type: bridgeproto.TypeHelloOK, ClientID: c.clientID, ProtocolVer: bridgeproto.ProtocolVersion,
		KeepaliveMs: c.hub.cfg.KeepaliveInterval.Milliseconds(), MaxMessageSize: c.hub.cfg.MaxMessageBytes,
		Credential: auth.credential, Scopes: auth.scopes, Capabilities: caps,
	})
	c.send(c.hub.snapshot())
	c.hub.log.Info("browser client paired", "client_id", c.clientID, "browser", c.browser, "remote", c.remote, "auth", c.auth, "new_credential", auth.credential != "")
	return "paired", true
}

func (c *Conn) readLoop() {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, websocket.ErrReadLimit):
				c.close(websocket.CloseMessageTooBig, "message larger than the cap")
			case errors.As(err, &ne) && ne.Timeout():
				// Say why, so a plugin can tell a dead link from a shutdown.
				c.close(CloseReadTimeout, "no frame within the read deadline")
			}
			return
		}
		now := time.Now()
		c.lastSeen.Store(now.UnixNano())
		_ = c.ws.SetReadDeadline(now.Add(c.hub.cfg.ReadTimeout))
		if typ != websocket.TextMessage {
			if c.refused(&bridgeproto.ParseError{Code: "binary_frame", Message: "messages are JSON text frames"}) {
				return
			}
			continue
		}
		m, err := bridgeproto.Parse(data)
		if err != nil {
			var pe *bridgeproto.ParseError
			if !errors.As(err, &pe) {
				pe = &bridgeproto.ParseError{Code: "invalid_message", Message: "message refused"}
			}
			if c.refused(pe) {
				return
			}
			continue
		}
		if _, ok := m.(*bridgeproto.StreamEvents); ok && !c.batched {
			// Only a client whose hello announced it (and so saw it in its
			// hello_ok) may batch: anyone else gets what an older daemon
			// would answer, as an invalid message.
			if c.refused(&bridgeproto.ParseError{Code: "capability_not_negotiated", Field: "type",
				Message: "stream_events needs the stream_events capability in the hello", RefType: bridgeproto.TypeStreamEvents}) {
				return
			}
			continue
		}
		if c.bad > 0 {
			c.bad--
		}
		c.hub.m.frame("in", m.MsgType(), len(data))
		c.hub.activity.touchClient(c.clientID, now, m.MsgType())
		c.hub.dispatch(c, m)
		select {
		case <-c.done:
			return
		default:
		}
	}
}

// refused answers an invalid message with an error frame; a flood of them
// closes the connection. It reports whether the connection is closing.
func (c *Conn) refused(pe *bridgeproto.ParseError) bool {
	c.bad++
	c.hub.m.refused.WithLabelValues(pe.Code).Inc()
	c.hub.log.Debug("browser message refused", "client_id", c.clientID, "code", pe.Code, "ref_type", pe.RefType)
	if c.bad > c.hub.cfg.MaxBadMessages {
		c.close(websocket.ClosePolicyViolation, "too many invalid messages")
		return true
	}
	c.sendError(pe.Code, pe.Message, pe.RefType, pe.RefID)
	return false
}

func (c *Conn) sendError(code, msg, refType, refID string) {
	c.send(bridgeproto.Error{Type: bridgeproto.TypeError, Code: code, Message: msg, RefType: refType, RefID: refID})
}

func (c *Conn) writeLoop() {
	tick := time.NewTicker(c.hub.cfg.KeepaliveInterval)
	defer tick.Stop()
	write := func(b []byte) bool {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.writeFrame(b)
	}
	for {
		select {
		case b := <-c.out:
			ok := write(b)
			c.queued.Add(-1)
			if !ok {
				c.close(websocket.CloseAbnormalClosure, "write failed")
				return
			}
		case <-tick.C:
			// Both: a ping for the TCP path and a data frame, because
			// control frames do not keep an MV3 service worker awake.
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second)) != nil {
				c.close(websocket.CloseAbnormalClosure, "ping failed")
				return
			}
			ka, _ := json.Marshal(bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive, TS: time.Now().UnixMilli()})
			c.hub.m.frame("out", bridgeproto.TypeKeepalive, len(ka))
			if !write(ka) {
				c.close(websocket.CloseAbnormalClosure, "write failed")
				return
			}
		case <-c.done:
			code, text := c.closeCode, c.closeText
			if code != websocket.CloseAbnormalClosure {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
			}
			// Unblock the reader if the peer does not answer the close.
			_ = c.ws.SetReadDeadline(time.Now().Add(time.Second))
			return
		}
	}
}

// writeFrame writes one data frame; call with wmu held.
func (c *Conn) writeFrame(b []byte) bool {
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b) == nil
}

// sendNow writes v on the caller's goroutine when no frame is queued and
// the writer is not writing, else queues it like send. Frames one goroutine
// sends keep their order: while any is queued, later ones queue behind it.
// The write itself waits only when the socket's send buffer is full, that
// is for a client that stopped reading; callers that must never wait (the
// reader) use send.
func (c *Conn) sendNow(v any) bool {
	b, ok := c.encode(v)
	if !ok {
		return false
	}
	if c.queued.Load() == 0 && c.wmu.TryLock() {
		if c.queued.Load() == 0 {
			ok := c.writeFrame(b)
			c.wmu.Unlock()
			if !ok {
				c.close(websocket.CloseAbnormalClosure, "write failed")
			}
			return ok
		}
		c.wmu.Unlock()
	}
	return c.enqueue(b)
}

// send queues v for the writer. A full queue drops the client.
func (c *Conn) send(v any) bool {
	b, ok := c.encode(v)
	return ok && c.enqueue(b)
}

// encode marshals v, or reports false when it cannot or c is closing.
func (c *Conn) encode(v any) ([]byte, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		c.hub.log.Error("encode bridge message", "error", err)
		return nil, false
	}
	select {
	case <-c.done:
		return nil, false
	default:
	}
	c.hub.m.frame("out", typeOf(v), len(b))
	return b, true
}

func (c *Conn) enqueue(b []byte) bool {
	c.queued.Add(1)
	select {
	case c.out <- b:
		return true
	default:
		c.queued.Add(-1)
		c.hub.log.Warn("browser client too slow; dropping it", "client_id", c.clientID, "queue", cap(c.out))
		c.close(websocket.CloseTryAgainLater, "slow client: send queue full")
		return false
	}
}

// close asks the writer to send a close frame and stop. First call wins.
func (c *Conn) close(code int, text string) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText = code, text
		close(c.done)
	})
}

// Done is closed when the connection is closing.
func (c *Conn) Done() <-chan struct{} { return c.done }
