package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// issueCode asks the token-guarded route for a pairing code.
func issueCode(t *testing.T, d *harness.Daemon, body map[string]any) string {
	t.Helper()
	resp := d.DoAuth("POST", "/v1/browser/pairings", body)
	var out struct {
		Data struct {
			Code  string `json:"code"`
			WSURL string `json:"ws_url"`
		} `json:"data"`
	}
	resp.Decode(t, &out)
	if resp.Status != 200 || len(out.Data.Code) != 9 || !strings.HasSuffix(out.Data.WSURL, "/ws/browser") {
		t.Fatalf("pairing code: %d %s", resp.Status, resp.Body)
	}
	return out.Data.Code
}

// dialRefused sends a hello and returns the error frame's code and the
// close code the daemon answered with.
func dialRefused(t *testing.T, d *harness.Daemon, o fakeplugin.Options) (string, int) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(wsURL(d), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteJSON(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: o.Token, Code: o.Code, Credential: o.Credential, ClientID: o.ClientID}); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var e bridgeproto.Error
	if err := ws.ReadJSON(&e); err != nil || e.Type != bridgeproto.TypeError {
		t.Fatalf("want an error frame before the close, got %+v, %v", e, err)
	}
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("want a close, got %v", err)
	}
	return e.Code, ce.Code
}

func dialPlugin(t *testing.T, o fakeplugin.Options) *fakeplugin.Plugin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, o)
	if err != nil {
		t.Fatalf("plugin %s: %v", o.ClientID, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type pairedClients struct {
	Data struct {
		Clients []struct {
			ClientID  string   `json:"client_id"`
			Paired    bool     `json:"paired"`
			Connected bool     `json:"connected"`
			Auth      string   `json:"auth"`
			Scopes    []string `json:"scopes"`
		} `json:"clients"`
		Pairing struct {
			Mode    string `json:"mode"`
			Refused struct {
				Count      int    `json:"count"`
				LastCode   string `json:"last_code"`
				LastReason string `json:"last_reason"`
			} `json:"refused"`
		} `json:"pairing"`
	} `json:"data"`
}

// The whole protocol of issue 25 §1 against the real daemon with the
// default browser_pairing = "codes": a code gives a credential once; the
// credential opens the bridge (also after a restart) and no HTTP route;
// reused, expired and shared-token hellos are refused with an error frame
// and 4401; the refusals are counted; revoke closes the live connection.
func TestPairingByCodeOverTheBridge(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	code := issueCode(t, d, nil)
	if strings.Contains(d.Logs(), code) || strings.Contains(d.Logs(), strings.ReplaceAll(code, "-", "")) {
		t.Fatal("the daemon logged the pairing code")
	}
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: strings.ToLower(code), ClientID: "paired-1"})
	ok := p.HelloOK()
	if !strings.HasPrefix(ok.Credential, "svcb_") || strings.Join(ok.Scopes, ",") != "bridge" {
		t.Fatalf("hello_ok %+v", ok)
	}
	cred := ok.Credential
	if strings.Contains(d.Logs(), cred) {
		t.Fatal("the daemon logged the credential")
	}
	// The credential is no token: every token route refuses it.
	for _, path := range []string{"/v1/exec", "/v1/files/read", "/v1/browser/pairings"} {
		if r := d.Do("POST", path, map[string]any{"command": "true", "path": "/etc/hostname"}, "Authorization: Bearer "+cred); r.Status != 401 {
			t.Fatalf("%s with the credential: %d %s", path, r.Status, r.Body)
		}
	}
	// Reused code, a shared-token hello under "codes", a wrong credential.
	if c, cc := dialRefused(t, d, fakeplugin.Options{Code: code, ClientID: "other"}); c != bridgeproto.ErrCodeInvalid || cc != 4401 {
		t.Fatalf("reused code: %s %d", c, cc)
	}
	if c, cc := dialRefused(t, d, fakeplugin.Options{Token: d.Token, ClientID: "tok"}); c != bridgeproto.ErrTokenPairingOff || cc != 4401 {
		t.Fatalf("token hello: %s %d", c, cc)
	}
	if c, cc := dialRefused(t, d, fakeplugin.Options{Credential: cred, ClientID: "someone-else"}); c != bridgeproto.ErrCredentialInvalid || cc != 4401 {
		t.Fatalf("credential of another client: %s %d", c, cc)
	}
	expiring := issueCode(t, d, map[string]any{"ttl": "300ms"})
	time.Sleep(500 * time.Millisecond)
	if c, cc := dialRefused(t, d, fakeplugin.Options{Code: expiring, ClientID: "late"}); c != bridgeproto.ErrCodeExpired || cc != 4401 {
		t.Fatalf("expired code: %s %d", c, cc)
	}
	var cl pairedClients
	d.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
	if cl.Data.Pairing.Mode != "codes" || cl.Data.Pairing.Refused.Count != 4 || cl.Data.Pairing.Refused.LastCode != bridgeproto.ErrCodeExpired {
		t.Fatalf("refusals: %+v", cl.Data.Pairing)
	}
	if len(cl.Data.Clients) != 1 || !cl.Data.Clients[0].Paired || !cl.Data.Clients[0].Connected || cl.Data.Clients[0].Auth != "credential" {
		t.Fatalf("clients: %+v", cl.Data.Clients)
	}

	// The credential survives a restart (raft) and opens the bridge again.
	p.Close()
	d.Restart()
	p = dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: cred, ClientID: "paired-1"})
	if p.HelloOK().Credential != "" {
		t.Fatal("a credential hello got a new credential")
	}
	// Revoke closes the live connection at once with 4401.
	if r := d.DoAuth("POST", "/v1/browser/clients/paired-1/revoke", nil); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	err := p.WaitClosed(5 * time.Second)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("after revoke: %v", err)
	}
	if c, cc := dialRefused(t, d, fakeplugin.Options{Credential: cred, ClientID: "paired-1"}); c != bridgeproto.ErrCredentialInvalid || cc != 4401 {
		t.Fatalf("revoked credential: %s %d", c, cc)
	}
	if r := d.DoAuth("POST", "/v1/browser/clients/paired-1/revoke", nil); r.Status != 404 {
		t.Fatalf("second revoke: %d %s", r.Status, r.Body)
	}
}

