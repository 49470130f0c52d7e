package main

import (
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// Help that was asked for goes to stdout with status 0; a mistake goes to
// stderr with status 2 and names what was probably meant.
func TestHelpOnStdoutAndDidYouMean(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	for _, args := range [][]string{{"-h"}, {"status", "-h"}, {"exec", "-h"}, {"system", "pause", "-h"}, {"files", "--help"}} {
		code, out, errOut := svcctl(t, d, args...)
		if code != 0 || !strings.Contains(out, "usage: svcctl") || errOut != "" {
			t.Errorf("svcctl %v: exit %d, stdout %q, stderr %q; want the help on stdout, exit 0", args, code, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `did you mean status?`},
		{[]string{"-fromat=json", "status"}, "did you mean -format?"},
		{[]string{"status", "-fromat=json"}, "did you mean -format?"},
		{[]string{"system", "pause", "-resaon", "x"}, "did you mean -reason?"},
		{[]string{"files", "read", "-bas64", "/etc/hostname"}, "did you mean -base64?"},
		{[]string{"exec", "-timeout", "5", "--", "true"}, "did you mean -timeout-ms?"},
	} {
		code, out, errOut := svcctl(t, d, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("svcctl %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// Global flags may follow the command, as people type them; after the
// command word of exec (or after --) they belong to the remote command.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	for _, args := range [][]string{{"status", "-format=json"}, {"status", "-format", "json"}, {"system", "state", "--format=json"}} {
		code, out, errOut := svcctl(t, d, args...)
		if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
			t.Errorf("svcctl %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	// -addr after the command wins over the one before it (the last given).
	code, _, errOut := svcctl(t, d, "status", "-addr", "http://"+harness.FreePort(t))
	if code != 1 || !strings.Contains(errOut, "daemon at") {
		t.Errorf("-addr after the command was not used: exit %d\n%s", code, errOut)
	}
	code, out, errOut := svcctl(t, d, "exec", "echo", "-format", "x")
	if code != 0 || strings.TrimSpace(out) != "-format x" {
		t.Errorf("exec echo -format x: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
