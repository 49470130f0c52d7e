package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzReadAgentEvents: any stream body is read without a panic, in both
// formats; a body without the end event is an error naming that, and one
// with it an error carrying its code; every agent event gives one line.
func FuzzReadAgentEvents(f *testing.F) {
	for _, s := range []string{
		"event: open\ndata: {\"agentd_url\":\"http://127.0.0.1:4319\"}\n\ndata: {\"type\":\"turn/started\",\"sessionId\":\"ses_1\",\"at\":\"2026-01-01T00:00:00Z\"}\n\n",
		"data: {\"type\":\"item/agentMessage/delta\",\"delta\":\"a\\nb\"}\n\nevent: end\ndata: {\"reason\":\"agentd_gone\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"x\"}}\n\n",
		": keep-alive\n\ndata: not json\n\n", "event: end\ndata: {\n\n", "data: {\"error\":{\"code\":\"c\",\"message\":\"m\"}}\n\n", "", "\n\n\n", "data:", "event: end\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, format := range []string{formatHuman, formatJSON} {
			var out bytes.Buffer
			err := readAgentEvents(context.Background(), bytes.NewReader(body), format, &out)
			if err == nil {
				t.Fatalf("a stream that ended gave no error: %q", body)
			}
			hasEnd := strings.Contains(string(body), "event: end\n") && strings.Contains(err.Error(), "event stream ended")
			if !hasEnd && !strings.Contains(err.Error(), "without an end event") && !strings.Contains(err.Error(), "event stream broken") && !strings.Contains(err.Error(), "event stream ended") {
				t.Fatalf("error %v for %q", err, body)
			}
		}
	})
}

// Human output: one line per event (time, type, session, turn, the delta
// quoted, the message), a line for the open event, and the end event as
// the command's error.
func TestReadAgentEventsHuman(t *testing.T) {
	body := "event: open\ndata: {\"agentd_url\":\"http://127.0.0.1:4319\"}\n\n" +
		": keep-alive\n\n" +
		"data: {\"type\":\"item/agentMessage/delta\",\"sessionId\":\"ses_1\",\"turnId\":\"t1\",\"delta\":\"two\\nlines\",\"at\":\"2026-01-01T00:00:00Z\"}\n\n" +
		"data: {\"type\":\"turn/completed\",\"sessionId\":\"ses_1\",\"message\":\"completed\"}\n\n" +
		"event: end\ndata: {\"reason\":\"agentd_gone\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"agentd closed its event stream\"}}\n\n"
	var out bytes.Buffer
	err := readAgentEvents(context.Background(), strings.NewReader(body), formatHuman, &out)
	if err == nil || !strings.Contains(err.Error(), "agentd_gone") || !strings.Contains(err.Error(), "agent_unavailable: agentd closed its event stream") {
		t.Fatalf("end: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "watching") ||
		!strings.HasSuffix(lines[1], `item/agentMessage/delta ses_1 turn=t1 "two\nlines"`) ||
		lines[2] != "turn/completed ses_1 completed" {
		t.Fatalf("human lines:\n%s", out.String())
	}
}
