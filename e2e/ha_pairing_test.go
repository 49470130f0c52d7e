package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Pairing codes and bridge credentials are raft state (issue 25 §1:
// credentials "survive restarts (raft)"), so a leader switch keeps them: a
// client paired on the old leader opens the bridge of the new one with its
// credential and works there; a code issued before the switch and not used
// yet pairs after it; a revoke on the new leader closes the client at once
// with 4401; the old leader rejoins and knows the revoke. Refused-hello
// counts are raft state too and outlive the leader that counted them.
func TestHAPairingSurvivesLeaderSwitch(t *testing.T) {
	t.Parallel()
	c := startHAClusterEnv(t, browserEnv("SVC_BROWSER_PAIRING=codes"))
	if r, _ := role(t, c.n1); r != "leader" {
		t.Fatalf("n1 role %s", r)
	}
	used := issueCode(t, c.n1, nil)
	spare := issueCode(t, c.n2, map[string]any{"scopes": []string{"host-ops"}}) // forwarded to the leader
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(c.n1), Code: used, ClientID: "ha-paired"})
	cred := p.HelloOK().Credential
	if !strings.HasPrefix(cred, "svcb_") {
		t.Fatalf("hello_ok on the leader: %+v", p.HelloOK())
	}

	// A refused hello on the leader: its count reaches the standby through
	// raft (the leader flushes refusals once a second) and so outlives the
	// leader.
	if code, cc := dialRefused(t, c.n1, fakeplugin.Options{Code: "ZZZZ-ZZZZ", ClientID: "ha-unpaired"}); code != bridgeproto.ErrCodeInvalid || cc != 4401 {
		t.Fatalf("made-up code: %s %d", code, cc)
	}
	refusedOn := func(d *harness.Daemon) int {
		var cl pairedClients
		d.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
		return cl.Data.Pairing.Refused.Count
	}
	waitUntil(t, 10*time.Second, "the refusal replicated to the standby", func() bool { return refusedOn(c.n2) == 1 })

	c.n1.Kill()
	waitUntil(t, 15*time.Second, "n2 to lead", func() bool { r, _ := role(t, c.n2); return r == "leader" })
	if err := p.WaitClosed(5 * time.Second); err == nil {
		t.Log("the plugin's connection to the killed leader ended cleanly")
	}

	// The credential opens the new leader's bridge, and the bridge works:
	// what the client captures lands in the new leader's state.
	p2 := dialPlugin(t, fakeplugin.Options{URL: wsURL(c.n2), Credential: cred, ClientID: "ha-paired"})
	if ok := p2.HelloOK(); ok.Credential != "" || strings.Join(ok.Scopes, ",") != "bridge" {
		t.Fatalf("credential hello on the new leader: %+v", ok)
	}
	capture(t, c.n2, p2, bridgeproto.PlatformB, "acct-ha", map[string]string{"authorization": "Bearer platform-secret"})
	if n := refusedOn(c.n2); n != 1 {
		t.Fatalf("refused count on the new leader: %d", n)
	}
	var cl pairedClients
	c.n2.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
	if len(cl.Data.Clients) != 1 || !cl.Data.Clients[0].Connected || cl.Data.Clients[0].Auth != "credential" {
		t.Fatalf("clients on the new leader: %+v", cl.Data.Clients)
	}

	// The code issued before the switch and not used yet pairs now, with
	// the scopes it was issued with; a second use is refused.
	p3 := dialPlugin(t, fakeplugin.Options{URL: wsURL(c.n2), Code: spare, ClientID: "ha-late"})
	if ok := p3.HelloOK(); !strings.HasPrefix(ok.Credential, "svcb_") || strings.Join(ok.Scopes, ",") != "bridge,host-ops" {
		t.Fatalf("spare code on the new leader: %+v", ok)
	}
	if code, cc := dialRefused(t, c.n2, fakeplugin.Options{Code: spare, ClientID: "again"}); code != bridgeproto.ErrCodeInvalid || cc != 4401 {
		t.Fatalf("spare code reused: %s %d", code, cc)
	}

	// Revoke on the new leader closes the connection with 4401.
	if r := c.n2.DoAuth("POST", "/v1/browser/clients/ha-paired/revoke", nil); r.Status != 200 {
		t.Fatalf("revoke on the new leader: %d %s", r.Status, r.Body)
	}
	err := p2.WaitClosed(5 * time.Second)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("after revoke on the new leader: %v", err)
	}

	// The old leader rejoins as a standby, catches up, and leads again
	// knowing the revoke: the revoked credential stays refused there.
	c.n1.Restart()
	waitUntil(t, 20*time.Second, "n1 to rejoin as standby", func() bool { r, _ := role(t, c.n1); return r == "standby" })
	waitUntil(t, 10*time.Second, "n1 to apply the revoke", func() bool {
		var cl pairedClients
		c.n1.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
		for _, x := range cl.Data.Clients {
			if x.ClientID == "ha-paired" && x.Paired {
				return false
			}
		}
		return true
	})
	p3.Close()
	c.n2.Kill()
	waitUntil(t, 15*time.Second, "n1 to lead again", func() bool { r, _ := role(t, c.n1); return r == "leader" })
	if code, cc := dialRefused(t, c.n1, fakeplugin.Options{Credential: cred, ClientID: "ha-paired"}); code != bridgeproto.ErrCredentialInvalid || cc != 4401 {
		t.Fatalf("revoked credential on the old leader: %s %d", code, cc)
	}
	late := p3.HelloOK().Credential
	p4 := dialPlugin(t, fakeplugin.Options{URL: wsURL(c.n1), Credential: late, ClientID: "ha-late"})
	if ok := p4.HelloOK(); strings.Join(ok.Scopes, ",") != "bridge,host-ops" {
		t.Fatalf("the late client on the old leader: %+v", ok)
	}
}
