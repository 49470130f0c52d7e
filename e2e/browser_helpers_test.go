package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

const testExtensionID = "abcdefghijklmnopabcdefghijklmnop"

// browserEnv is the tuning every browser e2e test runs with: short timers
// so status changes and timeouts happen within the test's time bound.
func browserEnv(extra ...string) []string {
	return append([]string{
		"SVC_BROWSER_EXTENSION_IDS=" + testExtensionID,
		"SVC_BROWSER_ACTION_TIMEOUT_MS=1500",
		"SVC_BROWSER_REQUEST_TIMEOUT_MS=5000",
		"SVC_BROWSER_SWEEP_INTERVAL_MS=200",
		"SVC_BROWSER_STALE_AFTER_MS=60000",
		"SVC_BROWSER_LOST_AFTER_MS=600000",
		"SVC_RELAY_FLUSH_INTERVAL_MS=200",
		"SVC_LOG_LEVEL=debug",
	}, extra...)
}

func startBrowserDaemon(t *testing.T, extraEnv ...string) *harness.Daemon {
	t.Helper()
	d := harness.Start(t, harness.Options{Env: browserEnv(extraEnv...)})
	// With SVCD_E2E_RACE=1 the daemon is race-enabled; a report in its log
	// fails the test that provoked it.
	t.Cleanup(func() {
		if strings.Contains(d.Logs(), "DATA RACE") {
			t.Errorf("the daemon reported a data race:\n%s", d.Logs())
		}
	})
	return d
}

func wsURL(d *harness.Daemon) string { return "ws://" + d.Addr + "/ws/browser" }

// connectPlugin pairs a fake plugin whose pages talk to platform.
func connectPlugin(t *testing.T, d *harness.Daemon, clientID string, platform *fakeplugin.Platform, mod ...func(*fakeplugin.Options)) *fakeplugin.Plugin {
	t.Helper()
	o := fakeplugin.Options{URL: wsURL(d), Token: d.Token, ClientID: clientID}
	if platform != nil {
		o.Platforms = map[string]string{bridgeproto.PlatformA: platform.URL, bridgeproto.PlatformB: platform.URL, bridgeproto.PlatformC: platform.URL}
	}
	for _, m := range mod {
		m(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, o)
	if err != nil {
		t.Fatalf("plugin %s: %v", clientID, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// capture sends credentials and endpoints for platform and waits until the
// read model shows them.
func capture(t *testing.T, d *harness.Daemon, p *fakeplugin.Plugin, platform, account string, headers map[string]string) {
	t.Helper()
	if err := p.Send(bridgeproto.Credentials{Type: bridgeproto.TypeCredentials, Platform: platform, Account: account, Host: "chat.example", Headers: headers, Cookies: map[string]string{"sid": "cookie-value"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(bridgeproto.APIEndpoints{Type: bridgeproto.TypeAPIEndpoints, Platform: platform, Account: account, Host: "chat.example",
		Endpoints: []bridgeproto.Endpoint{{Method: "POST", Path: "/api/complete?key=x", Kind: "completion"}, {Method: "GET", Path: "/api/stream", Streaming: true}}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "records for "+p.ClientID(), func() bool {
		rm := readModel(t, d, "?client_id="+p.ClientID()+"&platform="+platform)
		for _, r := range rm.Records {
			if r.Account == account && r.CredentialFingerprint != "" && len(r.Endpoints) == 2 {
				return true
			}
		}
		return false
	})
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitTB(t, timeout, what, cond)
}

type recordView struct {
	Key                   string            `json:"key"`
	ClientID              string            `json:"client_id"`
	Platform              string            `json:"platform"`
	Account               string            `json:"account"`
	Browser               string            `json:"browser"`
	Host                  string            `json:"host"`
	View                  string            `json:"view"`
	Status                string            `json:"status"`
	CredentialFingerprint string            `json:"credential_fingerprint"`
	HeaderNames           []string          `json:"header_names"`
	HeaderCount           int               `json:"header_count"`
	CookieCount           int               `json:"cookie_count"`
	Endpoints             []map[string]any  `json:"endpoints"`
	EndpointMetadata      map[string]any    `json:"endpoint_metadata"`
	Timestamps            map[string]string `json:"timestamps"`
	LastActionResult      map[string]any    `json:"last_action_result"`
	ShellRuntime          any               `json:"shell_runtime"`
}

type browserModel struct {
	Records []recordView `json:"records"`
	Clients []struct {
		ClientID           string         `json:"client_id"`
		Connected          bool           `json:"connected"`
		LastConnectedAt    string         `json:"last_connected_at"`
		LastDisconnectedAt string         `json:"last_disconnected_at"`
		LastActionResult   map[string]any `json:"last_action_result"`
	} `json:"clients"`
	ShellRuntime            any              `json:"shell_runtime"`
	LastActionResult        map[string]any   `json:"last_action_result"`
	AutomationConversations []map[string]any `json:"automation_conversations"`
	Policy                  struct {
		DefaultStaleLeaseMs int64 `json:"default_stale_lease_ms"`
		RelayAvailable      bool  `json:"relay_available"`
		Targets             map[string]struct {
			LastActivityAt  string         `json:"last_activity_at"`
			StaleSweepCount int            `json:"stale_sweep_count"`
			Relay           map[string]any `json:"relay"`
			InFlight        int            `json:"in_flight"`
			Waiting         int            `json:"waiting"`
		} `json:"targets"`
	} `json:"policy"`
}

func readModel(t *testing.T, d *harness.Daemon, query string) browserModel {
	t.Helper()
	resp := d.Do(http.MethodGet, "/v1/browser"+query, nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/browser%s: %d %s", query, resp.Status, resp.Body)
	}
	var env envelope[browserModel]
	resp.Decode(t, &env)
	return env.Data
}

// wantError checks status and error code of a JSON error answer.
func wantError(t *testing.T, resp *harness.Response, status int, code string) {
	t.Helper()
	if resp.Status != status {
		t.Fatalf("status %d, want %d: %s", resp.Status, status, resp.Body)
	}
	var env envelope[any]
	resp.Decode(t, &env)
	if env.OK || env.Error.Code != code {
		t.Fatalf("error code %q, want %q: %s", env.Error.Code, code, resp.Body)
	}
}

type sseEvent struct {
	Name string
	Data map[string]any
}

// postSSE sends a request with responseMode sse and collects every event
// until the stream ends (or stop returns true, which abandons the stream).
func postSSE(t *testing.T, ctx context.Context, url string, body any, stop func(sseEvent) bool) (int, []sseEvent, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		var raw strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			raw.WriteString(sc.Text())
		}
		return resp.StatusCode, nil, raw.String()
	}
	var events []sseEvent
	var raw strings.Builder
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", line, err)
			}
			ev := sseEvent{Name: name, Data: m}
			events = append(events, ev)
			if stop != nil && stop(ev) {
				return resp.StatusCode, events, raw.String()
			}
		}
	}
	return resp.StatusCode, events, raw.String()
}
