package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertRulesUnitTests runs promtool's unit tests of the alert rules
// (deploy/prometheus/alerts_test.yml: each alert fires for one cluster and
// not for another) and checks that every alert in alerts.yml has a test
// that expects it to fire. CI installs promtool (Debian package prometheus,
// .ci/run); without it locally the test is skipped.
func TestAlertRulesUnitTests(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found; CI installs Debian's prometheus package (.ci/run)")
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	dir := filepath.Join("prometheus")
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(string(rules), -1)
	if len(alerts) < 12 {
		t.Fatalf("alerts.yml has only %d alerts", len(alerts))
	}
	for _, a := range alerts {
		// A test that expects the alert: its alertname followed by exp_alerts.
		fires := regexp.MustCompile(`alertname: ` + regexp.QuoteMeta(a[1]) + `\n\s+exp_alerts:`)
		if !fires.Match(tests) {
			t.Errorf("alerts_test.yml has no case where %s fires", a[1])
		}
	}
	if !strings.Contains(string(rules), "max by (cluster) (svcd_raft_leader)") {
		t.Error("SvcdNoRaftLeader does not group by cluster")
	}
	if !strings.Contains(string(rules), "absent(svcd_raft_leader)") {
		t.Error("alerts.yml has no absent() rule")
	}
}

// TestDashboardSaysWhichPanelsNeedBrowserTraffic: panels over the bridge and
// relay series are empty until a browser connects (issue 35); each says so
// in its description, so an empty panel is not read as broken.
func TestDashboardSaysWhichPanelsNeedBrowserTraffic(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("grafana", "svcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range dash.Panels {
		browser := false
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "svcd_relay_requests_total") || strings.Contains(tg.Expr, "svcd_relay_request_duration_seconds") ||
				strings.Contains(tg.Expr, "svcd_bridge_frames_total") || strings.Contains(tg.Expr, "svcd_bridge_bytes_total") || strings.Contains(tg.Expr, "svcd_bridge_pairings_total") {
				browser = true
			}
		}
		if !browser {
			continue
		}
		n++
		if !strings.Contains(p.Description, "Needs browser traffic") {
			t.Errorf("panel %q needs browser traffic and does not say so", p.Title)
		}
	}
	if n < 3 {
		t.Errorf("only %d panels over browser series", n)
	}
}
