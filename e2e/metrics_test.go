package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// docRow is one row of docs/metrics.md's catalogue.
type docRow struct{ name, typ string }

// metricsDoc reads the catalogue table of docs/metrics.md: the rows whose
// first cell is a `svcd_…` name. The test checks the scrape against it, so
// the document and the code cannot drift apart.
func metricsDoc(t testing.TB) []docRow {
	t.Helper()
	f, err := os.Open(filepath.Join(harness.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(svcd_[a-z0-9_]+)` \\| (counter|gauge|histogram|summary) \\|")
	var out []docRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, docRow{m[1], m[2]})
		}
	}
	if len(out) < 50 {
		t.Fatalf("docs/metrics.md: only %d catalogue rows parsed", len(out))
	}
	return out
}

// scrape reads /metrics and parses it (the parse itself checks the format).
func scrape(t testing.TB, d *harness.Daemon) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	r := d.Do("GET", "/metrics", nil)
	if r.Status != 200 {
		t.Fatalf("/metrics: %d %s", r.Status, r.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(r.Body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs, string(r.Body)
}

// value is the sum of a family's series whose labels include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
	sum := 0.0
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			sum += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			sum += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			sum += float64(m.GetHistogram().GetSampleCount())
		case dto.MetricType_SUMMARY:
			sum += float64(m.GetSummary().GetSampleCount())
		}
	}
	return sum
}

// metricsRound drives every area once with ids made from tag: a relay
// request buffered and as SSE, a pairing and a refused message, an exec, a
// file write and read, an instruction batch, an agent session and turn, and
// a renewal delivered through the plugin. It returns every id it used.
func metricsRound(t *testing.T, r *agentRig, plat *fakeplugin.Platform, tag string) []string {
	t.Helper()
	d := r.d
	client := "metrics-client-" + tag
	p := connectPlugin(t, d, client, plat)
	capture(t, d, p, "platform_a", "acct-"+tag, map[string]string{"Authorization": "Bearer x"})
	// The client counts under the platform it captured credentials on, and
	// the platform label holds the bridge's platforms, other and none only.
	mfs, _ := scrape(t, d)
	if v := value(mfs, "svcd_bridge_clients", map[string]string{"platform": "platform_a"}); v < 1 {
		t.Errorf("svcd_bridge_clients{platform=platform_a} = %v after a capture on platform_a, want >= 1", v)
	}
	for _, m := range mfs["svcd_bridge_clients"].GetMetric() {
		switch l := m.GetLabel(); {
		case len(l) != 1 || l[0].GetName() != "platform":
			t.Errorf("svcd_bridge_clients labels %v, want platform only", l)
		case !strings.Contains(" platform_a platform_b platform_c other none ", " "+l[0].GetValue()+" "):
			t.Errorf("svcd_bridge_clients{platform=%q}: not a bounded platform value", l[0].GetValue())
		}
	}
	_ = p.SendRaw([]byte(`{"type":"no_such_type_` + tag + `"}`))
	if err := p.WaitCount(3*time.Second, bridgeproto.TypeError, 1); err != nil {
		t.Fatal(err)
	}
	reqID := "metrics-req-" + tag
	if resp := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "clientId": client, "path": "/api/echo?id=" + tag, "method": "POST", "requestId": reqID, "body": map[string]string{"k": tag}}); resp.Status != 200 {
		t.Fatalf("relay: %d %s", resp.Status, resp.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if status, _, raw := postSSE(t, ctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_b", "clientId": client, "path": "/api/stream?n=3", "responseMode": "sse", "requestId": reqID + "-sse"}, nil); status != 200 {
		t.Fatalf("sse relay: %d %s", status, raw)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "file-"+tag+".txt")
	if out := execCall(t, d, map[string]any{"command": "echo " + tag, "cwd": dir}); !out.OK {
		t.Fatalf("exec: %+v", out)
	}
	if out := fileCall(t, d, "/v1/files/write", map[string]any{"path": file, "content": tag}); !out.OK {
		t.Fatalf("write: %+v", out)
	}
	if out := fileCall(t, d, "/v1/files/read", map[string]any{"path": file}); !out.OK {
		t.Fatalf("read: %+v", out)
	}
	if resp := d.DoAuth("POST", "/v1/instructions/run", map[string]string{"text": block("@system::status")}); resp.Status != 200 {
		t.Fatalf("instructions: %d %s", resp.Status, resp.Body)
	}

	s := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": dir, "purpose": "metrics-" + tag}))
	session := s["sessionId"].(string)
	r.fm.Push(fakemodel.Reply{Text: "answer " + tag})
	if s := sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": session, "input": "go " + tag, "waitMs": 20000})); s["lastTurnStatus"] != "completed" {
		t.Fatalf("turn: %v", s)
	}

	conv := "metrics-conv-" + tag
	linkAndReply(t, p, conv, "msg-"+tag)
	waitUntil(t, 5*time.Second, "conversation "+conv, func() bool { return d.Do("GET", "/v1/renewal/conversations/"+conv, nil).Status == 200 })
	if resp := d.Do("POST", "/v1/renewal/conversations/"+conv+"/auto", nil); resp.Status != 200 {
		t.Fatalf("auto: %d %s", resp.Status, resp.Body)
	}
	waitUntil(t, 15*time.Second, "a done renewal job for "+conv, func() bool {
		for _, j := range jobsOf(t, d, conv).Jobs {
			if j.Status == "done" {
				return true
			}
		}
		return false
	})
	// Manual again, so no further renewal of it runs during the next round.
	d.Do("POST", "/v1/renewal/conversations/"+conv+"/manual", nil)
	// A close, so the close codes are counted.
	p.Close()
	waitUntil(t, 5*time.Second, client+" disconnected", func() bool {
		mfs, _ := scrape(t, d)
		return value(mfs, "svcd_bridge_closes_total", nil) > 0
	})
	return []string{client, "acct-" + tag, reqID, file, session, conv, "msg-" + tag}
}

// Every area once against the real binary: each series docs/metrics.md
// lists is on /metrics with the documented type; a second round with other
// ids adds no series anywhere (no label grows with ids) and no id appears
// in any label; the workers' counters survive a rolling restart and a
// SIGKILL; promtool check metrics passes on the full scrape.
func TestMetricsEveryAreaDocumented(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is required (Debian package prometheus; .ci/run installs it)")
	}
	env := append(browserEnv(schedEnv()...), "SVC_RAFT_SNAPSHOT_INTERVAL_MS=100", "SVC_RAFT_SNAPSHOT_THRESHOLD=4")
	r := startAgentRigWith(t, env...)
	d := r.d
	t.Cleanup(func() { // with SVCD_E2E_RACE=1 the daemon is race-enabled
		if strings.Contains(d.Logs(), "DATA RACE") {
			t.Errorf("the daemon reported a data race:\n%s", d.Logs())
		}
	})
	plat := fakeplugin.NewPlatform("metrics")
	defer plat.Close()

	ids := metricsRound(t, r, plat, "one")
	waitUntil(t, 20*time.Second, "a raft snapshot", func() bool {
		mfs, _ := scrape(t, d)
		return mfs["svcd_raft_snapshot_age_seconds"] != nil && mfs["svcd_raft_snapshot_create_seconds"] != nil
	})
	before, _ := scrape(t, d)

	// The areas moved: each of these was 0 before the round.
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"svcd_relay_requests_total", map[string]string{"platform": "platform_a", "method_class": "write", "outcome": "ok"}},
		{"svcd_relay_requests_total", map[string]string{"platform": "platform_b", "method_class": "read", "outcome": "ok"}},
		{"svcd_relay_sse_events_total", map[string]string{"platform": "platform_b"}},
		{"svcd_relay_lease_tokens_granted_total", nil},
		{"svcd_relay_admitted_total", map[string]string{"worker": "relay", "platform": "platform_a"}},
		{"svcd_bridge_pairings_total", map[string]string{"outcome": "paired"}},
		{"svcd_bridge_frames_total", map[string]string{"direction": "in", "type": "api_response"}},
		{"svcd_bridge_refused_messages_total", nil},
		{"svcd_hostops_requests_total", map[string]string{"op": "exec", "outcome": "ok"}},
		{"svcd_hostops_exec_total", map[string]string{"worker": "hostops", "outcome": "ok"}},
		{"svcd_hostops_file_ops_total", map[string]string{"worker": "hostops", "op": "write", "outcome": "ok"}},
		// Exec goes over the hop (docs/hostops.md); the file routes stay on gRPC.
		{"svcd_worker_grpc_calls_total", map[string]string{"worker": "hostops", "method": "/svcd.hostops.v1.HostOps/WriteFile", "code": "OK"}},
		{"svcd_instruction_blocks_total", map[string]string{"status": "succeeded"}},
		{"svcd_agent_turns_total", map[string]string{"worker": "agentd", "status": "completed"}},
		{"svcd_agent_turn_duration_seconds", nil},
		{"svcd_renewal_deliveries_total", map[string]string{"outcome": "ok"}},
		{"svcd_renewal_ticks_total", map[string]string{"outcome": "ok"}},
		{"svcd_raft_commit_time_seconds", nil},
		{"svcd_raft_state_leader_total", nil},
	} {
		if v := value(before, c.name, c.labels); v <= 0 {
			t.Errorf("%s%v = %v after a round, want > 0", c.name, c.labels, v)
		}
	}

	// A second round with other ids: no family gains a series.
	ids = append(ids, metricsRound(t, r, plat, "two")...)
	after, text := scrape(t, d)
	for name, mf := range before {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		// A new combination of values already seen (a route answering a
		// status it happened not to in round one, on a loaded machine) is
		// not growth; a label value never seen before is.
		if novel := novelSeries(mf, after[name]); len(novel) > 0 {
			t.Errorf("%s had %d series after one round and %d after a second with other ids: a label grows: %v", name, len(mf.GetMetric()), len(after[name].GetMetric()), novel)
		}
	}
	for _, id := range ids {
		if strings.Contains(text, id) {
			t.Errorf("an id (%q) appears on /metrics", id)
		}
	}

	// Workers' counters do not go back across a rolling restart nor a crash.
	execs := func(mfs map[string]*dto.MetricFamily) float64 {
		return value(mfs, "svcd_hostops_exec_total", map[string]string{"worker": "hostops", "outcome": "ok"})
	}
	n := execs(after)
	if resp := d.DoAuth("POST", "/v1/workers/restart", map[string]any{"worker": "hostops"}); resp.Status != 200 {
		t.Fatalf("rolling restart: %d %s", resp.Status, resp.Body)
	}
	execCall(t, d, map[string]any{"command": "true"})
	rolled, _ := scrape(t, d)
	if got := execs(rolled); got != n+1 {
		t.Fatalf("hostops exec ok after a rolling restart and one exec = %v, want %v", got, n+1)
	}
	if v := value(rolled, "svcd_worker_restarts_total", map[string]string{"worker": "hostops", "reason": "rolling"}); v != 1 {
		t.Fatalf("rolling restarts = %v, want 1", v)
	}
	w := hostopsWorker(t, d)
	if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitWorker(t, d, 15*time.Second, "hostops back after SIGKILL", func(x workerInfo) bool { return x.State == "running" && x.Pid != w.Pid })
	execCall(t, d, map[string]any{"command": "true"})
	crashed, text := scrape(t, d)
	if got := execs(crashed); got != n+2 {
		t.Fatalf("hostops exec ok after a crash and one more exec = %v, want %v", got, n+2)
	}
	if v := value(crashed, "svcd_worker_restarts_total", map[string]string{"worker": "hostops", "reason": "crash"}); v != 1 {
		t.Fatalf("crash restarts = %v, want 1", v)
	}
	if v := value(crashed, "svcd_worker_last_exit_code", map[string]string{"worker": "hostops"}); v != -1 {
		t.Fatalf("last exit code = %v, want -1 (SIGKILL)", v)
	}
	if value(crashed, "svcd_worker_recovery_seconds", map[string]string{"worker": "hostops"}) != 1 {
		t.Fatal("the crash's recovery time was not observed")
	}

	// Every documented series is there, with its type (last: some appear
	// only once something ended, such as svcd_worker_last_exit_code).
	for _, row := range metricsDoc(t) {
		mf := crashed[row.name]
		if mf == nil {
			t.Errorf("docs/metrics.md lists %s; /metrics has no such series", row.name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != row.typ {
			t.Errorf("%s is a %s; docs/metrics.md says %s", row.name, got, row.typ)
		}
	}

	// promtool's own check of the full scrape.
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// The alert rules load in promtool, and every svcd_ series they and the
// dashboard use is in docs/metrics.md (or is a histogram/summary part of one).
func TestMetricsAlertsAndDashboard(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is required (Debian package prometheus; .ci/run installs it)")
	}
	root := harness.RepoRoot()
	rules := filepath.Join(root, "deploy", "prometheus", "alerts.yml")
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	known := map[string]bool{}
	for _, row := range metricsDoc(t) {
		known[row.name] = true
	}
	used := regexp.MustCompile(`svcd_[a-z0-9_]+`)
	for _, f := range []string{rules, filepath.Join(root, "deploy", "grafana", "svcd.json")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, name := range used.FindAllString(string(b), -1) {
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if trimmed := strings.TrimSuffix(name, suf); trimmed != name && known[trimmed] {
					base = trimmed
				}
			}
			if !known[base] {
				t.Errorf("%s uses %s, which docs/metrics.md does not list", filepath.Base(f), name)
			}
			seen++
		}
		if seen < 10 {
			t.Errorf("%s uses only %d svcd series", filepath.Base(f), seen)
		}
	}
	for _, alert := range []string{"SvcdWorkerCrashLooping", "SvcdRelayBreakerOpen", "SvcdNoRaftLeader", "SvcdStandbyLagging", "SvcdRenewalDeliveriesFailing", "SvcdExecOOMKills"} {
		b, _ := os.ReadFile(rules)
		if !strings.Contains(string(b), "alert: "+alert) {
			t.Errorf("alerts.yml has no %s", alert)
		}
	}
}

// novelSeries names the series of b with a label value that no series of
// a has for that label.
func novelSeries(a, b *dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, m := range a.GetMetric() {
		for _, l := range m.GetLabel() {
			seen[l.GetName()+"="+l.GetValue()] = true
		}
	}
	var out []string
	for _, m := range b.GetMetric() {
		var parts []string
		novel := false
		for _, l := range m.GetLabel() {
			kv := l.GetName() + "=" + l.GetValue()
			parts = append(parts, kv)
			// A status code is bounded by construction (HTTP or gRPC):
			// one met only in round two (a 404 while a conversation is
			// not reported yet) is not a label growing with ids.
			novel = novel || (!seen[kv] && l.GetName() != "code")
		}
		if novel {
			out = append(out, "{"+strings.Join(parts, ",")+"}")
		}
	}
	return out
}
