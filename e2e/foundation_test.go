package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

type envelope[T any] struct {
	OK    bool `json:"ok"`
	Data  T    `json:"data"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type systemState struct {
	Mode        string `json:"mode"`
	RequestedBy string `json:"requested_by"`
	Reason      string `json:"reason"`
	UpdatedAt   string `json:"updated_at"`
	Version     uint64 `json:"version"`
	Leader      struct {
		NodeID string `json:"node_id"`
		Self   bool   `json:"self"`
	} `json:"leader"`
	Queue *struct {
		Pending int `json:"pending"`
		Running int `json:"running"`
	} `json:"queue"`
	ActiveRuns []any `json:"active_runs"`
}

func readState(t *testing.T, d *harness.Daemon) systemState {
	t.Helper()
	r := d.Do("GET", "/v1/system/state", nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/system/state = %d %s", r.Status, r.Body)
	}
	var env envelope[systemState]
	r.Decode(t, &env)
	return env.Data
}

func TestEveryFoundationRoute(t *testing.T) {
	d := harness.Start(t, harness.Options{})

	r := d.Do("GET", "/healthz", nil)
	if r.Status != 200 || string(r.Body) != "ok" {
		t.Fatalf("/healthz = %d %q", r.Status, r.Body)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id on the response")
	}
	if r := d.Do("GET", "/healthz", nil, "X-Request-Id: abc123"); r.Header.Get("X-Request-Id") != "abc123" {
		t.Errorf("request id not echoed: %q", r.Header.Get("X-Request-Id"))
	}

	for _, path := range []string{"/describe", "/describe/business", "/describe/control", "/health", "/version", "/v1/capabilities", "/readyz", "/rolez", "/v1/runtime", "/v1/system/state", "/v1/status"} {
		r := d.Do("GET", path, nil)
		if r.Status != 200 {
			t.Errorf("GET %s = %d %s", path, r.Status, r.Body)
			continue
		}
		if m := r.JSON(t); m["ok"] != true || m["data"] == nil {
			t.Errorf("GET %s: not a success envelope: %s", path, r.Body)
		}
	}

	var control envelope[map[string]any]
	d.Do("GET", "/describe/control", nil).Decode(t, &control)
	for _, key := range []string{"recommended_order", "host_operations", "routes"} {
		if control.Data[key] == nil {
			t.Errorf("/describe/control lacks %q", key)
		}
	}
	var caps envelope[map[string]any]
	d.Do("GET", "/v1/capabilities", nil).Decode(t, &caps)
	for _, key := range []string{"read", "write", "diagnostic", "cautions"} {
		if caps.Data[key] == nil {
			t.Errorf("/v1/capabilities lacks %q", key)
		}
	}
	var role envelope[map[string]any]
	d.Do("GET", "/rolez", nil).Decode(t, &role)
	if role.Data["role"] != "leader" {
		t.Errorf("/rolez role = %v, want leader", role.Data["role"])
	}
	var ver envelope[map[string]any]
	d.Do("GET", "/version", nil).Decode(t, &ver)
	if ver.Data["version"] == "" || ver.Data["name"] != "svcd" {
		t.Errorf("/version = %v", ver.Data)
	}

	st := readState(t, d)
	if st.Mode != "running" || st.Leader.NodeID == "" || !st.Leader.Self || st.Queue == nil || st.ActiveRuns == nil {
		t.Fatalf("initial state = %+v", st)
	}

	for _, step := range []struct{ route, mode string }{{"pause", "paused"}, {"drain", "draining"}, {"resume", "running"}} {
		r := d.Do("POST", "/v1/system/"+step.route, map[string]string{"requested_by": "e2e", "reason": "step " + step.route})
		if r.Status != 200 {
			t.Fatalf("POST %s = %d %s", step.route, r.Status, r.Body)
		}
		var env envelope[systemState]
		r.Decode(t, &env)
		if env.Data.Mode != step.mode || env.Data.RequestedBy != "e2e" || env.Data.Reason != "step "+step.route || env.Data.UpdatedAt == "" || env.Data.Leader.NodeID == "" {
			t.Fatalf("POST %s answered %+v, want the latest system state in mode %s", step.route, env.Data, step.mode)
		}
		if got := readState(t, d); got.Mode != step.mode {
			t.Fatalf("after %s state mode = %s", step.route, got.Mode)
		}
	}

	ui := d.Do("GET", "/v1/status/ui", nil)
	if ui.Status != 200 || !strings.Contains(ui.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/v1/status/ui = %d %s", ui.Status, ui.Header.Get("Content-Type"))
	}
	for _, want := range []string{`http-equiv="refresh"`, "running", "step resume", "e2e"} {
		if !strings.Contains(string(ui.Body), want) {
			t.Errorf("status panel lacks %q", want)
		}
	}

	m := d.Do("GET", "/metrics", nil)
	if m.Status != 200 {
		t.Fatalf("/metrics = %d", m.Status)
	}
	for _, want := range []string{`svcd_http_requests_total{code="200",route="POST /v1/system/pause"} 1`, "svcd_http_request_duration_seconds_bucket", "svcd_raft_leader 1", "svcd_raft_term"} {
		if !strings.Contains(string(m.Body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestErrorStatusesChangeNothing(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	before := readState(t, d)
	big := `{"reason":"` + strings.Repeat("x", 1<<20+10) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		code               string
	}{
		{"malformed json", "POST", "/v1/system/pause", `{"reason":`, nil, 400, "malformed_json"},
		{"two values", "POST", "/v1/system/pause", `{} {}`, nil, 400, "malformed_json"},
		{"not an object", "POST", "/v1/system/pause", `[1,2]`, nil, 400, "malformed_json"},
		{"unknown route", "GET", "/v1/nope", nil, nil, 404, "route_not_found"},
		{"wrong method", "DELETE", "/v1/system/state", nil, nil, 405, "method_not_allowed"},
		{"body too large", "POST", "/v1/system/pause", big, nil, 413, "body_too_large"},
		{"unknown mode", "POST", "/v1/system/mode", `{"mode":"sleeping"}`, nil, 422, "invalid_mode"},
		{"missing mode", "POST", "/v1/system/mode", `{}`, nil, 422, "missing_field"},
		{"wrong type", "POST", "/v1/system/pause", `{"reason":42}`, nil, 422, "invalid_field"},
		{"mode against route", "POST", "/v1/system/pause", `{"mode":"running"}`, nil, 422, "invalid_mode"},
		{"dns rebinding host", "GET", "/v1/system/state", nil, []string{"Host: evil.example"}, 403, "host_not_allowed"},
		{"rebinding write", "POST", "/v1/system/pause", `{}`, []string{"Host: evil.example:4317"}, 403, "host_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := d.Do(c.method, c.path, c.body, c.headers...)
			if r.Status != c.status {
				t.Fatalf("status = %d, want %d: %s", r.Status, c.status, r.Body)
			}
			var env envelope[any]
			r.Decode(t, &env)
			if env.OK || env.Error.Code != c.code || env.Error.Message == "" {
				t.Fatalf("body = %s, want ok:false code %s with a message", r.Body, c.code)
			}
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("content type %q", r.Header.Get("Content-Type"))
			}
		})
	}
	if after := readState(t, d); after.Version != before.Version || after.Mode != before.Mode {
		t.Fatalf("refused requests changed the state: %+v -> %+v", before, after)
	}
}

