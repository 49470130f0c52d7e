package e2e

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeSite is a fake AI platform web site on loopback: a page that "logs in"
// (its own fetch carries an Authorization header and a CSRF header, the server
// sets a session cookie), a buffered API, an SSE API and a hanging API that
// records cancellation. Every credential value contains canary.
//
// Its conversation pages (/c/<id>) are a chat with a scripted AI: the page
// shows what was sent as a user message and the AI's answer below it. A
// conversation whose id starts with "loop-" or "type-" always answers with
// an instr block that succeeds (@svc::status), one starting with "fail-" with
// one that fails (@svc::nope), so the instruction loop goes on until the
// extension's loop rules stop it. A conversation whose id starts with
// "hist-" loads with an earlier user message above the AI's reply (as a
// platform shows a conversation's history), without a message id. One whose
// id starts with "longid-" answers first with an instr block that succeeds
// under longPageID, an id the daemon refuses, then without instructions.
type fakeSite struct {
	*httptest.Server
	canary    string
	hangs     atomic.Int32 // /api/hang requests that arrived
	cancelled atomic.Int32 // … and were aborted by their client
	cookieOK  atomic.Int32
	mu        sync.Mutex
	sent      []sentMessage // what the page's send button posted
	turns     map[string]int
	hold      *siteHold // the next send request to hold (holdSend)
}

type sentMessage struct{ conv, text string }

func (s *fakeSite) sentMessages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		out = append(out, m.text)
	}
	return out
}

// sentIn is what the page sent in conversation id.
func (s *fakeSite) sentIn(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		if m.conv == id {
			out = append(out, m.text)
		}
	}
	return out
}

// aiReply is the scripted AI's next answer in conversation id ("" when this
// conversation has no script).
func (s *fakeSite) aiReply(id string) (text, msgID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns[id]++
	n := s.turns[id]
	msgID = fmt.Sprintf("m-%s-%d", id, n)
	switch {
	case strings.HasPrefix(id, "loop-"), strings.HasPrefix(id, "type-"):
		return fmt.Sprintf("Round %d: checking the daemon.\n\n```instr\n@svc::status\n```\n", n), msgID
	case strings.HasPrefix(id, "longid-"):
		if n == 1 {
			return "Checking the daemon.\n\n```instr\n@svc::status\n```\n", longPageID
		}
		return "All done.", msgID
	case strings.HasPrefix(id, "exec-"):
		// One host operation, then done (the pairing scope test).
		if n == 1 {
			return "Running it.\n\n```instr\n@svc::exec::echo paired-exec-ok\n```\n", msgID
		}
		return "All done.", msgID
	case strings.HasPrefix(id, "fail-"):
		return fmt.Sprintf("Attempt %d.\n\n```instr\n@svc::nope\n```\n", n), msgID
	}
	return "", ""
}

// longPageID is a message id as some pages have them: 300 bytes with
// spaces, which the daemon refuses as a message_id (bridgeproto checkID).
var longPageID = strings.Repeat("a reply id with spaces ", 14)[:300]

const sitePage = `<!doctype html><meta charset="utf-8"><title>fake %s</title>
<h1>fake %s</h1><div class="reply">hello from the fake platform</div>
<div id="chat"></div>
<textarea id="prompt"></textarea><button id="send">send</button>
<script>
fetch('/api/login', {method:'POST', headers:{'Authorization':'Bearer %s-auth','X-Csrf-Token':'%s-csrf','Content-Type':'application/json'}, body:'{}'});
const chat = document.getElementById('chat');
const add = (cls, text, id) => {
  const d = document.createElement('div');
  d.className = 'message ' + cls;
  d.style.whiteSpace = 'pre-wrap';
  if (id) d.dataset.messageId = id;
  d.textContent = text;
  chat.appendChild(d);
};
document.getElementById('send').onclick = async () => {
  const box = document.getElementById('prompt');
  const text = box.value;
  box.value = '';
  if (location.pathname.startsWith('/c/')) add('user', text);
  const r = await fetch('/api/complete', {method:'POST', headers:{'Content-Type':'application/json'}, body: JSON.stringify({message: text, conv: location.pathname})});
  document.documentElement.dataset.svcdSendStatus = String(r.status);
  const j = await r.json();
  if (j.reply) add('assistant', j.reply, j.id);
};
</script>`

