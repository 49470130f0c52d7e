package supervisor

import (
	"net/http"
	"unicode/utf8"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/instr"
	"github.com/svcd/svcd/supervisor/instructions"
	"github.com/svcd/svcd/supervisor/openapi"
)

// instructionsSide is the instruction executor and ingest service with the
// single-node in-memory placeholders for tasks, conversations and injection
// (the durable ones are wired here when the tasks/renewal area lands).
type instructionsSide struct {
	svc     *instructions.Service
	exec    *instructions.Executor // its Collectors go on /metrics
	textCap int
}

func (s *Server) instructionsSetup() *instructionsSide {
	if s.instr != nil {
		return s.instr
	}
	blocks, rounds, section, report, textCap := s.cfg.InstrLimits()
	side := &instructionsSide{textCap: textCap}
	exec := instructions.NewExecutor(func() http.Handler { return s.handler }, instructions.NewRegistry(), instructions.Options{
		BlockTimeout: s.cfg.InstrBlockTimeout(), MaxBlocks: blocks,
		Limits: instr.ReportLimits{SectionMaxBytes: section, ReportMaxBytes: report},
	})
	side.svc = instructions.NewService(instructions.Deps{
		Executor: exec, Tasks: s.tasks, Conversations: s.convs, Injector: bridgeInjector{s}, MaxRounds: rounds,
		Paused: func() bool { return s.SystemState().Mode == "paused" },
	})
	side.exec = exec
	s.instr = side
	return side
}

func (s *Server) instructionRoutes() []Route {
	side := s.instructionsSetup()
	bodyCap := int64(2*side.textCap + 64<<10)
	return []Route{
		{Method: http.MethodPost, Path: "/v1/instructions/run", Name: "instructions.run", Area: "instructions", Scope: ScopeBusiness, Kind: KindWrite, MaxBody: bodyCap, Local: true,
			Request: runRequest{}, Response: instructions.RunResult{},
			Errors:  openapi.Codes{http.StatusUnprocessableEntity: {"missing_field", "invalid_text"}, http.StatusRequestEntityTooLarge: {"text_too_large"}},
			Body:    []Field{{Name: "text", Type: "string", Required: true, Note: "an AI reply holding ```instr blocks (see instructions in this describe)"}},
			Summary: "Parse the instr blocks of text and run them in parallel through this daemon's own routes with the caller's Authorization; answers the report and one structured result per instruction. Recorded as a task of kind instruction_batch.",
			Handle:  s.handleInstructionsRun},
		// Not Local: an ingest writes the conversation's state and types its
		// report through the plugin, both on the leader, so a standby
		// forwards it (it used to run it and fail at the first write with an
		// undocumented 503 not_leader).
		{Method: http.MethodPost, Path: "/v1/instructions/ingest", Name: "instructions.ingest", Area: "instructions", Scope: ScopeBusiness, Kind: KindWrite, MaxBody: bodyCap,
			Request: ingestRequest{}, Response: ingestAnswer{},
			Errors: openapi.Codes{
				http.StatusUnprocessableEntity:   {"missing_field", "invalid_text", "invalid_platform", "invalid_local_conversation_id", "invalid_remote_conversation_id", "invalid_message_id", "invalid_role"},
				http.StatusRequestEntityTooLarge: {"text_too_large"},
				http.StatusServiceUnavailable:    {"no_plugin_for_conversation"},
			},
			Body: []Field{
				{Name: "platform", Type: "string", Required: true, Note: "platform_a, platform_b or platform_c"},
				{Name: "local_conversation_id", Type: "string", Required: true, Note: "1-128 bytes of [A-Za-z0-9._:-]"},
				{Name: "remote_conversation_id", Type: "string", Required: true, Note: "at most 256 bytes, no control characters (the bridge's rule)"},
				{Name: "message_id", Type: "string", Required: true, Note: "at most 128 bytes, no spaces or control characters (the bridge's rule); stable per reply; a repeat is counted, never executed twice"},
				{Name: "text", Type: "string", Required: true, Note: "the final AI reply"},
				{Name: "role", Type: "string", Default: "assistant", Note: "assistant or user (a user message resets the round count and never runs)"},
			},
			Summary: "Live ingest of one final AI message (same effect as the bridge conversation_message): runs its instructions unless the system is paused (then only system/pause and system/resume run; the rest is recorded as system_paused), and injects the report back into the conversation only when the caller sent the shared token (otherwise not_injected says why and the report is in the answer).",
			Handle:  s.handleInstructionsIngest},
	}
}

type runRequest struct {
	Text *string `json:"text"`
}

func (s *Server) handleInstructionsRun(w http.ResponseWriter, r *http.Request) error {
	side := s.instr
	var req runRequest
	if err := api.DecodeJSON(r, &req, int64(2*side.textCap+64<<10)); err != nil {
		return err
	}
	if req.Text == nil {
		return api.Unprocessable("missing_field", "field \"text\" is required: the reply holding ```instr blocks")
	}
	if err := checkText(*req.Text, side.textCap); err != nil {
		return err
	}
	api.WriteOK(w, side.svc.Run(r.Context(), *req.Text, callerOf(r)))
	return nil
}