func TestPausedSurvivesSIGKILL(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	r := d.Do("POST", "/v1/system/pause", map[string]string{"requested_by": "ops", "reason": "before kill"})
	if r.Status != 200 {
		t.Fatalf("pause = %d %s", r.Status, r.Body)
	}
	d.Kill()
	d.Restart()
	st := readState(t, d)
	if st.Mode != "paused" || st.Reason != "before kill" || st.RequestedBy != "ops" {
		t.Fatalf("after SIGKILL and restart: %+v, want paused by ops", st)
	}
}

// TestAcknowledgedWritesSurviveSIGKILLUnderLoad kills the daemon while
// writers are mid-flight: every write that was answered 200 must be there
// after the restart (the state version is at least the highest acknowledged).
func TestAcknowledgedWritesSurviveSIGKILLUnderLoad(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	var (
		mu       sync.Mutex
		maxAcked uint64
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 2000; i++ {
				route := []string{"pause", "resume", "drain"}[i%3]
				resp, err := client.Post(d.URL+"/v1/system/"+route, "application/json", strings.NewReader(fmt.Sprintf(`{"reason":"w%d-%d"}`, w, i)))
				if err != nil {
					return // the daemon is gone
				}
				var env envelope[systemState]
				ok := resp.StatusCode == 200 && decodeBody(resp, &env) == nil
				resp.Body.Close()
				if ok {
					mu.Lock()
					if env.Data.Version > maxAcked {
						maxAcked = env.Data.Version
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	// Kill once writes are flowing (a loaded machine may take seconds to
	// answer the first ones): a fixed 700 ms saw none acknowledged at times.
	waitUntil(t, 30*time.Second, "20 writes acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return maxAcked >= 20
	})
	d.Kill()
	cancel()
	wg.Wait()
	if maxAcked == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}
	d.Restart()
	if st := readState(t, d); st.Version < maxAcked {
		t.Fatalf("after SIGKILL the state version is %d, but version %d had been acknowledged", st.Version, maxAcked)
	}
	t.Logf("%d acknowledged writes survived SIGKILL", maxAcked)
}

func TestSIGTERMExitsCleanly(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	d.Do("POST", "/v1/system/drain", map[string]string{"reason": "shutdown test"})
	if err := d.Terminate(15 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.Logs())
	}
	if !strings.Contains(d.Logs(), "shutting down") {
		t.Errorf("no shutdown log line:\n%s", d.Logs())
	}
	d.Restart()
	if st := readState(t, d); st.Mode != "draining" {
		t.Fatalf("after clean restart mode = %s", st.Mode)
	}
}

func TestGeneratedTokenIsPrivateAndNeverLogged(t *testing.T) {
	d := harness.Start(t, harness.Options{GeneratedToken: true})
	info, err := os.Stat(filepath.Join(d.DataDir, "shared_token"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", info.Mode().Perm())
	}
	if len(d.Token) < 32 {
		t.Fatalf("generated token too short: %d chars", len(d.Token))
	}
	if !strings.Contains(d.Logs(), "shared_token") {
		t.Errorf("the token file path is not logged:\n%s", d.Logs())
	}
	// The same token survives a restart, and appears in no log and no response.
	old := d.Token
	d.Restart()
	if d.Token != old {
		t.Fatal("token changed across restart")
	}
	for _, path := range []string{"/v1/runtime", "/health", "/describe/control", "/metrics"} {
		if r := d.Do("GET", path, nil); strings.Contains(string(r.Body), d.Token) {
			t.Errorf("GET %s returns the token", path)
		}
	}
	if strings.Contains(d.Logs(), d.Token) {
		t.Fatal("the token appears in the log")
	}
	// Nothing else in the data dir holds it (raft log, snapshots).
	_ = filepath.WalkDir(d.DataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == "shared_token" {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), d.Token) {
			t.Errorf("%s contains the token", p)
		}
		return nil
	})
}