// histUserText is the earlier user message of a "hist-" conversation page:
// its words must never leave the browser.
const histUserText = "an earlier question USERHIST3"

func newFakeSite(name, canary string) *fakeSite {
	s := &fakeSite{canary: canary, turns: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, sitePage, name, name, canary, canary)
	})
	mux.HandleFunc("GET /c/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		page := fmt.Sprintf(sitePage, name, name, canary, canary)
		text, id := s.aiReply(r.PathValue("id"))
		if text == "" {
			text, id = "Checking the daemon.\n\n```instr\n@svc::status\n```\n", "m-"+r.PathValue("id")
		}
		reply := `<div class="message assistant" style="white-space:pre-wrap" data-message-id="` + html.EscapeString(id) + `">` + html.EscapeString(text) + "</div>"
		if strings.HasPrefix(r.PathValue("id"), "hist-") {
			reply = `<div class="message user" style="white-space:pre-wrap">` + html.EscapeString(histUserText) + "</div>" + reply
		}
		fmt.Fprint(w, strings.Replace(page, `<div id="chat">`, `<div id="chat">`+reply, 1))
	})
	mux.HandleFunc("POST /api/login", func(w http.ResponseWriter, r *http.Request) {
		// Cookies are per host, not per port: each site names its own.
		http.SetCookie(w, &http.Cookie{Name: "sid_" + name, Value: canary + "-cookie", Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	mux.HandleFunc("POST /api/complete", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Message string `json:"message"`
			Conv    string `json:"conv"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		conv := strings.TrimPrefix(in.Conv, "/c/")
		if in.Message != "" {
			s.mu.Lock()
			s.sent = append(s.sent, sentMessage{conv: conv, text: in.Message})
			h := s.hold
			if h != nil && strings.Contains(in.Message, h.text) {
				s.hold = nil
			} else {
				h = nil
			}
			s.mu.Unlock()
			if h != nil {
				h.wait(r)
			}
		}
		if c, err := r.Cookie("sid_" + name); err == nil && c.Value == canary+"-cookie" {
			s.cookieOK.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		if text, id := s.aiReply(conv); text != "" {
			_ = json.NewEncoder(w).Encode(map[string]string{"answer": "hello from " + name, "reply": text, "id": id})
			return
		}
		fmt.Fprintf(w, `{"answer":"hello from %s"}`, name)
	})
	mux.HandleFunc("POST /api/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "event: message\ndata: {\"delta\":\"part%d\"}\n\n", i)
			f.Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	// The figures' stream (chromium_figures_test.go): n events, each
	// stamped with the wall clock (Unix ns) when it was written, gap_us
	// apart (0: as fast as the connection takes them), each flushed alone.
	mux.HandleFunc("POST /api/bench-stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		gap, _ := strconv.Atoi(r.URL.Query().Get("gap_us"))
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := 1; i <= n; i++ {
			if gap > 0 && i > 1 {
				time.Sleep(time.Duration(gap) * time.Microsecond)
			}
			fmt.Fprintf(w, "data: t=%d\n\n", time.Now().UnixNano())
			f.Flush()
		}
	})
	mux.HandleFunc("POST /api/hang", func(w http.ResponseWriter, r *http.Request) {
		s.hangs.Add(1)
		select {
		case <-r.Context().Done():
			s.cancelled.Add(1)
		case <-time.After(30 * time.Second):
		}
	})
	s.Server = httptest.NewServer(mux)
	return s
}
