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

// Failed hellos are rate-limited per remote address: past the limit even
// a right token is refused unread; the refusals are counted with the last
// reason, and no refusal quotes what was sent.
func TestPairingFailuresAreRateLimited(t *testing.T) {
	h, url := startTestHubOn(t, Config{PairingFailures: 3}, newRaftHost(t))
	for i := 0; i < 3; i++ {
		code, cc := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Credential: "svcb_SECRETV", ClientID: "c1"})
		if code != bridgeproto.ErrCredentialInvalid || cc != CloseUnauthorized {
			t.Fatalf("attempt %d: %s %d", i, code, cc)
		}
	}
	if code, _ := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: "pair", ClientID: "c1"}); code != bridgeproto.ErrPairingRateLimited {
		t.Fatalf("after the limit: %s", code)
	}
	st := h.RefusedPairings()
	if st.Count != 4 || st.LastCode != bridgeproto.ErrPairingRateLimited || st.LastRemote != "127.0.0.1" || strings.Contains(st.LastReason, "SECRETV") {
		t.Fatalf("refused: %+v", st)
	}
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
		if codeHash(strings.ToLower(c)) != codeHash(strings.ReplaceAll(c, "-", " ")) {
			t.Fatal("typing variations hash differently")
		}
	}
}