func TestStatusWrapper(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	d.Do("POST", "/v1/system/pause", map[string]string{"requested_by": "wrapper-test", "reason": "look at me"})

	base := startStatusWrapper(t, d.URL)

	if r := harness.Do(t, "GET", base+"/healthz", nil); r.Status != 200 || string(r.Body) != "ok" {
		t.Fatalf("wrapper /healthz = %d %q", r.Status, r.Body)
	}
	if r := harness.Do(t, "GET", base+"/describe", nil); r.Status != 200 || !strings.Contains(string(r.Body), "/v1/status/ui") {
		t.Fatalf("wrapper /describe = %d %s", r.Status, r.Body)
	}
	// The wrapper's JSON equals the daemon's own, but for source and time:
	// the System block from /v1/system/state (SPEC.md), the daemon's own
	// sections (workers, sandbox, browsers, cluster, version) from its
	// /v1/status, so the wrapper shows the same panel.
	var mine, daemons envelope[map[string]any]
	harness.Do(t, "GET", base+"/v1/status", nil).Decode(t, &mine)
	d.Do("GET", "/v1/status", nil).Decode(t, &daemons)
	for _, k := range []string{"workers", "version", "started_at", "sandbox_level", "cluster"} {
		if _, ok := mine.Data[k]; !ok {
			t.Errorf("the wrapper's /v1/status lacks the daemon's %q: %v", k, mine.Data)
		}
	}
	for _, k := range []string{"generated_at", "source", "uptime_ms"} {
		delete(mine.Data, k)
		delete(daemons.Data, k)
	}
	// Worker and client times are the daemon's, read twice: compare what a
	// person reads (names, states, pids), not the clock.
	if fmt.Sprint(mine.Data["mode"], mine.Data["reason"], mine.Data["version"], mine.Data["sandbox_level"], len(mine.Data["workers"].([]any))) !=
		fmt.Sprint(daemons.Data["mode"], daemons.Data["reason"], daemons.Data["version"], daemons.Data["sandbox_level"], len(daemons.Data["workers"].([]any))) || mine.Data["mode"] != "paused" {
		t.Fatalf("wrapper status %v\ndaemon status %v", mine.Data, daemons.Data)
	}
	for _, path := range []string{"/", "/ui", "/v1/status/ui"} {
		r := harness.Do(t, "GET", base+path, nil)
		body := string(r.Body)
		if r.Status != 200 || !strings.Contains(body, "look at me") || !strings.Contains(body, "paused") {
			t.Fatalf("wrapper %s = %d", path, r.Status)
		}
		// The daemon's panel, named as the wrapper's, without controls, and
		// never calling the daemon "this node" (the wrapper is no node).
		for _, want := range []string{"read-only status wrapper of the daemon at " + d.URL, "Worker hostops", "the node this wrapper reads"} {
			if !strings.Contains(body, want) {
				t.Errorf("wrapper %s lacks %q", path, want)
			}
		}
		for _, not := range []string{"(this node)", `id="pair"`} {
			if strings.Contains(body, not) {
				t.Errorf("wrapper %s shows %q", path, not)
			}
		}
	}
	if r := harness.Do(t, "POST", base+"/v1/status", "{}"); r.Status != 405 {
		t.Fatalf("wrapper POST = %d, want 405", r.Status)
	}

	// Daemon down: the wrapper says so, with a 503, in JSON and on the panel.
	d.Kill()
	r := harness.Do(t, "GET", base+"/v1/status", nil)
	var down envelope[map[string]any]
	r.Decode(t, &down)
	if r.Status != 503 || down.Error.Code != "daemon_unreachable" || down.Data["daemon_reachable"] != false {
		t.Fatalf("wrapper with daemon down: %d %s", r.Status, r.Body)
	}
	ui := harness.Do(t, "GET", base+"/ui", nil)
	if ui.Status != 503 || !strings.Contains(string(ui.Body), "not reachable") {
		t.Fatalf("panel with daemon down: %d", ui.Status)
	}
}

