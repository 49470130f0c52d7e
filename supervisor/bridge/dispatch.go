package bridge

import (
	"context"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// dispatch acts on one valid inbound message from a paired client. It runs
// on the connection's reader goroutine, so it must not wait on the client.
func (h *Hub) dispatch(c *Conn, m bridgeproto.Message) {
	switch v := m.(type) {
	case *bridgeproto.Keepalive:
		// Activity was recorded by the reader.
	case *bridgeproto.Hello:
		c.sendError("already_paired", "hello is only valid as the first message", bridgeproto.TypeHello, "")
	case *bridgeproto.Credentials:
		h.onCredentials(c, v)
	case *bridgeproto.APIEndpoints:
		h.persist(c, raftstore.CmdBrowserEndpoints, raftstore.BrowserEndpoints{
			RecordRef: c.recordRef(v.Platform, v.Account, v.Host), Endpoints: toStoreEndpoints(v.Endpoints),
		}, v.MsgType())
	case *bridgeproto.ShellRuntimeUpdate:
		h.persist(c, raftstore.CmdBrowserShellRuntime, raftstore.BrowserShellRuntime{ClientID: c.clientID, ShellRuntime: v.ShellRuntime}, v.MsgType())
	case *bridgeproto.ActionRequest:
		h.onActionRequest(c, v)
	case *bridgeproto.APIResponse:
		h.route(c, v.RequestID, kindRequest, v)
	case *bridgeproto.StreamOpen:
		h.route(c, v.RequestID, kindRequest, v)
	case *bridgeproto.StreamEvent:
		h.route(c, v.RequestID, kindRequest, v)
	case *bridgeproto.StreamEvents:
		// One frame, the same as its events one after the other; the first
		// one not taken (a late stream, a seq that does not increase) ends it.
		for _, ev := range v.Split() {
			if !h.route(c, v.RequestID, kindRequest, ev) {
				break
			}
		}
	case *bridgeproto.StreamEnd:
		h.route(c, v.RequestID, kindRequest, v)
	case *bridgeproto.StreamError:
		h.route(c, v.RequestID, kindRequest, v)
	case *bridgeproto.ActionResult:
		h.route(c, v.ActionID, kindAction, v)
	case *bridgeproto.InjectResult:
		h.route(c, v.InjectID, kindInject, v)
	case *bridgeproto.ConversationLink, *bridgeproto.ConversationMessage, *bridgeproto.ConversationLoop:
		h.dispatchConversation(c, v)
	}
}

// onCredentials reduces a captured login to metadata and drops the values
// before anything is proposed, logged or answered.
func (h *Hub) onCredentials(c *Conn, v *bridgeproto.Credentials) {
	meta := v.Metadata()
	v.Scrub()
	h.persist(c, raftstore.CmdBrowserCredentials, raftstore.BrowserCredentials{
		RecordRef:   c.recordRef(v.Platform, v.Account, v.Host),
		Fingerprint: meta.Fingerprint, HeaderNames: meta.HeaderNames, HeaderCount: meta.HeaderCount, CookieCount: meta.CookieCount,
	}, v.MsgType())
	h.log.Info("browser credentials captured", "client_id", c.clientID, "platform", v.Platform, "header_count", meta.HeaderCount, "cookie_count", meta.CookieCount)
}

// recordRef names the record of this connection's client for a platform page.
func (c *Conn) recordRef(platform, account, host string) raftstore.RecordRef {
	return raftstore.RecordRef{ClientID: c.clientID, Browser: c.browser, Platform: platform, Account: account, Host: host}
}

func (h *Hub) persist(c *Conn, typ string, payload any, ref string) {
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	if _, err := h.host.Apply(ctx, typ, payload); err != nil {
		h.log.Warn("could not persist browser message", "client_id", c.clientID, "type", ref, "error", err)
		c.sendError("not_persisted", "the daemon could not store this message; send it again later", ref, "")
	}
}

// onActionRequest switches the system mode through the supervisor's one
// SetMode path; the state_snapshot that follows every mode change reaches
// every plugin, this one included.
func (h *Hub) onActionRequest(c *Conn, v *bridgeproto.ActionRequest) {
	mode := map[string]string{bridgeproto.SystemPause: raftstore.ModePaused, bridgeproto.SystemResume: raftstore.ModeRunning, bridgeproto.SystemDrain: raftstore.ModeDraining}[v.Action]
	res := bridgeproto.ActionRequestResult{Type: bridgeproto.TypeActionRequestResult, RequestID: v.RequestID, Action: v.Action}
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	st, err := h.host.SetMode(ctx, mode, "browser:"+c.clientID, v.Reason)
	if err != nil {
		res.Error = &bridgeproto.ErrorBody{Code: "mode_not_set", Message: err.Error()}
	} else {
		res.OK, res.System = true, &st
	}
	c.send(res)
}

// route hands an answer to the request or action waiting for it. Only the
// client the work was sent to may answer it. It reports whether m reached
// the waiting handler.
func (h *Hub) route(c *Conn, id, kind string, m bridgeproto.Message) bool {
	p := h.lookup(id)
	if p == nil && h.recentlyFinished(id, c) {
		// Answered, cancelled or timed out a moment ago: the plugin could not
		// know before it sent this frame. Dropped quietly, counted.
		h.late.n.Add(1)
		return false
	}
	if p == nil || p.conn != c || p.Kind != kind {
		c.sendError("unknown_request", "no pending "+kind+" with this id: the daemon never sent it to this client, or finished it long ago", m.MsgType(), id)
		return false
	}
	if p.ended() {
		// Cancelled, timed out or overflowed but not yet forgotten: the same
		// quiet drop.
		h.late.n.Add(1)
		return false
	}
	if ev, ok := m.(*bridgeproto.StreamEvent); ok {
		p.mu.Lock()
		bad := ev.Seq != 0 && ev.Seq <= p.lastSeq
		if !bad && ev.Seq != 0 {
			p.lastSeq = ev.Seq
		}
		p.mu.Unlock()
		if bad {
			c.sendError("seq_not_increasing", "stream_event seq must increase", m.MsgType(), id)
			return false
		}
	}
	if !p.route(m, c.lastSeen.Load()) {
		if p.ended() {
			return false
		}
		h.log.Warn("relay consumer too slow; cancelling the stream", "relay_request_id", id, "client_id", c.clientID)
		p.fail("consumer_overflow", "the HTTP caller did not keep up with the stream")
		c.send(bridgeproto.RequestCancel{Type: bridgeproto.TypeRequestCancel, RequestID: id, Platform: p.Platform, Reason: "consumer_overflow"})
		return false
	}
	return true
}

func toStoreEndpoints(in []bridgeproto.Endpoint) []raftstore.BrowserEndpoint {
	out := make([]raftstore.BrowserEndpoint, len(in))
	for i, e := range in {
		out[i] = raftstore.BrowserEndpoint{Method: e.Method, Path: e.Path, Kind: e.Kind, Streaming: e.Streaming}
	}
	return out
}
