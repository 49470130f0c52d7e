package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// TestWitnessServesHealthReadinessAndMetrics (issue 35): the third voter had
// no HTTP listener, so nothing could scrape or probe it. With witness_listen
// it serves /healthz, /readyz (200 once it is a member with a known leader)
// and /metrics with the raft series the daemon uses, and promtool accepts
// the scrape. A non-loopback witness_listen is refused at start.
func TestWitnessServesHealthReadinessAndMetrics(t *testing.T) {
	obs := harness.FreePortOn(t, "127.0.0.3")
	c := harness.StartCluster(t, []string{"SVC_WITNESS_LISTEN=" + obs})
	base := "http://" + obs

	var health []byte
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := harness.Get(base+"/healthz", 2*time.Second)
		if err == nil {
			health = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("witness /healthz never answered: %v\n%s", err, c.WitnessLogs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if string(health) != "ok" {
		t.Fatalf("/healthz = %q", health)
	}
	var ready *harness.Response
	for deadline = time.Now().Add(20 * time.Second); ; {
		ready = harness.Do(t, "GET", base+"/readyz", nil)
		if ready.Status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ready.Status != 200 || !strings.Contains(string(ready.Body), `"role":"witness"`) || !strings.Contains(string(ready.Body), `"leader_id":"n`) {
		t.Fatalf("/readyz = %d %s", ready.Status, ready.Body)
	}
	m := harness.Do(t, "GET", base+"/metrics", nil)
	if m.Status != 200 {
		t.Fatalf("/metrics = %d %s", m.Status, m.Body)
	}
	for _, want := range []string{"svcd_raft_leader 0", "svcd_raft_term ", "svcd_raft_applied_index ", "svcd_raft_last_contact_age_seconds ", "svcd_witness_info{version=", "process_resident_memory_bytes "} {
		if !strings.Contains(string(m.Body), want) {
			t.Errorf("witness /metrics lacks %q", want)
		}
	}
	// A Host header other than the listener's is refused (DNS rebinding).
	if r := harness.Do(t, "GET", base+"/metrics", nil, "Host: evil.example"); r.Status < 400 {
		t.Errorf("/metrics with a foreign Host = %d", r.Status)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is required (Debian package prometheus; .ci/run installs it)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(m.Body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics on the witness: %v\n%s", err, out)
	}

	out, err := exec.Command(harness.Binary(t), "witness", "-witness-listen", "0.0.0.0:9999", "-raft-addr", "127.0.0.1:1", "-join", "127.0.0.1:2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "must be a loopback address") {
		t.Fatalf("witness with a non-loopback witness_listen: %v\n%s", err, out)
	}
}
