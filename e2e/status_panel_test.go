package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// statusDoc is the part of GET /v1/status the panel test reads.
type statusDoc struct {
	Version        string          `json:"version"`
	StartedAt      *time.Time      `json:"started_at"`
	UptimeMs       int64           `json:"uptime_ms"`
	UpdatedAt      json.RawMessage `json:"updated_at"`
	ActiveRunCount *int            `json:"active_run_count"`
	ActiveRuns     json.RawMessage `json:"active_runs"`
	Browser        *struct {
		PairingMode string `json:"pairing_mode"`
		Connected   int    `json:"connected"`
		Clients     []struct {
			ClientID   string     `json:"client_id"`
			Connected  bool       `json:"connected"`
			Paired     bool       `json:"paired"`
			Scopes     []string   `json:"scopes"`
			Platforms  []string   `json:"platforms"`
			LastSeenAt *time.Time `json:"last_seen_at"`
		} `json:"clients"`
	} `json:"browser"`
	Cluster []struct {
		NodeID string `json:"node_id"`
		Role   string `json:"role"`
		Self   bool   `json:"self"`
	} `json:"cluster"`
	Workers []struct {
		Name      string     `json:"name"`
		State     string     `json:"state"`
		Pid       int        `json:"pid"`
		StartedAt *time.Time `json:"started_at"`
		Restarts  int        `json:"restarts"`
	} `json:"workers"`
}

// TestStatusPanelShowsTheDaemon: /v1/status carries the browser clients,
// the cluster, the workers' processes, version and uptime, and the panel
// rendered by real headless Chromium shows them as text.
func TestStatusPanelShowsTheDaemon(t *testing.T) {
	d := startBrowserDaemon(t)
	platform := fakeplugin.NewPlatform("s3cret")
	t.Cleanup(platform.Close)
	p := connectPlugin(t, d, "panel-client", platform)
	capture(t, d, p, bridgeproto.PlatformA, "acct", map[string]string{"authorization": "Bearer x"})

	var env envelope[statusDoc]
	d.Do("GET", "/v1/status", nil).Decode(t, &env)
	st := env.Data
	if st.Version == "" || st.StartedAt == nil || st.UptimeMs <= 0 {
		t.Errorf("version/uptime: %q %v %d", st.Version, st.StartedAt, st.UptimeMs)
	}
	if string(st.UpdatedAt) != "null" {
		t.Errorf("updated_at before the first mode write = %s, want null", st.UpdatedAt)
	}
	if st.ActiveRunCount == nil || *st.ActiveRunCount != 0 || st.ActiveRuns != nil {
		t.Errorf("active runs: count %v, active_runs %s (an array in /v1/system/state; a count here is active_run_count)", st.ActiveRunCount, st.ActiveRuns)
	}
	if st.Browser == nil || st.Browser.Connected != 1 || len(st.Browser.Clients) != 1 {
		t.Fatalf("browser: %+v", st.Browser)
	}
	c := st.Browser.Clients[0]
	if c.ClientID != "panel-client" || !c.Connected || c.Paired || c.LastSeenAt == nil || strings.Join(c.Platforms, ",") != bridgeproto.PlatformA || c.Scopes == nil {
		t.Errorf("client row: %+v", c)
	}
	if len(st.Cluster) != 1 || st.Cluster[0].Role != "leader" || !st.Cluster[0].Self {
		t.Errorf("cluster: %+v", st.Cluster)
	}
	if len(st.Workers) == 0 {
		t.Fatal("no workers")
	}
	for _, w := range st.Workers {
		if w.State == "running" && (w.Pid <= 0 || w.StartedAt == nil) {
			t.Errorf("worker %+v: running without pid or start time", w)
		}
	}

	// The same panel in a real browser: its text, and a screenshot to look at.
	dir := t.TempDir()
	url := d.URL + "/v1/status/ui"
	shot := filepath.Join(dir, "panel.png")
	if out := os.Getenv("SVCD_PANEL_SCREENSHOT"); out != "" {
		shot = out
	}
	chromium := func(args ...string) []byte {
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1200,1600"}
		cmd := exec.Command("/usr/bin/chromium", append(base, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	dom := string(chromium("--dump-dom", url))
	for _, want := range []string{"Browser clients", "Browser panel-client", "connected", "shared token", bridgeproto.PlatformA, "last seen",
		"Cluster", "(this node)", "leader", "Workers", "Worker hostops", "pid ", "version " + st.Version, "up "} {
		if !strings.Contains(dom, want) {
			t.Errorf("the panel's DOM lacks %q", want)
		}
	}
	if strings.Contains(dom, "s3cret") || strings.Contains(dom, d.Token) || strings.Contains(dom, "Bearer x") {
		t.Fatal("the panel shows a secret")
	}
	chromium("--screenshot="+shot, url)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
}

// TestEmptyListsAreArrays: on a fresh daemon every list a GET route answers
// is [] (never null), and updated_at is null before the first mode write.
func TestEmptyListsAreArrays(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	for _, c := range []struct{ path, key string }{
		{"/v1/tasks", "tasks"}, {"/v1/renewal/conversations", "conversations"}, {"/v1/renewal/jobs", "jobs"},
		{"/v1/browser", "records"}, {"/v1/browser", "clients"}, {"/v1/browser/clients", "clients"},
		{"/v1/system/state", "active_runs"}, {"/v1/workers", "workers"},
	} {
		r := d.DoAuth("GET", c.path, nil)
		var env envelope[map[string]json.RawMessage]
		r.Decode(t, &env)
		if r.Status != 200 {
			t.Errorf("GET %s = %d %s", c.path, r.Status, r.Body)
			continue
		}
		v, ok := env.Data[c.key]
		if !ok || !strings.HasPrefix(string(v), "[") {
			t.Errorf("GET %s: %s = %s, want an array", c.path, c.key, v)
		}
	}
	// No route shows Go's zero time for "not yet".
	for _, path := range []string{"/v1/status", "/v1/system/state", "/v1/runtime", "/health", "/rolez", "/v1/cluster", "/v1/controllers",
		"/v1/workers", "/v1/browser", "/v1/browser/clients", "/v1/renewal/scheduler", "/v1/renewal/jobs", "/v1/tasks", "/v1/capabilities"} {
		if r := d.DoAuth("GET", path, nil); strings.Contains(string(r.Body), "0001-01-01") {
			t.Errorf("GET %s shows the zero time: %s", path, r.Body)
		}
	}
	var st envelope[map[string]json.RawMessage]
	d.Do("GET", "/v1/system/state", nil).Decode(t, &st)
	if string(st.Data["updated_at"]) != "null" {
		t.Errorf("updated_at before the first mode write = %s, want null", st.Data["updated_at"])
	}
}
