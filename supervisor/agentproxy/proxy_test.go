package agentproxy

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeAgentd serves on loopback and records what the proxy sent.
func fakeAgentd(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func errorCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	return body.Error.Code
}

// TestForward: the token and JSON content type are added, agentd's status
// and JSON body come back unchanged, and a non-JSON answer or a dead agentd
// is a 503 agent_unavailable.
func TestForward(t *testing.T) {
	var gotAuth, gotCT, gotBody string
	addr := fakeAgentd(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotCT = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		b := new(strings.Builder)
		_, _ = io.Copy(b, r.Body)
		gotBody = b.String()
		switch r.URL.Path {
		case "/v1/agentd/turn":
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"ok":false,"error":{"code":"unknown_session","message":"x"}}`))
		default:
			w.WriteHeader(502)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
		}
	})
	p := New(addr, "tok", "")
	req := httptest.NewRequest("POST", "/v1/agent/turn", strings.NewReader(`{"sessionId":"s","input":"i"}`))
	rec := httptest.NewRecorder()
	if err := p.Forward(rec, req, "POST", "/v1/agentd/turn"); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 404 || errorCode(t, rec) != "unknown_session" || gotAuth != "Bearer tok" || gotCT != "application/json" || gotBody != `{"sessionId":"s","input":"i"}` {
		t.Fatalf("forward: %d %s auth=%q ct=%q body=%q", rec.Code, rec.Body, gotAuth, gotCT, gotBody)
	}
	err := p.Forward(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/agent/sessions", nil), "GET", "/v1/agentd/sessions")
	if e, ok := err.(interface{ Error() string }); !ok || !strings.Contains(e.Error(), "agent_unavailable") {
		t.Fatalf("non-JSON answer: %v", err)
	}
	dead := New("127.0.0.1:1", "tok", "")
	if _, err := dead.Summary(req.Context(), nil); err == nil || !strings.Contains(err.Error(), "agent_unavailable") {
		t.Fatalf("dead agentd: %v", err)
	}
}
