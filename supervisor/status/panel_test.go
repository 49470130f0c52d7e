package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/systemstate"
)

func TestPlural(t *testing.T) {
	lag := uint64(1)
	for _, c := range []struct {
		n    any
		noun string
		want string
	}{{1, "restart", "1 restart"}, {0, "restart", "0 restarts"}, {2, "restart", "2 restarts"}, {&lag, "entry", "1 entry"}, {int64(3), "entry", "3 entries"}, {(*uint64)(nil), "entry", "0 entries"}, {2, "day", "2 days"}} {
		if got := Plural(c.n, c.noun); got != c.want {
			t.Errorf("Plural(%v, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

// A full snapshot: the panel shows the browser clients, the cluster with a
// standby's lag, each worker's pid, uptime, restarts and last exit, the
// version and uptime; the JSON carries the same under stable names.
func TestPanelShowsEverything(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	seen := now.Add(-5 * time.Second)
	wStart := now.Add(-90 * time.Second)
	contact := now.Add(-2 * time.Second)
	lag := uint64(3)
	retry := now.Add(5 * time.Minute)
	snap := Assemble(Input{
		System:    &systemstate.State{Mode: "running", ActiveRuns: []systemstate.Run{{ID: "r1"}}},
		Source:    "local",
		Version:   "1.2.3",
		StartedAt: now.Add(-3 * time.Hour),
		Browser: &Browser{PairingMode: "codes", Connected: 1, Refused: 2, RefusedLast: "unknown code", Clients: []Client{
			{ClientID: "chrome-1", Browser: "chrome", Connected: true, Paired: true, Scopes: []string{"bridge", "host-ops"}, Platforms: []string{"platform_a"}, LastSeenAt: &seen},
			{ClientID: "old-2", Scopes: []string{}, Platforms: []string{}},
		}},
		Workers: []Worker{{Name: "relay", State: "failed", Restarts: 5, LastError: "crash loop: 5 exits in 60s", NextRetryAt: &retry},
			{Name: "hostops", State: "running", Pid: 4242, StartedAt: &wStart, Restarts: 1, LastExit: &Exit{Code: -1, Signal: "SIGKILL", At: wStart}}},
		Cluster: []Member{{NodeID: "n1", Role: "leader", APIAddr: "127.0.0.1:1"}, {NodeID: "n2", Role: "standby", Self: true, LagEntries: &lag, LastContact: &contact}},
		Now:     now,
	})
	var html bytes.Buffer
	if err := RenderHTML(&html, snap); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		"version 1.2.3", "up 3 h",
		"Browser chrome-1", "connected", "paired", "bridge, host-ops", "platform_a", "last seen 5 s ago",
		"Browser old-2", "disconnected", "shared token", "last seen never",
		"1 client connected", "pairing by codes", "2 hellos refused at pairing", "unknown code",
		"Node n2 (this node)", "standby", "lag 3 entries", "leader last heard 2 s ago",
		"Worker hostops", "pid 4242", "up 1 min 30 s", "1 restart ·", "last exit SIGKILL (1 min 30 s ago)",
		"Active runs</th><td>1<",
		"Worker relay", "failed", "5 restarts", "crash loop: 5 exits in 60s", "retries in 5 min",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("panel lacks %q", want)
		}
	}
	if strings.Contains(page, "1 restarts") {
		t.Error(`panel says "1 restarts"`)
	}
	b, _ := json.Marshal(snap)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["version"] != "1.2.3" || m["uptime_ms"] != float64(3*time.Hour/time.Millisecond) || m["active_run_count"] != float64(1) {
		t.Errorf("JSON = %s", b)
	}
	if _, ok := m["active_runs"]; ok {
		t.Errorf("JSON still has active_runs (an array in /v1/system/state): %s", b)
	}
	if v, ok := m["updated_at"]; !ok || v != nil {
		t.Errorf("updated_at before the first write = %v (present %v), want null", v, ok)
	}
}

// The status wrapper has no daemon process facts: no version row, no
// browser section, and it still renders.
func TestPanelWrapperMinimal(t *testing.T) {
	snap := Assemble(Input{Err: errString("connection refused"), Source: "http://x", Now: time.Now()})
	var html bytes.Buffer
	if err := RenderHTML(&html, snap); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "not reachable") || strings.Contains(html.String(), "Browser clients") {
		t.Errorf("wrapper panel:\n%s", html.String())
	}
}

// A daemon no browser has reached says how to pair one.
func TestPanelSaysHowToPair(t *testing.T) {
	st := &systemstate.State{Mode: "running"}
	snap := Assemble(Input{System: st, Browser: &Browser{PairingMode: "codes", Clients: []Client{}}, Now: time.Now()})
	var html bytes.Buffer
	if err := RenderHTML(&html, snap); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0 clients connected", "No browser has connected yet", "svcctl browser pair"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("panel lacks %q", want)
		}
	}
	b, _ := json.Marshal(snap)
	if !strings.Contains(string(b), `"clients":[]`) {
		t.Errorf("no clients is not []: %s", b)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestHumanMs(t *testing.T) {
	for ms, want := range map[int64]string{500: "under 1 s", 42_000: "42 s", 60_000: "1 min", 185_000: "3 min 5 s", 3_600_000: "1 h", 7_800_000: "2 h 10 min", 26 * 3_600_000: "1 d 2 h"} {
		if got := HumanMs(ms); got != want {
			t.Errorf("HumanMs(%d) = %q, want %q", ms, got, want)
		}
	}
}

// The daemon's own panel carries the pairing button (the token is pasted,
// never rendered); the status wrapper's copy, which fronts another
// process, has none and reloads itself instead.
func TestPanelPairButtonOnlyOnTheDaemon(t *testing.T) {
	render := func(source string) string {
		var html bytes.Buffer
		if err := RenderHTML(&html, Assemble(Input{System: &systemstate.State{Mode: "running"}, Source: source, Now: time.Now()})); err != nil {
			t.Fatal(err)
		}
		return html.String()
	}
	local := render("local")
	for _, want := range []string{`id="pair-button"`, `type="password"`, "/v1/browser/pairings", `id="live"`, "<noscript><meta http-equiv=\"refresh\""} {
		if !strings.Contains(local, want) {
			t.Errorf("daemon panel lacks %s", want)
		}
	}
	if strings.Contains(local, "sessionStorage") || strings.Contains(local, "localStorage") || strings.Contains(local, "document.cookie") {
		t.Error("the panel stores the token")
	}
	wrapped := render("http://127.0.0.1:9")
	if strings.Contains(wrapped, "pair-button") || !strings.Contains(wrapped, "location.reload") {
		t.Errorf("wrapper panel:\n%s", wrapped)
	}
}
