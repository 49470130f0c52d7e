package main

import (
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

func TestClusterCommands(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	code, out, errOut := svcctlJSON(t, d, "cluster", "ls")
	if code != 0 || !strings.Contains(out, `"node_id": "node1"`) || !strings.Contains(out, `"role": "leader"`) {
		t.Fatalf("cluster ls: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := svcctlJSON(t, d, "cluster", "remove", "nobody"); code != 1 || !strings.Contains(out, "unknown_member") {
		t.Fatalf("remove unknown: exit %d\n%s", code, out)
	}
	if code, _, _ := svcctlJSON(t, d, "cluster", "join", "only-two-args"); code != 2 {
		t.Fatalf("bad join usage: exit %d", code)
	}
}
