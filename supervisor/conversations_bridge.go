package supervisor

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/instructions"
)

// ingestTimeout bounds one live-ingested reply's whole batch.
const ingestTimeout = 10 * time.Minute

// onConversation wires the bridge's conversation messages: a link updates
// the conversation record (this client holds it now); a client loop report
// is kept in the record (client_loop); a final AI reply is
// ingested — its instr blocks run, and the report is injected back — on a
// goroutine of its own, so the plugin's reader never waits for it.
func (s *Server) onConversation(clientID string, m bridgeproto.Message) {
	switch v := m.(type) {
	case *bridgeproto.ConversationLink:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.convs.Link(ctx, raftstore.ConvLink{LocalID: v.LocalConversationID, Platform: v.Platform, ClientID: clientID,
			RemoteID: v.RemoteConversationID, URL: v.URL, Title: v.Title}); err != nil {
			s.log.Warn("could not record a conversation link", "client_id", clientID, "local_conversation_id", v.LocalConversationID, "error", err)
		}
	case *bridgeproto.ConversationLoop:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.convs.SetClientLoop(ctx, raftstore.ConvClientLoop{
			ConvLink: raftstore.ConvLink{LocalID: v.LocalConversationID, Platform: v.Platform, ClientID: clientID, RemoteID: v.RemoteConversationID},
			State:    v.State, Reason: v.Reason, Rounds: v.Rounds, MaxRounds: v.MaxRounds,
		})
		if err != nil {
			s.log.Warn("could not record a client loop", "client_id", clientID, "local_conversation_id", v.LocalConversationID, "error", err)
			return
		}
		if v.State == bridgeproto.LoopStopped {
			s.log.Info("client loop stopped by the plugin", "client_id", clientID, "local_conversation_id", v.LocalConversationID, "reason", v.Reason, "rounds", v.Rounds)
		}
	case *bridgeproto.ConversationMessage:
		msg := instructions.Message{
			ConvRef:   instructions.ConvRef{Platform: v.Platform, LocalConversationID: v.LocalConversationID, RemoteConversationID: v.RemoteConversationID},
			MessageID: v.MessageID, Text: v.Text, Role: v.Role,
		}
		s.ingests.Add(1)
		go func() {
			defer s.ingests.Done()
			ctx, cancel := context.WithTimeout(s.ingestCtx, ingestTimeout)
			defer cancel()
			// The message's connection holds the conversation: record it, so
			// the report goes back to this plugin.
			if _, err := s.convs.Link(ctx, raftstore.ConvLink{LocalID: v.LocalConversationID, Platform: v.Platform, ClientID: clientID, RemoteID: v.RemoteConversationID}); err != nil {
				s.log.Warn("could not record a conversation link", "client_id", clientID, "error", err)
				return
			}
			res, err := s.ingestFromClient(ctx, clientID, msg)
			if err != nil {
				s.log.Warn("live ingest failed", "client_id", clientID, "local_conversation_id", v.LocalConversationID, "error", err)
				return
			}
			if res.InjectError != "" {
				// The report was not typed back (the user typed, the plugin's
				// loop stopped, the page refused): say so where operators look.
				s.log.Warn("live ingest: report not injected", "client_id", clientID, "local_conversation_id", v.LocalConversationID,
					"status", res.Status, "task_id", res.TaskID, "inject_error", res.InjectError)
				return
			}
			s.log.Info("live ingest", "client_id", clientID, "local_conversation_id", v.LocalConversationID, "status", res.Status, "task_id", res.TaskID)
		}()
	}
}

// bridgeInjector types reports into the conversation through the plugin
// connection that holds it, and waits for its inject_result.
type bridgeInjector struct{ s *Server }

func (b bridgeInjector) Inject(ctx context.Context, c instructions.ConvRef, kind, key, text string) (string, error) {
	conv, ok := b.s.convs.Get(c.LocalConversationID)
	if !ok || conv.ClientID == "" {
		return "", api.Unavailable("no_plugin_for_conversation", "no plugin has linked conversation %s; the report was not typed (an HTTP ingest has it in its answer; the task log lists each instruction's outcome)", c.LocalConversationID)
	}
	if len(text) > bridgeproto.MaxConversationText {
		// Cut on a character boundary: a report must stay valid UTF-8.
		cut := bridgeproto.MaxConversationText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	res, err := b.s.browser.hub.Inject(ctx, conv.ClientID, bridgeproto.ConversationInject{
		ConversationRef: bridgeproto.ConversationRef{Platform: c.Platform, LocalConversationID: c.LocalConversationID, RemoteConversationID: c.RemoteConversationID},
		Kind:            kind, Text: text, DeliveryKey: key,
	})
	if err != nil {
		return "", err
	}
	if !res.OK {
		msg := "the plugin could not inject the text"
		if res.Error != nil && res.Error.Code != "" {
			msg += " (" + res.Error.Code + ")"
		}
		return res.InjectID, api.NewError(502, "inject_failed", "%s", msg)
	}
	if res.Duplicate {
		b.s.log.Info("report already delivered; the plugin typed nothing now", "local_conversation_id", c.LocalConversationID, "delivery_key", key, "inject_id", res.InjectID)
	}
	return res.InjectID, nil
}
