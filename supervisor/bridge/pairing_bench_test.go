package bridge

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/keyderive"
)

// pairedHost holds one paired client, so a credential hello can succeed.
type pairedHost struct {
	nopHost
	st *raftstore.State
}

func (h pairedHost) Read(fn func(*raftstore.State)) { fn(h.st) }

// BenchmarkHello pairs one connection per iteration (dial, hello,
// hello_ok, close), with the shared token (the baseline) and with a bridge
// credential (hash + constant-time compare + state read), interleaved in
// one run so the ratio holds under a loaded machine.
func BenchmarkHello(b *testing.B) {
	const cred = "svcb_benchcredentialbenchcredentialbenchcre"
	st := &raftstore.State{}
	key := []byte("bench-pairing-hash-key")
	st.Pairing.Clients = map[string]*raftstore.PairedClient{"c1": {ClientID: "c1", CredHash: keyderive.HexMAC(key, cred), Keyed: true, Scopes: []string{raftstore.ScopeBridge}}}
	h := New(Config{PairingToken: "pair", MaxUnpaired: 1024, HashKey: key}, pairedHost{st: st}, hclog.NewNullLogger())
	h.Start()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = h.ServeWS(w, r) }))
	defer func() { h.Close(); srv.Close() }()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	hello := func(b *testing.B, m bridgeproto.Hello) {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = ws.WriteJSON(m)
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var head struct{ Type string }
		if err := ws.ReadJSON(&head); err != nil || head.Type != bridgeproto.TypeHelloOK {
			b.Fatalf("%v %q", err, head.Type)
		}
		ws.Close()
	}
	b.Run("token", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			hello(b, bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: "c1"})
		}
	})
	b.Run("credential", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			hello(b, bridgeproto.Hello{Type: bridgeproto.TypeHello, Credential: cred, ClientID: "c1"})
		}
	})
}
