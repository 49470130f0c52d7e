package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// helloRefusal sends hello and returns the error frame's code and the close code.
func helloRefusal(t *testing.T, url string, hello bridgeproto.Hello) (string, int) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteJSON(hello); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var e bridgeproto.Error
	if err := ws.ReadJSON(&e); err != nil {
		t.Fatalf("no error frame: %v", err)
	}
	_, _, err = ws.ReadMessage()
	ce, _ := err.(*websocket.CloseError)
	if ce == nil {
		t.Fatalf("no close: %v", err)
	}
	return e.Code, ce.Code
}

// Failed code hellos are rate-limited per remote address: past the limit
// even a right code is refused unread; the refusals are counted with the
// last reason, and no refusal quotes what was sent. Wrong credentials (256
// bits: nothing to guess) never count toward a limit, and a credential or
// token hello is never refused for failed codes (issue 34 §1).
func TestPairingFailuresAreRateLimited(t *testing.T) {
	h, url := startTestHubOn(t, Config{PairingFailures: 3}, newRaftHost(t))
	for i := 0; i < 5; i++ {
		code, cc := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Credential: "svcb_SECRETV", ClientID: "c1"})
		if code != bridgeproto.ErrCredentialInvalid || cc != CloseUnauthorized {
			t.Fatalf("credential attempt %d: %s %d", i, code, cc)
		}
	}
	for i := 0; i < 3; i++ {
		if code, _ := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Code: "SECRETV1", ClientID: "c1"}); code != bridgeproto.ErrCodeInvalid {
			t.Fatalf("code attempt %d: %s", i, code)
		}
	}
	if code, _ := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Code: "SECRETV1", ClientID: "c2"}); code != bridgeproto.ErrPairingRateLimited {
		t.Fatalf("a code after the limit: %s", code)
	}
	// The token (a right one) still pairs from the same address.
	p := dialOK(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: "c3"})
	p.Close()
	st := h.RefusedPairings()
	if st.Count != 9 || st.LastCode != bridgeproto.ErrPairingRateLimited || st.LastRemote != "127.0.0.1" || strings.Contains(st.LastReason, "SECRETV") {
		t.Fatalf("refused: %+v", st)
	}
}

// dialOK sends hello and wants hello_ok.
func dialOK(t *testing.T, url string, hello bridgeproto.Hello) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteJSON(hello); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ok bridgeproto.HelloOK
	if err := ws.ReadJSON(&ok); err != nil || ok.Type != bridgeproto.TypeHelloOK {
		t.Fatalf("want hello_ok, got %+v, %v", ok, err)
	}
	return ws
}

// Under CodesOnly a token hello is refused with token_pairing_disabled.
func TestCodesOnlyRefusesTheToken(t *testing.T) {
	_, url := startTestHub(t, Config{CodesOnly: true})
	if code, cc := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: "c1"}); code != bridgeproto.ErrTokenPairingOff || cc != CloseUnauthorized {
		t.Fatalf("%s %d", code, cc)
	}
}

func TestPairingCodeShape(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		c := NewPairingCode()
		if len(c) != 9 || c[4] != '-' || strings.ContainsAny(c, "01IO") || seen[c] {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
		if normCode(strings.ToLower(c)) != normCode(strings.ReplaceAll(c, "-", " ")) {
			t.Fatal("typing variations hash differently")
		}
	}
}
