package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeSite is a fake AI platform web site on loopback: a page that "logs in"
// (its own fetch carries an Authorization header and a CSRF header, the server
// sets a session cookie), a buffered API, an SSE API and a hanging API that
// records cancellation. Every credential value contains canary.
type fakeSite struct {
	*httptest.Server
	canary    string
	cancelled atomic.Int32
	cookieOK  atomic.Int32
	mu        sync.Mutex
	sent      []string // what the page's send button posted
}

func (s *fakeSite) sentMessages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

const sitePage = `<!doctype html><meta charset="utf-8"><title>fake %s</title>
<h1>fake %s</h1><div class="reply">hello from the fake platform</div>
<textarea id="prompt"></textarea><button id="send">send</button>
<script>
fetch('/api/login', {method:'POST', headers:{'Authorization':'Bearer %s-auth','X-Csrf-Token':'%s-csrf','Content-Type':'application/json'}, body:'{}'});
document.getElementById('send').onclick = async () => {
  const r = await fetch('/api/complete', {method:'POST', headers:{'Content-Type':'application/json'}, body: JSON.stringify({message: document.getElementById('prompt').value})});
  document.documentElement.dataset.svcdSendStatus = String(r.status);
};
</script>`

func newFakeSite(name, canary string) *fakeSite {
	s := &fakeSite{canary: canary}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, sitePage, name, name, canary, canary)
	})
	mux.HandleFunc("GET /c/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		page := fmt.Sprintf(sitePage, name, name, canary, canary)
		reply := "<div class=\"message assistant\" data-message-id=\"m-" + r.PathValue("id") + "\"><pre>Checking the daemon.\n\n```instr\n@svc::status\n```\n</pre></div>"
		fmt.Fprint(w, strings.Replace(page, "<textarea", reply+"<textarea", 1))
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
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.Message != "" {
			s.mu.Lock()
			s.sent = append(s.sent, in.Message)
			s.mu.Unlock()
		}
		if c, err := r.Cookie("sid_" + name); err == nil && c.Value == canary+"-cookie" {
			s.cookieOK.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
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
	mux.HandleFunc("POST /api/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			s.cancelled.Add(1)
		case <-time.After(30 * time.Second):
		}
	})
	s.Server = httptest.NewServer(mux)
	return s
}
