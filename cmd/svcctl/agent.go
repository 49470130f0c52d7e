package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/websocket"
)

const agentUsage = "agent status|sessions [ID]|create -cwd DIR [-purpose P] | create -resume ID|turn [-wait-ms N] ID TEXT...|watch [ID]   agent sessions (through /v1/agent; watch streams agentd's events)"

// runAgent is `svcctl agent …`, over the main daemon's /v1/agent proxy.
func runAgent(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 {
		return usageError("usage: svcctl " + agentUsage)
	}
	switch args[0] {
	case "status":
		_, err := c.call(ctx, http.MethodGet, "/v1/agent", nil, false)
		return err
	case "sessions":
		switch len(args) {
		case 1:
			_, err := c.call(ctx, http.MethodGet, "/v1/agent/sessions", nil, false)
			return err
		case 2:
			_, err := c.call(ctx, http.MethodGet, "/v1/agent/sessions/"+url.PathEscape(args[1]), nil, false)
			return err
		}
	case "create":
		fs := flag.NewFlagSet("agent create", flag.ContinueOnError)
		cwd := fs.String("cwd", "", "the directory the agent works in")
		purpose := fs.String("purpose", "", "what the session is for")
		resume := fs.String("resume", "", "resume this session id instead")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || (*cwd == "") == (*resume == "") {
			return usageError("usage: svcctl agent create -cwd DIR [-purpose P] | svcctl agent create -resume ID")
		}
		body := map[string]any{"cwd": *cwd, "purpose": *purpose}
		if *resume != "" {
			body = map[string]any{"sessionId": *resume}
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/agent/sessions", body, true)
		return err
	case "turn":
		fs := flag.NewFlagSet("agent turn", flag.ContinueOnError)
		wait := fs.Int("wait-ms", 0, "wait up to this long for the final text")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() < 2 {
			return usageError("usage: svcctl agent turn [-wait-ms N] SESSION_ID TEXT...")
		}
		body := map[string]any{"sessionId": fs.Arg(0), "input": strings.Join(fs.Args()[1:], " ")}
		if *wait > 0 {
			body["waitMs"] = *wait
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/agent/turn", body, true)
		return err
	case "watch":
		if len(args) > 2 {
			break
		}
		session := ""
		if len(args) == 2 {
			session = args[1]
		}
		return watchAgent(ctx, c, session)
	}
	return usageError("usage: svcctl " + agentUsage)
}

// watchAgent finds agentd through GET /v1/agent and streams its event
// WebSocket to the terminal, one JSON event per line, until interrupted.
func watchAgent(ctx context.Context, c *client, session string) error {
	quiet := *c
	quiet.out = discard{}
	raw, err := quiet.call(ctx, http.MethodGet, "/v1/agent", nil, false)
	if err != nil {
		return err
	}
	var st struct {
		Data struct {
			Proxy struct {
				AgentdURL string `json:"agentd_url"`
			} `json:"proxy"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Data.Proxy.AgentdURL == "" {
		return fmt.Errorf("GET /v1/agent did not say where agentd is")
	}
	wsURL := "ws" + strings.TrimPrefix(st.Data.Proxy.AgentdURL, "http") + "/v1/agentd/events"
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		return fmt.Errorf("agentd events at %s: %w", wsURL, err)
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	if session != "" {
		if err := conn.WriteJSON(map[string]any{"type": "subscribe", "sessionId": session}); err != nil {
			return err
		}
	}
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("event stream ended: %w", err)
		}
		_, _ = c.out.Write(append(msg, '\n'))
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
