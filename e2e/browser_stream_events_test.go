package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// rawBridge is a plugin written against docs/bridge-protocol.md with bare
// frames, for the capability rules (fakeplugin never announces one).
type rawBridge struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialRaw(t *testing.T, d *harness.Daemon, clientID string, caps []string) (*rawBridge, bridgeproto.HelloOK) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(wsURL(d), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r := &rawBridge{t: t, ws: ws}
	r.send(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: d.Token, ClientID: clientID, Capabilities: caps,
		Platforms: []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC}})
	var ok bridgeproto.HelloOK
	if err := json.Unmarshal(r.next(bridgeproto.TypeHelloOK, ""), &ok); err != nil {
		t.Fatal(err)
	}
	return r, ok
}

func (r *rawBridge) send(v any) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	if err := r.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		r.t.Fatal(err)
	}
}

// captured sends a login capture for platform_a and waits for its record:
// the relay goes only to a client that has one.
func (r *rawBridge) captured(d *harness.Daemon, clientID string) {
	r.t.Helper()
	r.send(bridgeproto.Credentials{Type: bridgeproto.TypeCredentials, Platform: bridgeproto.PlatformA, Host: "chat.example",
		Headers: map[string]string{"Authorization": "Bearer x"}})
	waitUntil(r.t, 5*time.Second, "the record of "+clientID, func() bool {
		for _, rec := range readModel(r.t, d, "?client_id="+clientID+"&platform=platform_a").Records {
			if rec.CredentialFingerprint != "" {
				return true
			}
		}
		return false
	})
}

// sendRaw writes a frame as it is (a frame whose Go type the daemon has
// but this plugin should not use).
func (r *rawBridge) sendRaw(s string) {
	r.t.Helper()
	if err := r.ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the next frame of type typ (holding sub, if given),
// skipping others.
func (r *rawBridge) next(typ, sub string) []byte {
	r.t.Helper()
	_ = r.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, b, err := r.ws.ReadMessage()
		if err != nil {
			r.t.Fatalf("waiting for %s: %v", typ, err)
		}
		if bridgeproto.PeekType(b) == typ && strings.Contains(string(b), sub) {
			return b
		}
	}
}

// sseEvents runs an SSE relay to clientID and returns the data of each
// stream_event the HTTP caller got, and the stream_end's event count.
func sseRelay(d *harness.Daemon, clientID, requestID string) <-chan *harness.Response {
	ch := make(chan *harness.Response, 1)
	go func() {
		ch <- d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "clientId": clientID, "path": "/api/stream",
			"responseMode": "sse", "requestId": requestID, "timeoutMs": 10000})
	}()
	return ch
}

func callerEvents(t *testing.T, r *harness.Response) (data []string, seqs []int64, ended int) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("relay: %d %s", r.Status, r.Body)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	ev := ""
	ended = -1
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var f struct {
				Seq    int64  `json:"seq"`
				Data   string `json:"data"`
				Events int    `json:"events"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f); err != nil {
				t.Fatalf("caller frame %q: %v", line, err)
			}
			switch ev {
			case "stream_event":
				data, seqs = append(data, f.Data), append(seqs, f.Seq)
			case "stream_end":
				ended = f.Events
			}
		}
	}
	return data, seqs, ended
}

// A plugin that announced stream_events in its hello gets it back in
// hello_ok and may send several events in one frame; the HTTP caller sees
// exactly what one stream_event frame per event gives. A plugin that did
// not announce it (every older one) gets no capabilities, and a
// stream_events frame from it is refused with an error frame and relays
// nothing.
func TestStreamEventsBatchNegotiated(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)

	batcher, ok := dialRaw(t, d, "batcher", []string{bridgeproto.CapStreamEvents, "some-future-capability"})
	if len(ok.Capabilities) != 1 || ok.Capabilities[0] != bridgeproto.CapStreamEvents {
		t.Fatalf("hello_ok capabilities %v, want [stream_events] (an unknown one is ignored)", ok.Capabilities)
	}
	batcher.captured(d, "batcher")
	done := sseRelay(d, "batcher", "batch-1")
	batcher.next(bridgeproto.TypeAPIRequest, "batch-1")
	batcher.send(bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "batch-1", Status: 200})
	batcher.sendRaw(`{"type":"stream_events","requestId":"batch-1","events":[{"seq":1,"event":"message","data":"a"},{"seq":2,"data":"b"},{"seq":3,"data":"c\n\"q\""}]}`)
	batcher.send(bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "batch-1", Seq: 4, Data: "d"})
	batcher.sendRaw(`{"type":"stream_events","requestId":"batch-1","events":[{"seq":5,"data":"e"},{"seq":6,"data":"f"}]}`)
	// A seq that does not increase stops the frame there: "g" goes, "x" not.
	batcher.sendRaw(`{"type":"stream_events","requestId":"batch-1","events":[{"seq":7,"data":"g"},{"seq":7,"data":"x"}]}`)
	if e := batcher.next(bridgeproto.TypeError, "batch-1"); !bytes.Contains(e, []byte("seq_not_increasing")) {
		t.Fatalf("error for a repeated seq inside a batch: %s", e)
	}
	batcher.send(bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "batch-1"})
	data, seqs, ended := callerEvents(t, <-done)
	if strings.Join(data, ",") != "a,b,c\n\"q\",d,e,f,g" || ended != 7 {
		t.Fatalf("caller got %q, stream_end events %d; want a..g in order, 7", data, ended)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("caller seqs %v, want 1..7", seqs)
		}
	}

	old, ok := dialRaw(t, d, "no-batching", nil)
	if len(ok.Capabilities) != 0 {
		t.Fatalf("hello_ok to a plugin that announced nothing lists %v", ok.Capabilities)
	}
	old.captured(d, "no-batching")
	done = sseRelay(d, "no-batching", "batch-2")
	old.next(bridgeproto.TypeAPIRequest, "batch-2")
	old.send(bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "batch-2", Status: 200})
	old.sendRaw(`{"type":"stream_events","requestId":"batch-2","events":[{"seq":1,"data":"never"}]}`)
	e := old.next(bridgeproto.TypeError, "")
	var ef bridgeproto.Error
	if json.Unmarshal(e, &ef) != nil || ef.Code != "capability_not_negotiated" || ef.RefType != bridgeproto.TypeStreamEvents {
		t.Fatalf("error for an unannounced stream_events: %s", e)
	}
	old.send(bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "batch-2", Seq: 2, Data: "one"})
	old.send(bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "batch-2"})
	data, _, ended = callerEvents(t, <-done)
	if strings.Join(data, ",") != "one" || ended != 1 {
		t.Fatalf("caller of the plugin without the capability got %q (end %d), want only \"one\"", data, ended)
	}
}
