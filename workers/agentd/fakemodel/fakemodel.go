// Package fakemodel is a small model server on loopback that speaks the
// streaming subset of the OpenAI Responses API that Codex uses. It exists for
// tests and for trying agentd offline without an account: it answers every
// request from a script of canned replies, never calls anything outside.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reply is one scripted answer. Text is streamed in Chunks pieces (default 3)
// with ChunkDelayMS between them; a non-zero ErrorStatus answers that HTTP
// status with ErrorMessage instead. Text may carry ```instr fenced blocks:
// the fake model does not look inside, it only returns them.
type Reply struct {
	Text         string `json:"text"`
	Chunks       int    `json:"chunks,omitempty"`
	ChunkDelayMS int    `json:"chunk_delay_ms,omitempty"`
	ErrorStatus  int    `json:"error_status,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// ToolCall, when set, makes the reply a function call instead of text
	// (for example Codex's exec_command with {"cmd": "..."}), so tests can
	// make the agent ask for a command approval. The next scripted reply
	// answers the request that carries the call's output.
	ToolCall *ToolCall `json:"tool_call,omitempty"`
}

// ToolCall is a function call the fake model asks the agent to make.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text
}

// Server answers POST /v1/responses from its script. When the script runs out
// it repeats Default.
type Server struct {
	mu       sync.Mutex
	script   []Reply
	Default  Reply
	requests atomic.Int64

	ln  net.Listener
	srv *http.Server
}

// New returns a server with an empty script and a default reply.
func New() *Server {
	return &Server{Default: Reply{Text: "ok from the fake model"}}
}

// Push appends replies to the script.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, r...)
	s.mu.Unlock()
}

// Requests says how many model requests arrived.
func (s *Server) Requests() int64 { return s.requests.Load() }

func (s *Server) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return s.Default
	}
	r := s.script[0]
	s.script = s.script[1:]
	return r
}

// Start listens on addr (use 127.0.0.1:0 for a free port).
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// BaseURL is the value for a Codex model provider's base_url.
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the listener and open streams.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		s.respond(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/script":
		var replies []Reply
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&replies); err != nil {
			http.Error(w, `{"error":{"message":"body must be a JSON array of replies"}}`, http.StatusBadRequest)
			return
		}
		s.Push(replies...)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	case strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[],"models":[]}`))
	default:
		http.Error(w, `{"error":{"message":"the fake model only serves POST /v1/responses"}}`, http.StatusNotFound)
	}
}

func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	reply := s.next()
	if reply.ErrorStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.ErrorStatus)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": reply.ErrorMessage, "type": "invalid_request_error", "code": "fake_model_error"}})
		return
	}
	if reply.ToolCall != nil {
		s.respondToolCall(w, n, reply.ToolCall)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	respID := fmt.Sprintf("resp_fake_%d", n)
	itemID := fmt.Sprintf("msg_fake_%d", n)
	send := func(event string, data map[string]any) bool {
		data["type"] = event
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	send("response.created", map[string]any{"response": map[string]any{"id": respID, "status": "in_progress"}})
	send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}})
	for _, piece := range Split(reply.Text, reply.Chunks) {
		if reply.ChunkDelayMS > 0 {
			select {
			case <-time.After(time.Duration(reply.ChunkDelayMS) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		if !send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": piece}) {
			return
		}
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": itemID, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}})
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "status": "completed",
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
}

func (s *Server) respondToolCall(w http.ResponseWriter, n int64, call *ToolCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	respID := fmt.Sprintf("resp_fake_%d", n)
	item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d", n), "call_id": fmt.Sprintf("call_fake_%d", n),
		"name": call.Name, "arguments": call.Arguments, "status": "completed"}
	for _, ev := range []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": respID, "status": "in_progress"}},
		{"type": "response.output_item.added", "output_index": 0, "item": item},
		{"type": "response.output_item.done", "output_index": 0, "item": item},
		{"type": "response.completed", "response": map[string]any{"id": respID, "status": "completed",
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}},
	} {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

// Split cuts text into at most n pieces (default 3) on rune boundaries, so the
// deltas a client sees concatenate back to text.
func Split(text string, n int) []string {
	if n <= 0 {
		n = 3
	}
	runes := []rune(text)
	if len(runes) == 0 {
		return nil
	}
	if n > len(runes) {
		n = len(runes)
	}
	size := (len(runes) + n - 1) / n
	var out []string
	for i := 0; i < len(runes); i += size {
		end := min(i+size, len(runes))
		out = append(out, string(runes[i:end]))
	}
	return out
}
