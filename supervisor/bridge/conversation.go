package bridge

import (
	"context"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

const kindInject = "inject"

// ConversationHandler receives the conversation messages a paired plugin
// sends (conversation_link, conversation_message); clientID is the sending
// connection's. It runs on the connection's reader goroutine: it must hand
// long work (running instructions) to a goroutine of its own.
type ConversationHandler func(clientID string, m bridgeproto.Message)

// OnConversation sets the handler (the supervisor's renewal and ingest
// wiring). Set it before the hub serves connections.
func (h *Hub) OnConversation(fn ConversationHandler) { h.onConversation = fn }

func (h *Hub) dispatchConversation(c *Conn, m bridgeproto.Message) {
	if h.onConversation == nil {
		c.sendError("not_supported", "this daemon does not handle conversation messages", m.MsgType(), "")
		return
	}
	h.onConversation(c.clientID, m)
}

// Inject sends conversation_inject to the connected client clientID and
// waits (at most ActionTimeout) for its inject_result.
func (h *Hub) Inject(ctx context.Context, clientID string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
	c := h.conn(clientID)
	if c == nil {
		return nil, api.Unavailable("client_not_connected", "the plugin client holding this conversation is not connected")
	}
	if m.DeliveryKey != "" && !bridgeproto.ValidDeliveryKey(m.DeliveryKey) {
		return nil, api.NewError(http.StatusInternalServerError, "invalid_delivery_key", "delivery_key must be 1-128 bytes of [A-Za-z0-9._:-]")
	}
	m.Type, m.InjectID = bridgeproto.TypeConversationInject, NewID("inj_")
	p := newPending(m.InjectID, kindInject, m.Platform, c, 1)
	if !h.track(p) {
		return nil, api.Conflict("duplicate_request_id", "inject id %s is already in flight", m.InjectID)
	}
	defer h.Finish(p)
	if !c.send(m) {
		return nil, api.Unavailable("client_gone", "the plugin disconnected before the text could be sent")
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
		return nil, api.NewError(http.StatusGatewayTimeout, "inject_timeout", "the plugin did not confirm the injection within %d ms", h.cfg.ActionTimeout.Milliseconds())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
