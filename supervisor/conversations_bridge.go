package supervisor

import (
	"context"
	"fmt"

	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/instructions"
)

// bridgeInjector delivers instruction reports over the browser bridge
// (conversation_inject) to the client holding the conversation. Every
// injection is also kept in the in-memory log (the instruction routes and
// their tests read it); without a holding client that log is all there is.
type bridgeInjector struct {
	s   *Server
	log *instructions.MemInjector
}

// Inject implements instructions.Injector.
func (b *bridgeInjector) Inject(ctx context.Context, c instructions.ConvRef, kind, text string) (string, error) {
	id, _ := b.log.Inject(ctx, c, kind, text)
	if b.s.browser == nil {
		return id, nil
	}
	hub := b.s.browser.hub
	if _, _, ok := hub.ConversationHolder(c.LocalConversationID); !ok {
		return id, nil
	}
	res, err := hub.Inject(ctx, bridgeproto.ConversationInject{
		InjectID: id + "-" + c.LocalConversationID, Platform: c.Platform,
		LocalConversationID: c.LocalConversationID, RemoteConversationID: c.RemoteConversationID,
		Kind: kind, Text: text,
	})
	if err != nil {
		return id, err
	}
	if !res.OK {
		code, msg := "inject_failed", ""
		if res.Error != nil {
			code, msg = res.Error.Code, res.Error.Message
		}
		return res.InjectID, fmt.Errorf("%s: %s", code, msg)
	}
	return res.InjectID, nil
}

// wireConversationIngest sends every conversation_message a paired plugin
// delivers into instruction ingest. A paired connection has proven the
// pairing token; it carries the shared token's authority only when the
// pairing token is the shared token.
func (s *Server) wireConversationIngest() {
	if s.browser == nil {
		return
	}
	s.browser.hub.OnConversationLink(s.linkConversation)
	authenticated := s.cfg.BrowserPairingToken == "" || s.cfg.BrowserPairingToken == s.token
	s.browser.hub.OnConversationMessage(func(ctx context.Context, clientID string, m *bridgeproto.ConversationMessage) {
		msg := instructions.Message{
			ConvRef:   instructions.ConvRef{Platform: m.Platform, LocalConversationID: m.LocalConversationID, RemoteConversationID: m.RemoteConversationID},
			MessageID: m.MessageID, Text: m.Text, Role: m.Role,
		}
		res, err := s.IngestFromBridge(ctx, msg, authenticated)
		if err != nil {
			s.log.Warn("conversation message not ingested", "client_id", clientID, "local_conversation_id", m.LocalConversationID, "message_id", m.MessageID, "error", err)
			return
		}
		s.log.Debug("conversation message ingested", "client_id", clientID, "local_conversation_id", m.LocalConversationID, "status", res.Status)
	})
}