func TestLogJSONWritesJSONLines(t *testing.T) {
	d := harness.Start(t, harness.Options{Args: []string{"-log-json"}})
	d.Do("POST", "/v1/system/pause", map[string]string{"reason": "json log"})
	d.WaitLog(`"json log"`, 5*time.Second)
	lines := strings.Split(strings.TrimSpace(d.Logs()), "\n")
	sawMode := false
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["@message"] == "system mode set" && m["mode"] == "paused" {
			sawMode = true
		}
	}
	if !sawMode {
		t.Fatalf("no JSON line for the mode change in:\n%s", d.Logs())
	}
}

// TestSIGTERMFinishesRequestsInFlight: a request that is running when SIGTERM
// arrives still gets its full answer, and the daemon then exits 0.
func TestSIGTERMFinishesRequestsInFlight(t *testing.T) {
	dir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + dir}})
	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	started := filepath.Join(dir, "started")
	command, _ := json.Marshal(map[string]string{"command": "touch " + started + "; sleep 2; echo finished"})
	go func() {
		req, _ := http.NewRequest("POST", d.URL+"/v1/exec", bytes.NewReader(command))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		done <- result{resp.StatusCode, b.String()}
	}()
	// SIGTERM once the command runs (a fixed 300 ms could pass before the
	// request reached a loaded daemon, which then refused it as draining).
	waitUntil(t, 15*time.Second, "the command running", func() bool { _, err := os.Stat(started); return err == nil })
	exited := make(chan error, 1)
	go func() { exited <- d.Terminate(15 * time.Second) }()
	r := <-done
	if r.status != 200 || !strings.Contains(r.body, `"ok":true`) || !strings.Contains(r.body, `finished`) {
		t.Fatalf("in-flight exec during SIGTERM: %d %s", r.status, r.body)
	}
	if err := <-exited; err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.Logs())
	}
}

// startStatusWrapper runs `svcd status-wrapper` reading daemonURL on a free
// port, waits until it answers and returns its base URL. It is killed when
// the test ends.
func startStatusWrapper(t *testing.T, daemonURL string, env ...string) string {
	t.Helper()
	addr := harness.FreePort(t)
	cmd := exec.Command(harness.Binary(t), "status-wrapper", "-status-listen", addr, "-daemon-url", daemonURL)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatal("status wrapper did not start")
		}
		time.Sleep(25 * time.Millisecond)
	}
}
