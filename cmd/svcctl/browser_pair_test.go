package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
)

// svcctl browser pair prints a code and the WebSocket address; the code
// pairs a plugin; clients lists it with its scopes; grant and revoke-scope
// change them; revoke closes the live connection with 4401.
func TestBrowserPairCommands(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_BROWSER_PAIRING=codes"}})
	code, out, errOut := svcctlJSON(t, d, "browser", "pair", "-ttl", "5m")
	var env struct {
		Data struct {
			Code  string `json:"code"`
			WSURL string `json:"ws_url"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env.Data.Code == "" || env.Data.WSURL != "ws://"+d.Addr+"/ws/browser" {
		t.Fatalf("pair: %d %s %s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: env.Data.WSURL, Code: env.Data.Code, ClientID: "cli-pair"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if code, out, _ = svcctlJSON(t, d, "browser", "grant", "cli-pair", "host-ops"); code != 0 || !strings.Contains(out, `"host-ops"`) {
		t.Fatalf("grant: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "clients"); code != 0 || !strings.Contains(out, `"cli-pair"`) || !strings.Contains(out, `"host-ops"`) || !strings.Contains(out, `"mode": "codes"`) {
		t.Fatalf("clients: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "ls"); code != 0 || !strings.Contains(out, `"scopes"`) || !strings.Contains(out, `"refused"`) {
		t.Fatalf("ls: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "revoke-scope", "cli-pair", "host-ops"); code != 0 || strings.Contains(out, `"host-ops"`) {
		t.Fatalf("revoke-scope: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "grant", "cli-pair", "root"); code != 1 || !strings.Contains(out, "invalid_scope") {
		t.Fatalf("bad scope: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "revoke", "cli-pair"); code != 0 {
		t.Fatalf("revoke: %d %s", code, out)
	}
	var ce *websocket.CloseError
	if err := p.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("after revoke: %v", err)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "revoke", "cli-pair"); code != 1 || !strings.Contains(out, "client_not_paired") {
		t.Fatalf("second revoke: %d %s", code, out)
	}
	if code, _, _ = svcctlJSON(t, d, "browser", "revoke"); code != 2 {
		t.Fatalf("usage exit %d", code)
	}
}
