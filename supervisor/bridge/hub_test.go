package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/systemstate"
)

// nopHost accepts every write and holds no state.
type nopHost struct{}

func (nopHost) Apply(context.Context, string, any) (any, error) { return nil, nil }
func (nopHost) Read(fn func(*raftstore.State))                  { fn(&raftstore.State{}) }
func (nopHost) ReadVersioned(fn func(*raftstore.State)) uint64  { fn(&raftstore.State{}); return 0 }
func (nopHost) StateVersion() uint64                            { return 0 }
func (nopHost) SystemState() systemstate.State                  { return systemstate.State{} }
func (nopHost) SetMode(context.Context, string, string, string) (systemstate.State, error) {
	return systemstate.State{}, nil
}
func (nopHost) AutomationConversations() []bridgeproto.AutomationConversation { return nil }
func (nopHost) AutomationPage(int, string) ([]bridgeproto.AutomationConversation, string) {
	return nil, ""
}

func startTestHub(t *testing.T, cfg Config) (*Hub, string) {
	t.Helper()
	return startTestHubOn(t, cfg, nopHost{})
}

// startTestHubOn is startTestHub over host (a real raft store, say).
func startTestHubOn(t *testing.T, cfg Config, host Host) (*Hub, string) {
	t.Helper()
	cfg.PairingToken = "pair"
	h := New(cfg, host, hclog.NewNullLogger())
	h.Start()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.ServeWS(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	}))
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return h, "ws" + strings.TrimPrefix(srv.URL, "http")
}

// pairClient dials and sends hello; it returns the connection and the
// first message's type, or the close error if the daemon refused.
func pairClient(t *testing.T, url, clientID string) (*websocket.Conn, error) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.WriteJSON(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: clientID}); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var head struct {
		Type string `json:"type"`
	}
	if err := ws.ReadJSON(&head); err != nil {
		return ws, err
	}
	if head.Type != bridgeproto.TypeHelloOK {
		t.Fatalf("first message %q, want hello_ok", head.Type)
	}
	return ws, nil
}

// An authenticated plugin opening connection after connection under new
// clientIds must not grow the hub (goroutines, queues, the conns map)
// without bound; a reconnect under a known clientId still gets in.
func TestLiveClientsAreCapped(t *testing.T) {
	h, url := startTestHub(t, Config{MaxClients: 2})
	for _, id := range []string{"c1", "c2"} {
		if _, err := pairClient(t, url, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	_, err := pairClient(t, url, "c3")
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Fatalf("third client: %v, want close 1013", err)
	}
	if n := h.Connected(); n != 2 {
		t.Fatalf("%d live clients, want 2", n)
	}
	if _, err := pairClient(t, url, "c1"); err != nil {
		t.Fatalf("reconnect of c1 at the cap: %v", err)
	}
	if n := h.Connected(); n != 2 {
		t.Fatalf("%d live clients after reconnect, want 2", n)
	}
}
