package fakeplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Platform is a fake web AI platform on loopback. It answers:
//
//	/api/echo           JSON echo of method, path, body and the request header names
//	/api/complete       JSON completion of {"prompt"}
//	/api/stream?n=N     text/event-stream with N data lines ("chunk I");
//	                    &delay_ms=D spaces them D ms apart, &stamp=1 makes
//	                    each line "t=<unix nanos>", the wall clock when it
//	                    was written (the per-event latency benchmark)
//	/api/status?code=C&retry_after=S   status C, optional Retry-After
//	/api/hang           blocks until the caller goes away (cancel tests)
//
// Every answer sets Set-Cookie and X-Session-Token to Secret, which the
// relay must never pass on, store or log.
type Platform struct {
	*httptest.Server
	Secret   string
	Hits     atomic.Int64
	hangMu   sync.Mutex
	hangDone []chan struct{}
	// Cancelled counts /api/hang requests whose caller went away.
	Cancelled atomic.Int64
	// SeenAuth records the Authorization values the page sent (canary).
	SeenAuth sync.Map
}

// NewPlatform starts a fake platform on loopback.
func NewPlatform(secret string) *Platform {
	p := &Platform{Secret: secret}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/echo", p.echo)
	mux.HandleFunc("/api/complete", p.complete)
	mux.HandleFunc("/api/stream", p.stream)
	mux.HandleFunc("/api/status", p.status)
	mux.HandleFunc("/api/hang", p.hang)
	p.Server = httptest.NewServer(mux)
	return p
}

func (p *Platform) common(w http.ResponseWriter, r *http.Request) {
	p.Hits.Add(1)
	if a := r.Header.Get("Authorization"); a != "" {
		p.SeenAuth.Store(a, true)
	}
	w.Header().Set("Set-Cookie", "session="+p.Secret+"; HttpOnly")
	w.Header().Set("X-Session-Token", p.Secret)
}

func (p *Platform) echo(w http.ResponseWriter, r *http.Request) {
	p.common(w, r)
	b, _ := io.ReadAll(r.Body)
	names := []string{}
	for k := range r.Header {
		names = append(names, k)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "body": string(b), "header_names": names})
}

func (p *Platform) complete(w http.ResponseWriter, r *http.Request) {
	p.common(w, r)
	var in struct {
		Prompt string `json:"prompt"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"completion": "echo: " + in.Prompt})
}

func (p *Platform) stream(w http.ResponseWriter, r *http.Request) {
	p.common(w, r)
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if n <= 0 {
		n = 3
	}
	delay, _ := strconv.Atoi(r.URL.Query().Get("delay_ms"))
	stamp := r.URL.Query().Get("stamp") == "1"
	// tag is appended to every chunk, so a caller can tell its stream from
	// another's (the chaos run's wrong-caller check).
	tag := r.URL.Query().Get("tag")
	if tag != "" {
		tag = " " + tag
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i := 1; i <= n; i++ {
		var err error
		if stamp {
			_, err = fmt.Fprintf(w, "data: t=%d\n\n", time.Now().UnixNano())
		} else {
			_, err = fmt.Fprintf(w, "data: chunk %d%s\n\n", i, tag)
		}
		if err != nil {
			return
		}
		if i%64 == 0 || i == n || delay > 0 {
			_ = rc.Flush()
		}
		if delay > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Duration(delay) * time.Millisecond):
			}
		}
	}
}

func (p *Platform) status(w http.ResponseWriter, r *http.Request) {
	p.common(w, r)
	code, _ := strconv.Atoi(r.URL.Query().Get("code"))
	if code < 100 {
		code = 200
	}
	if ra := r.URL.Query().Get("retry_after"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code})
}

func (p *Platform) hang(w http.ResponseWriter, r *http.Request) {
	p.common(w, r)
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprint(w, "data: started\n\n")
	_ = http.NewResponseController(w).Flush()
	<-r.Context().Done()
	p.Cancelled.Add(1)
}
