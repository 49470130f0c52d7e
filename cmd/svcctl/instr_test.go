package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestInstrRunPrintsTheReport runs a reply file through svcctl instr run
// against the real daemon and checks the printed report.
func TestInstrRunPrintsTheReport(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	reply := filepath.Join(t.TempDir(), "reply.md")
	text := "Let me check.\n\n```instr\n@svc::exec::echo from-instr\n```\n\n```instr\n@svc::status\n```\n"
	if err := os.WriteFile(reply, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := svcctl(t, d, "instr", "run", "-file", reply)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "[instr-result] svcd instruction results\n-- @svc::exec --\n成功\nfrom-instr\n\n-- @svc::status --\n成功\n") {
		t.Fatalf("report:\n%s", out)
	}

	bad := filepath.Join(t.TempDir(), "bad.md")
	_ = os.WriteFile(bad, []byte("```instr\n@svc::exec::exit 4\n```"), 0o600)
	code, out, _ = svcctl(t, d, "instr", "run", "-file", bad)
	if code != 1 || !strings.Contains(out, "-- @svc::exec --\n失败\nexit code 4") {
		t.Fatalf("failed instruction: exit %d\n%s", code, out)
	}
}