// A code-paired client has scope bridge: an exec block its conversation
// reports fails with a scope error in the report until host-ops is granted,
// then runs; the task log names the client, conversation and message.
func TestPairedClientScopeGatesHostOps(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: issueCode(t, d, nil), ClientID: "scoped-1"})
	ref := bridgeproto.ConversationRef{Platform: "platform_b", LocalConversationID: "scoped-conv", RemoteConversationID: "rb-9"}
	seen := 0
	report := func(msgID string) string {
		t.Helper()
		if err := p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, ConversationRef: ref, MessageID: msgID,
			Text: "```instr\n@svc::exec::echo scoped-run\n```\n"}); err != nil {
			t.Fatal(err)
		}
		var injects []fakeplugin.Msg
		waitUntil(t, 15*time.Second, "the report of "+msgID, func() bool {
			injects = injects[:0]
			for _, m := range p.Messages() {
				if m.Type == bridgeproto.TypeConversationInject {
					injects = append(injects, m)
				}
			}
			return len(injects) > seen
		})
		seen = len(injects)
		var in bridgeproto.ConversationInject
		_ = injects[seen-1].Decode(&in)
		return in.Text
	}
	if txt := report("m-1"); !strings.Contains(txt, "失败") || !strings.Contains(txt, "scope") || !strings.Contains(txt, "svcctl browser grant scoped-1 host-ops") {
		t.Fatalf("report without host-ops:\n%s", txt)
	}
	if r := d.DoAuth("POST", "/v1/browser/clients/scoped-1/scopes", map[string]any{"scope": "host-ops", "grant": true}); r.Status != 200 {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	if txt := report("m-2"); !strings.Contains(txt, "成功") || !strings.Contains(txt, "scoped-run") {
		t.Fatalf("report with host-ops:\n%s", txt)
	}
	var cl pairedClients
	d.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
	if len(cl.Data.Clients) != 1 || strings.Join(cl.Data.Clients[0].Scopes, ",") != "bridge,host-ops" {
		t.Fatalf("clients: %+v", cl.Data.Clients)
	}
	var tasks struct {
		Data struct {
			Tasks []struct {
				ID string `json:"task_id"`
			} `json:"tasks"`
		} `json:"data"`
	}
	d.Do("GET", "/v1/tasks", nil).Decode(t, &tasks)
	logs := ""
	for _, tk := range tasks.Data.Tasks {
		logs += string(d.Do("GET", "/v1/tasks/"+tk.ID+"/logs", nil).Body)
	}
	for _, want := range []string{"failed: scope (client=scoped-1 conversation=scoped-conv message=m-1)", "succeeded (client=scoped-1 conversation=scoped-conv message=m-2)"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("task logs lack %q:\n%s", want, logs)
		}
	}
	if r := d.DoAuth("POST", "/v1/browser/clients/scoped-1/scopes", map[string]any{"scope": "host-ops", "grant": false}); r.Status != 200 {
		t.Fatalf("revoke-scope: %d %s", r.Status, r.Body)
	}
	if txt := report("m-3"); !strings.Contains(txt, "scope") || strings.Contains(txt, "成功") {
		t.Fatalf("report after revoke-scope:\n%s", txt)
	}
}