type ingestRequest struct {
	Platform             string  `json:"platform"`
	LocalConversationID  string  `json:"local_conversation_id"`
	RemoteConversationID string  `json:"remote_conversation_id"`
	MessageID            string  `json:"message_id"`
	Text                 *string `json:"text"`
	Role                 string  `json:"role"`
}

func (s *Server) handleInstructionsIngest(w http.ResponseWriter, r *http.Request) error {
	side := s.instr
	var req ingestRequest
	if err := api.DecodeJSON(r, &req, int64(2*side.textCap+64<<10)); err != nil {
		return err
	}
	if req.Text == nil {
		return api.Unprocessable("missing_field", "field \"text\" is required")
	}
	if err := checkText(*req.Text, side.textCap); err != nil {
		return err
	}
	// The same rules as the bridge's conversation_message (ids, platform,
	// role), so a reply is accepted or refused alike whichever way it comes.
	msg := bridgeproto.ConversationMessage{
		ConversationRef: bridgeproto.ConversationRef{Platform: req.Platform, LocalConversationID: req.LocalConversationID, RemoteConversationID: req.RemoteConversationID},
		MessageID:       req.MessageID, Role: req.Role,
	}
	if pe := msg.Validate(); pe != nil {
		code := pe.Code // the HTTP routes name the field in the code
		if code == "invalid_field" && pe.Field != "" {
			code = "invalid_" + pe.Field
		}
		return api.Unprocessable(code, "%s", pe.Message)
	}
	caller := callerOf(r)
	// Only a caller with the token has the report typed into the chat
	// (docs/instructions.md, "Who may type into a chat").
	caller.MayInject = s.requireToken(r) == nil
	res, err := side.svc.Ingest(r.Context(), instructions.Message{
		ConvRef:   instructions.ConvRef{Platform: req.Platform, LocalConversationID: req.LocalConversationID, RemoteConversationID: req.RemoteConversationID},
		MessageID: req.MessageID, Text: *req.Text, Role: req.Role,
	}, caller)
	if err != nil {
		return err
	}
	conv, _ := s.convs.Get(req.LocalConversationID)
	api.WriteOK(w, ingestAnswer{Conversation: conv, Ingest: res})
	return nil
}

// ingestAnswer is POST /v1/instructions/ingest's data. Fields in the order
// the map it replaced encoded them (byte-compatible answers).
type ingestAnswer struct {
	Conversation raftstore.Conversation    `json:"conversation"`
	Ingest       instructions.IngestResult `json:"ingest"`
}

func checkText(text string, limit int) error {
	if len(text) > limit {
		return api.NewError(http.StatusRequestEntityTooLarge, "text_too_large", "text is %d bytes; the limit is %d", len(text), limit)
	}
	if !utf8.ValidString(text) {
		return api.Unprocessable("invalid_text", "text must be valid UTF-8")
	}
	return nil
}

// callerOf carries the HTTP caller's own authority and origin into the
// in-process calls: never more than the caller has.
func callerOf(r *http.Request) instructions.Caller {
	return instructions.Caller{Authorization: r.Header.Get("Authorization"), Host: r.Host, RemoteAddr: r.RemoteAddr, RequestID: r.Header.Get(RequestIDHeader)}
}

// instructionsDescribe is the protocol section of the describe documents.
func instructionsDescribe() map[string]any {
	return map[string]any{
		"fence":   "```instr … ``` (also ~~~instr, or a longer fence to hold a ``` inside)",
		"syntax":  "first line @<target>::<tool> optionally ::<params>; params starting with { are JSON, other text becomes {\"command\": text}; further lines join into command",
		"targets": instructions.NewRegistry().Names(),
		"tools":   instructions.Tools(),
		"report": map[string]any{
			"marker":  instr.ResultMarker,
			"format":  instr.ResultMarker + "\n-- <label> --\n" + instr.OK + "\n<output>\n\n-- <label> --\n" + instr.Failed + "\n<error message>\n",
			"label":   "@<target>::<tool>, with \" #n\" for the n-th repeat in one reply",
			"caps":    "long outputs end with \"[truncated: N more bytes]\"; sections over the report cap become \"[truncated: N more sections]\"",
			"dropped": "empty blocks, a bad first line or a block cut off at the end are dropped (listed in results.dropped, not in the report)",
		},
		"paused":     "while the system is paused, ingest records ordinary instructions as system_paused; system/pause and system/resume still run",
		"auth":       "instructions run with the caller's own Authorization: host operations need the shared token",
		"superseded": "the ::host::shell and @system::shell::<json> /@ formats are refused with a 失败 section, never executed",
		"docs":       "docs/instructions.md",
	}
}
