package main

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// TestHumanOutputByDefault: without -format the everyday commands print
// aligned key: value blocks and tables with relative times, not JSON.
func TestHumanOutputByDefault(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	for _, tc := range []struct {
		args []string
		want []string // lines or parts of lines a person reads
	}{
		{[]string{"status"}, []string{"daemon_reachable:  true", "mode:              running", "leader:\n  node_id:  node1"}},
		{[]string{"system", "pause", "--reason", "human test"}, []string{"mode:          paused", "reason:        human test", "(just now)"}},
		{[]string{"system", "state"}, []string{"mode:          paused", "active_runs:   (none)"}},
		{[]string{"workers"}, []string{"NAME       STATE    PID", "hostops    running"}},
		{[]string{"cluster"}, []string{"NODE_ID  RAFT_ADDR", "leader", "just now"}},
		{[]string{"controllers"}, []string{"NODE_ID", "node1"}},
		{[]string{"browser", "clients"}, []string{"clients:  (none)"}},
		{[]string{"tasks", "ls"}, []string{"tasks:  (none)"}},
	} {
		code, out, errOut := svcctl(t, d, tc.args...)
		t.Logf("svcctl %s:\n%s", strings.Join(tc.args, " "), out)
		if code != 0 || strings.Contains(out, `"data"`) {
			t.Errorf("svcctl %v: exit %d, not human output:\n%s%s", tc.args, code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("svcctl %v: no %q in\n%s", tc.args, w, out)
			}
		}
	}
	file := t.TempDir() + "/f.bin"
	if err := writeFile(file, "line 1\n\xff\x00raw"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"files", "read", file}, {"files", "read", "-base64", file}} {
		if code, out, errOut := svcctl(t, d, args...); code != 0 || out != "line 1\n\xff\x00raw" {
			t.Errorf("svcctl %v: exit %d %q %s", args, code, out, errOut)
		}
	}
}

func TestRenderHuman(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	raw := `{"ok":true,"data":{"mode":"paused","updated_at":"2026-01-02T03:04:02Z","never":"0001-01-01T00:00:00Z","n":3,"who":"","timeout_ms":90000,"durationMs":12,"tags":["a","b"],"none":[],"leader":null,
		"workers":[{"name":"hostops","state":"running","started_at":"2026-01-02T02:59:05Z","pid":12},{"name":"relay","state":"stopped","pid":7,"extra":{"k":1}}],
		"limits":{"max":5}}}`
	var b strings.Builder
	if err := renderHuman(&b, []byte(raw), now); err != nil {
		t.Fatal(err)
	}
	want := `mode:        paused
updated_at:  2026-01-02T03:04:02Z (3s ago)
never:       never
n:           3
who:         -
timeout_ms:  90000 (1m30s)
durationMs:  12
tags:        a, b
none:        (none)
leader:      -
workers:
  NAME     STATE    STARTED_AT  PID  EXTRA
  hostops  running  5m ago      12   -
  relay    stopped  -           7    {"k":1}
limits:
  max:  5
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := renderHuman(&b, []byte("not json"), now); err == nil {
		t.Fatal("non-JSON rendered")
	}
}

// TestEveryCommandHasHelp: `svcctl CMD -h` exits 0 and lists flags with an
// example, for every command in the table, on stdout (asked-for help is
// output, not an error) with nothing on stderr.
func TestEveryCommandHasHelp(t *testing.T) {
	for name := range commands() {
		var out, errb strings.Builder
		code := run([]string{name, "-h"}, &out, &errb, func(string) string { return "" })
		h := out.String()
		if code != 0 || errb.Len() != 0 || !strings.Contains(h, "usage: svcctl "+name) || !strings.Contains(h, "flags") || !strings.Contains(h, "example") {
			t.Errorf("svcctl %s -h: exit %d\nstdout:\n%s\nstderr:\n%s", name, code, h, errb.String())
		}
	}
	var out, errb strings.Builder
	if code := run([]string{"exec", "-h"}, &out, &errb, func(string) string { return "" }); code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "-timeout-ms") || !strings.Contains(out.String(), "-sh") || !strings.Contains(out.String(), "128+N") {
		t.Errorf("exec -h: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
}
