package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const agentUsage = "agent status|sessions [ID]|create -cwd DIR [-purpose P] | create -resume ID|turn [-wait-ms N] ID TEXT...|watch [-format json] [ID]   agent sessions (through /v1/agent; watch streams GET /v1/agent/events, one line per event)"

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
		fs := newFlags("agent create")
		cwd := fs.String("cwd", "", "the directory the agent works in")
		purpose := fs.String("purpose", "", "what the session is for")
		resume := fs.String("resume", "", "resume this session id instead")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || (*cwd == "") == (*resume == "") {
			return usageError(flagHint(fs, err) + "usage: svcctl agent create -cwd DIR [-purpose P] | svcctl agent create -resume ID")
		}
		body := map[string]any{"cwd": *cwd, "purpose": *purpose}
		if *resume != "" {
			body = map[string]any{"sessionId": *resume}
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/agent/sessions", body, true)
		return err
	case "turn":
		fs := newFlags("agent turn")
		wait := fs.Int("wait-ms", 0, "wait up to this long for the final text")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() < 2 {
			return usageError(flagHint(fs, err) + "usage: svcctl agent turn [-wait-ms N] SESSION_ID TEXT...")
		}
		body := map[string]any{"sessionId": fs.Arg(0), "input": strings.Join(fs.Args()[1:], " ")}
		if *wait > 0 {
			body["waitMs"] = *wait
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/agent/turn", body, true)
		return err
	case "watch":
		fs := c.flags("agent watch", "usage: svcctl agent watch [-format human|json] [SESSION_ID]\n\n"+
			"Streams agentd's events through the main daemon (GET /v1/agent/events, with the token) until Ctrl-C:\n"+
			"one line per event (time, type, session, text); -format json prints agentd's JSON events as they come.\n"+
			"With SESSION_ID, that session's events only. Ends with an error when agentd stops or restarts.\n\nexample:\n  svcctl agent watch ses_0123456789abcdef\n\nflags:")
		if err := c.parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() > 1 {
			break
		}
		return watchAgent(ctx, c, fs.Arg(0))
	}
	return usageError("usage: svcctl " + agentUsage)
}

// watchAgent streams GET /v1/agent/events (server-sent events through the
// main daemon, with the token) until interrupted: one line per event,
// human (time, type, session, text) by default, agentd's JSON with -format
// json. The stream's end event (agentd stopped or restarted) ends the
// command with its error.
func watchAgent(ctx context.Context, c *client, session string) error {
	path := "/v1/agent/events"
	if session != "" {
		path += "?sessionId=" + url.QueryEscape(session)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if err := c.authorize(req, true); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return c.failure(http.MethodGet, path, resp, raw)
	}
	return readAgentEvents(ctx, resp.Body, c.format, c.out)
}

// readAgentEvents prints the server-sent events of /v1/agent/events.
func readAgentEvents(ctx context.Context, body io.Reader, format string, out io.Writer) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			event = ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if event == "open" {
				if format == formatJSON {
					fmt.Fprintf(out, "{\"event\":\"open\",\"data\":%s}\n", data)
				} else {
					fmt.Fprintln(out, "watching agentd's events; Ctrl-C ends")
				}
				continue
			}
			if event == "end" {
				var end struct {
					Reason string `json:"reason"`
					Error  struct {
						Code    string `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				_ = json.Unmarshal([]byte(data), &end)
				if format == formatJSON {
					fmt.Fprintf(out, "{\"event\":\"end\",\"data\":%s}\n", data)
				}
				return fmt.Errorf("event stream ended (%s): %s: %s", end.Reason, end.Error.Code, end.Error.Message)
			}
			if format == formatJSON {
				fmt.Fprintln(out, data)
				continue
			}
			fmt.Fprintln(out, humanAgentEvent(data))
		}
	}
	if ctx.Err() != nil {
		return nil // interrupted
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("event stream broken: %w", err)
	}
	return fmt.Errorf("event stream closed by the daemon without an end event")
}

// humanAgentEvent is one event as a line: time, type, session, then the
// delta (quoted, so a newline in it stays on the line) or message.
func humanAgentEvent(data string) string {
	var e struct {
		Type      string    `json:"type"`
		SessionID string    `json:"sessionId"`
		TurnID    string    `json:"turnId"`
		Delta     string    `json:"delta"`
		Message   string    `json:"message"`
		At        time.Time `json:"at"`
		Error     *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(data), &e) != nil {
		return data
	}
	if e.Type == "" && e.Error != nil {
		return "error " + e.Error.Code + ": " + e.Error.Message
	}
	parts := []string{}
	if !e.At.IsZero() {
		parts = append(parts, e.At.Local().Format("15:04:05.000"))
	}
	parts = append(parts, e.Type)
	if e.SessionID != "" {
		parts = append(parts, e.SessionID)
	}
	if e.TurnID != "" {
		parts = append(parts, "turn="+e.TurnID)
	}
	if e.Delta != "" {
		parts = append(parts, strconv.Quote(e.Delta))
	}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	return strings.Join(parts, " ")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
