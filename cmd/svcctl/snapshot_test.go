package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// svcctl snapshot save writes a whole file; restore puts it back over the
// API; a damaged file is refused before anything is sent.
func TestSnapshotCommands(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	if r := d.Do("POST", "/v1/system/pause", map[string]string{"reason": "before-save"}); r.Status != 200 {
		t.Fatalf("pause: %d", r.Status)
	}
	file := filepath.Join(t.TempDir(), "b.snap")
	code, out, errOut := svcctlJSON(t, d, "snapshot", "save", file)
	if code != 0 || !strings.Contains(out, `"cluster_id"`) {
		t.Fatalf("snapshot save: exit %d\n%s\n%s", code, out, errOut)
	}
	// For people (the default): key: value lines, as restore prints, not JSON.
	code, out, errOut = svcctl(t, d, "snapshot", "save", filepath.Join(t.TempDir(), "human.snap"))
	if code != 0 || strings.HasPrefix(strings.TrimSpace(out), "{") || !strings.Contains(out, "human.snap") {
		t.Fatalf("snapshot save for people: exit %d\n%s\n%s", code, out, errOut)
	}
	if r := d.Do("POST", "/v1/system/resume", map[string]string{"reason": "after-save"}); r.Status != 200 {
		t.Fatalf("resume: %d", r.Status)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.snap")
	os.WriteFile(bad, raw[:len(raw)-1], 0o600)
	if code, _, errOut := svcctlJSON(t, d, "snapshot", "restore", bad); code != 1 || !strings.Contains(errOut, "refused, nothing sent") || !strings.Contains(errOut, "truncated") {
		t.Fatalf("truncated restore: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := svcctlJSON(t, d, "snapshot", "restore", file); code != 0 || !strings.Contains(out, `"restored"`) {
		t.Fatalf("snapshot restore: exit %d\n%s\n%s", code, out, errOut)
	}
	st := d.Do("GET", "/v1/system/state", nil).JSON(t)["data"].(map[string]any)
	if st["mode"] != "paused" || st["reason"] != "before-save" {
		t.Fatalf("state after restore: %v", st)
	}
	if code, _, _ := svcctlJSON(t, d, "snapshot", "save"); code != 2 {
		t.Fatalf("usage: exit %d", code)
	}

	// A snapshot of another cluster: refused with the daemon's error naming
	// both ids, state unchanged; -force restores it.
	other := harness.Start(t, harness.Options{})
	if r := other.Do("POST", "/v1/system/drain", map[string]string{"reason": "other cluster"}); r.Status != 200 {
		t.Fatalf("drain other: %d", r.Status)
	}
	foreign := filepath.Join(t.TempDir(), "other.snap")
	if code, out, errOut := svcctlJSON(t, other, "snapshot", "save", foreign); code != 0 {
		t.Fatalf("save other: exit %d %s %s", code, out, errOut)
	}
	idOf := func(h *harness.Daemon) string {
		return h.Do("GET", "/v1/cluster", nil).JSON(t)["data"].(map[string]any)["cluster_id"].(string)
	}
	code, _, errOut = svcctl(t, d, "snapshot", "restore", foreign)
	if code != 1 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "cluster_mismatch") || !strings.Contains(errOut, idOf(d)) || !strings.Contains(errOut, idOf(other)) {
		t.Fatalf("restore of another cluster's snapshot: exit %d\n%s", code, errOut)
	}
	if st := d.Do("GET", "/v1/system/state", nil).JSON(t)["data"].(map[string]any); st["reason"] != "before-save" {
		t.Fatalf("refused restore changed the state: %v", st)
	}
	if code, out, errOut := svcctlJSON(t, d, "snapshot", "restore", "-force", foreign); code != 0 || !strings.Contains(out, `"forced": true`) {
		t.Fatalf("restore -force: exit %d\n%s\n%s", code, out, errOut)
	}
	if st := d.Do("GET", "/v1/system/state", nil).JSON(t)["data"].(map[string]any); st["reason"] != "other cluster" {
		t.Fatalf("forced restore: state %v", st)
	}
}
