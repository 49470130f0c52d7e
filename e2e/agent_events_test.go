package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// agentSSE is one server-sent event: its name ("" for a plain data event)
// and data.
type agentSSE struct{ name, data string }

// openAgentEvents opens GET /v1/agent/events with the token and returns its
// events as they arrive; the channel closes when the body ends.
func openAgentEvents(t *testing.T, r *agentRig, query string) <-chan agentSSE {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", r.d.URL+"/v1/agent/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /v1/agent/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan agentSSE, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				out <- agentSSE{name, strings.TrimPrefix(line, "data: ")}
			case line == "":
				name = ""
			}
		}
	}()
	return out
}

func nextEvent(t *testing.T, ch <-chan agentSSE, within time.Duration) (agentSSE, bool) {
	t.Helper()
	select {
	case e, ok := <-ch:
		return e, ok
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
	}
	return agentSSE{}, false
}

// TestAgentEventsThroughDaemon: agentd's event stream through the main
// daemon (GET /v1/agent/events, server-sent events, token required): the
// open event, a turn's deltas in order up to turn/completed, a session
// filter; then agentd SIGKILLed mid-stream ends the stream with the
// documented end event (agentd_gone, agent_unavailable), and after agentd
// came back a new stream opens.
func TestAgentEventsThroughDaemon(t *testing.T) {
	r := startAgentRig(t)
	d := r.d
	if resp := d.Do("GET", "/v1/agent/events", nil); resp.Status != 401 || errCode(t, resp) != "unauthorized" {
		t.Fatalf("events without the token: %d %s", resp.Status, resp.Body)
	}
	if resp := d.Do("GET", "/v1/agent/events", nil, "Authorization: Bearer wrong-token"); resp.Status != 401 {
		t.Fatalf("events with a wrong token: %d %s", resp.Status, resp.Body)
	}

	s := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir(), "purpose": "events"}))
	id := s["sessionId"].(string)
	other := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir(), "purpose": "other"}))["sessionId"].(string)
	all := openAgentEvents(t, r, "")
	only := openAgentEvents(t, r, "?sessionId="+other)
	for _, ch := range []<-chan agentSSE{all, only} {
		if e, ok := nextEvent(t, ch, 15*time.Second); !ok || e.name != "open" {
			t.Fatalf("first event %+v (open %v), want the open event", e, ok)
		}
	}

	want := "streamed through the main daemon"
	r.fm.Push(fakemodel.Reply{Text: want, Chunks: 5})
	if resp := d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "go"}); resp.Status != 200 {
		t.Fatalf("turn: %d %s", resp.Status, resp.Body)
	}
	var got strings.Builder
	for {
		e, ok := nextEvent(t, all, 30*time.Second)
		if !ok {
			t.Fatalf("stream ended mid-turn (so far %q)", got.String())
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil || e.name != "" {
			t.Fatalf("event %+v: %v", e, err)
		}
		if ev["sessionId"] != id {
			continue
		}
		if ev["type"] == "item/agentMessage/delta" {
			got.WriteString(ev["delta"].(string))
		}
		if ev["type"] == "turn/completed" {
			break
		}
	}
	if got.String() != want {
		t.Fatalf("deltas %q, want %q", got.String(), want)
	}
	// The filtered stream saw nothing of that session's turn.
	select {
	case e := <-only:
		if strings.Contains(e.data, id) {
			t.Fatalf("the stream of session %s carried %s", other, e.data)
		}
	default:
	}

	// agentd SIGKILLed mid-stream: both streams end with the end event.
	pid := agentdWorkerPid(t, r)
	if pid == 0 {
		t.Fatal("no running agentd worker")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan agentSSE{all, only} {
		var end agentSSE
		for {
			e, ok := nextEvent(t, ch, 15*time.Second)
			if !ok {
				t.Fatal("stream ended without the end event")
			}
			if e.name == "end" {
				end = e
				break
			}
		}
		var body struct {
			Reason string `json:"reason"`
			Error  struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(end.data), &body); err != nil || body.Reason != "agentd_gone" || body.Error.Code != "agent_unavailable" || body.Error.Message == "" {
			t.Fatalf("end event %q: %v", end.data, err)
		}
		if e, ok := nextEvent(t, ch, 5*time.Second); ok {
			t.Fatalf("event after the end event: %+v", e)
		}
	}
	r.waitAgent()
	again := openAgentEvents(t, r, "?sessionId="+id)
	if e, ok := nextEvent(t, again, 15*time.Second); !ok || e.name != "open" {
		t.Fatalf("after agentd came back: %+v %v", e, ok)
	}
}
