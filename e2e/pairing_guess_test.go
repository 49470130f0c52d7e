package e2e

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// guessFrom sends one code hello from the loopback source src (any address
// in 127.0.0.0/8 can be bound on Linux) and returns the refusal's code.
func guessFrom(t *testing.T, d *harness.Daemon, src net.IP, code, clientID string) string {
	t.Helper()
	dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second, NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}).DialContext}
	ws, _, err := dialer.Dial(wsURL(d), nil)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	defer ws.Close()
	if err := ws.WriteJSON(bridgeproto.Hello{Type: bridgeproto.TypeHello, Code: code, ClientID: clientID}); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var e bridgeproto.Error
	if err := ws.ReadJSON(&e); err != nil {
		t.Fatalf("guess from %s: no error frame: %v", src, err)
	}
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("guess from %s: want close 4401, got %v", src, err)
	}
	return e.Code
}

// rotatingSource is the i-th source of a spray through 127.0.0.0/8; every
// fourth is 127.0.0.1 itself, where the owner's extension connects from.
func rotatingSource(i int) net.IP {
	if i%4 == 0 {
		return net.IPv4(127, 0, 0, 1)
	}
	return net.IPv4(127, byte(1+i/60000), byte(i/250%240), byte(2+i%250))
}

// wrongCode is a well-formed code that was never issued.
func wrongCode(i int) string { return fmt.Sprintf("WR%02d-%04d", i/10000%100, i%10000) }

// guessFlood makes n wrong code guesses from rotating sources, each for a
// different client id, and counts the refusal codes.
func guessFlood(t *testing.T, d *harness.Daemon, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		got[guessFrom(t, d, rotatingSource(i), wrongCode(i), fmt.Sprintf("guesser-%d", i))]++
	}
	return got
}

// Issue 34 §1-2: code guesses from rotating 127/8 sources are refused past
// the global bound (60 a minute), whatever the source or client id; a
// paired client's credential hello from 127.0.0.1 still pairs during the
// flood; the flood writes a bounded number of log lines (summaries).
func TestCodeGuessesFromRotatingSourcesHitTheGlobalBound(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: issueCode(t, d, nil), ClientID: "owner-1"})
	cred := p.HelloOK().Credential
	p.Close()
	off := len(d.Logs())
	start := time.Now()
	got := guessFlood(t, d, 1000)
	took := time.Since(start)
	t.Logf("1000 guesses from rotating sources in %s: %v", took, got)
	if got[bridgeproto.ErrCodeInvalid] > 60 || got[bridgeproto.ErrCodeInvalid]+got[bridgeproto.ErrPairingRateLimited] != 1000 {
		t.Fatalf("guesses looked at: %d (bound 60 a minute); refusals %v", got[bridgeproto.ErrCodeInvalid], got)
	}
	// A fresh source and client id: still past the global bound.
	if c := guessFrom(t, d, net.IPv4(127, 99, 99, 99), "ZZZZ-ZZZZ", "fresh-guesser"); c != bridgeproto.ErrPairingRateLimited {
		t.Fatalf("a guess from a fresh source after the flood: %s", c)
	}
	// The owner's credential, from 127.0.0.1 (where a quarter of the flood
	// came from), pairs at once.
	p = dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: cred, ClientID: "owner-1"})
	p.Close()
	if n := strings.Count(d.Logs()[off:], "refused at pairing"); n > 100 {
		t.Fatalf("the flood wrote %d log lines about refusals (want a bounded summary)", n)
	}
}
