package bridge

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// kindInject marks a pending conversation_inject waiting for inject_result.
const kindInject = "inject"

// MessageHandler receives every valid conversation_message of a paired
// client. It runs on its own goroutine (it may inject back into the same
// conversation and wait for the plugin), bounded by the hub's lifetime.
type MessageHandler func(ctx context.Context, clientID string, m *bridgeproto.ConversationMessage)

// LinkHandler is told whenever a connection takes a conversation (a
// conversation_link, or a conversation_message naming it).
type LinkHandler func(ctx context.Context, clientID string, l bridgeproto.ConversationLink)

// convLinks remembers which live client holds each conversation: the newest
// connection wins. Its zero value is ready.
type convLinks struct {
	mu      sync.Mutex
	byLocal map[string]bridgeproto.ConversationLink
	owner   map[string]string // local_conversation_id → clientId
	onMsg   MessageHandler
	onLink  LinkHandler
}

// OnConversationMessage sets the ingest hook (nil: messages are only
// linked). Set it before plugins connect.
func (h *Hub) OnConversationMessage(fn MessageHandler) {
	h.convs.mu.Lock()
	h.convs.onMsg = fn
	h.convs.mu.Unlock()
}

// OnConversationLink sets the hook told of every (re)link.
func (h *Hub) OnConversationLink(fn LinkHandler) {
	h.convs.mu.Lock()
	h.convs.onLink = fn
	h.convs.mu.Unlock()
}

// ConversationHolder says which client holds a conversation and its link.
func (h *Hub) ConversationHolder(localID string) (clientID string, link bridgeproto.ConversationLink, ok bool) {
	h.convs.mu.Lock()
	defer h.convs.mu.Unlock()
	clientID, ok = h.convs.owner[localID]
	return clientID, h.convs.byLocal[localID], ok
}

// link records that c holds l now and reports whether that changed.
func (h *Hub) link(c *Conn, l bridgeproto.ConversationLink) (LinkHandler, bool) {
	h.convs.mu.Lock()
	defer h.convs.mu.Unlock()
	if h.convs.owner == nil {
		h.convs.owner = map[string]string{}
		h.convs.byLocal = map[string]bridgeproto.ConversationLink{}
	}
	prev, had := h.convs.byLocal[l.LocalConversationID]
	if l.URL == "" && had {
		l.URL = prev.URL
	}
	if l.Title == "" && had {
		l.Title = prev.Title
	}
	changed := !had || prev != l || h.convs.owner[l.LocalConversationID] != c.clientID
	h.convs.byLocal[l.LocalConversationID] = l
	h.convs.owner[l.LocalConversationID] = c.clientID
	return h.convs.onLink, changed
}

func (h *Hub) onConversationLink(c *Conn, v *bridgeproto.ConversationLink) {
	if fn, changed := h.link(c, *v); fn != nil && changed {
		fn(h.ctx, c.clientID, *v)
	}
}

func (h *Hub) onConversationMessage(c *Conn, v *bridgeproto.ConversationMessage) {
	fn, changed := h.link(c, bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, Platform: v.Platform,
		LocalConversationID: v.LocalConversationID, RemoteConversationID: v.RemoteConversationID})
	if fn != nil && changed {
		fn(h.ctx, c.clientID, bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, Platform: v.Platform,
			LocalConversationID: v.LocalConversationID, RemoteConversationID: v.RemoteConversationID})
	}
	h.convs.mu.Lock()
	onMsg := h.convs.onMsg
	h.convs.mu.Unlock()
	if onMsg == nil {
		return
	}
	// The handler may inject and wait for inject_result, which this
	// connection's reader delivers: it must not run on the reader.
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	msg := *v
	go func() {
		defer h.wg.Done()
		onMsg(h.ctx, c.clientID, &msg)
	}()
}

// Inject sends conversation_inject to the client holding the conversation
// and waits for its inject_result, at most ActionTimeout. The injection's
// inject_id is generated when m.InjectID is empty.
func (h *Hub) Inject(ctx context.Context, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
	m.Type = bridgeproto.TypeConversationInject
	if m.InjectID == "" {
		m.InjectID = NewID("inj_")
	}
	if err := m.Validate(); err != nil {
		return nil, api.Unprocessable("invalid_inject", "%s", err.Error())
	}
	clientID, _, ok := h.ConversationHolder(m.LocalConversationID)
	if !ok {
		return nil, api.Unavailable("conversation_not_linked", "no browser client holds conversation %s", m.LocalConversationID)
	}
	c := h.conn(clientID)
	if c == nil {
		return nil, api.Unavailable("client_gone", "the browser client holding conversation %s is not connected", m.LocalConversationID)
	}
	p := newPending(m.InjectID, kindInject, m.Platform, c, 1)
	if !h.track(p) {
		return nil, api.Conflict("duplicate_inject_id", "inject id %s is already in flight", m.InjectID)
	}
	defer h.Finish(p)
	if !c.send(m) {
		return nil, api.Unavailable("client_gone", "the browser client disconnected before the injection could be sent")
	}
	timer := time.NewTimer(h.cfg.ActionTimeout)
	defer timer.Stop()
	select {
	case r := <-p.C:
		return r.(*bridgeproto.InjectResult), nil
	case <-p.Done():
		_, msg := p.Err()
		return nil, api.Unavailable("client_gone", "%s", msg)
	case <-timer.C:
		return nil, api.NewError(http.StatusGatewayTimeout, "inject_timeout",
			"the browser client did not answer the injection within %d ms", h.cfg.ActionTimeout.Milliseconds())
	case <-ctx.Done():
		return nil, api.NewError(http.StatusGatewayTimeout, "inject_cancelled", "the caller went away before the plugin answered")
	}
}
