package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// The relay skeleton is the floor of P1's architecture: a process that
// takes POST /v1/browser/request, writes the api_request to the plugin's
// WebSocket on the handler's goroutine, and answers with the api_response
// the connection's reader hands back, and nothing else (no auth, admission,
// middleware, metrics or state). Run against the same fake plugin and
// platform as the daemon, it says what the three network legs and two hand-
// offs cost on this machine, which the daemon cannot go below.
const skeletonChildEnv = "SVC_E2E_RELAY_SKELETON_CHILD"

// serveSkeletonChild serves the skeleton in the re-executed test binary
// (see servePlatformChild) and reports whether it did.
func serveSkeletonChild() bool {
	if os.Getenv(skeletonChildEnv) != "1" {
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return true
	}
	s := &skeleton{pending: map[string]chan *bridgeproto.APIResponse{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws/browser", s.plugin)
	mux.HandleFunc("/v1/browser/request", s.request)
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return true
}

type skeleton struct {
	wmu     sync.Mutex
	ws      *websocket.Conn
	seq     atomic.Int64
	mu      sync.Mutex
	pending map[string]chan *bridgeproto.APIResponse
}

func (s *skeleton) plugin(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	if _, _, err := ws.ReadMessage(); err != nil { // hello, taken on trust
		return
	}
	ok, _ := json.Marshal(bridgeproto.HelloOK{Type: bridgeproto.TypeHelloOK, ClientID: "bench", ProtocolVer: bridgeproto.ProtocolVersion})
	s.wmu.Lock()
	s.ws = ws
	err = ws.WriteMessage(websocket.TextMessage, ok)
	s.wmu.Unlock()
	for err == nil {
		var data []byte
		if _, data, err = ws.ReadMessage(); err != nil || bridgeproto.PeekType(data) != bridgeproto.TypeAPIResponse {
			continue
		}
		var res bridgeproto.APIResponse
		if json.Unmarshal(data, &res) != nil {
			continue
		}
		s.mu.Lock()
		c := s.pending[res.RequestID]
		delete(s.pending, res.RequestID)
		s.mu.Unlock()
		if c != nil {
			c <- &res
		}
	}
}

func (s *skeleton) request(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Platform string `json:"platform"`
		Path     string `json:"path"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := "sk_" + strconv.FormatInt(s.seq.Add(1), 10)
	c := make(chan *bridgeproto.APIResponse, 1)
	s.mu.Lock()
	s.pending[id] = c
	s.mu.Unlock()
	req, _ := json.Marshal(bridgeproto.APIRequest{Type: bridgeproto.TypeAPIRequest, RequestID: id, Platform: q.Platform,
		Method: http.MethodGet, Path: q.Path, ResponseMode: bridgeproto.ModeBuffered})
	s.wmu.Lock()
	err := s.ws.WriteMessage(websocket.TextMessage, req)
	s.wmu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	res := <-c
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(map[string]any{"ok": true, "data": map[string]any{
		"requestId": id, "status": res.Status, "headers": bridgeproto.SafeHeaders(res.Headers), "body": res.Body}})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// startSkeletonProcess runs the relay skeleton in another process and
// returns its base URL and pid.
func startSkeletonProcess(tb testing.TB) (string, int) {
	tb.Helper()
	return startChildServer(tb, skeletonChildEnv, "relay skeleton child")
}
