package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// svcctl runs the CLI in-process against d and returns exit code and output.
func svcctl(t *testing.T, d *harness.Daemon, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "SVC_SHARED_TOKEN" {
			return d.Token
		}
		return ""
	}
	code := run(append([]string{"-addr", d.URL}, args...), &out, &errb, env)
	return code, out.String(), errb.String()
}

// svcctlJSON is svcctl with -format=json, for tests that read the envelope.
func svcctlJSON(t *testing.T, d *harness.Daemon, args ...string) (int, string, string) {
	t.Helper()
	return svcctl(t, d, append([]string{"-format=json"}, args...)...)
}

func TestSystemCommandsAgainstTheDaemon(t *testing.T) {
	// At the default require_token level: svcctl sends the token it finds.
	d := harness.Start(t, harness.Options{DefaultTokenLevel: true})

	code, out, errOut := svcctlJSON(t, d, "system", "pause", "--reason", "cli test", "--by", "alice")
	if code != 0 {
		t.Fatalf("pause exit %d: %s %s", code, out, errOut)
	}
	var env struct {
		Data struct {
			Mode        string `json:"mode"`
			Reason      string `json:"reason"`
			RequestedBy string `json:"requested_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if env.Data.Mode != "paused" || env.Data.Reason != "cli test" || env.Data.RequestedBy != "alice" {
		t.Fatalf("pause answered %+v", env.Data)
	}

	code, out, _ = svcctlJSON(t, d, "system", "state")
	if code != 0 || !strings.Contains(out, `"mode": "paused"`) {
		t.Fatalf("state exit %d: %s", code, out)
	}
	code, out, _ = svcctlJSON(t, d, "status")
	if code != 0 || !strings.Contains(out, `"daemon_reachable": true`) {
		t.Fatalf("status exit %d: %s", code, out)
	}
	for _, action := range []string{"drain", "resume"} {
		if code, out, _ := svcctlJSON(t, d, "system", action); code != 0 {
			t.Fatalf("%s exit %d: %s", action, code, out)
		}
	}
	if code, out, _ := svcctlJSON(t, d, "system", "state"); code != 0 || !strings.Contains(out, `"mode": "running"`) {
		t.Fatalf("after resume: %s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	for _, args := range [][]string{{}, {"bogus"}, {"system"}, {"system", "explode"}, {"system", "pause", "--nope"}, {"status", "extra"}} {
		if code, _, _ := svcctlJSON(t, d, args...); code != 2 {
			t.Errorf("svcctl %v exit %d, want 2", args, code)
		}
	}
	// A daemon that is down is an error, not a usage mistake.
	var out, errb bytes.Buffer
	if code := run([]string{"-addr", "http://" + harness.FreePort(t), "status"}, &out, &errb, func(string) string { return "" }); code != 1 || !strings.Contains(errb.String(), "daemon at") {
		t.Fatalf("down daemon: exit %d, %s", code, errb.String())
	}
}
