package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/version"
)

// svcctl version prints its own build, then the daemon's from GET /version;
// an unreachable daemon is reported and is not a failure.
func TestVersionPrintsClientAndDaemon(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	var out, errOut bytes.Buffer
	if code := run([]string{"-addr", d.URL, "version"}, &out, &errOut, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := version.Get().String()
	if len(lines) != 2 || lines[0] != "svcctl "+want || !strings.HasPrefix(lines[1], "daemon svcd ") || !strings.Contains(lines[1], "built ") {
		t.Fatalf("svcctl version printed %q", out.String())
	}
	d.Kill()
	out.Reset()
	if code := run([]string{"-addr", d.URL, "version"}, &out, &errOut, func(string) string { return "" }); code != 0 || !strings.Contains(out.String(), "not reachable") {
		t.Fatalf("with the daemon gone: exit %d, %q", code, out.String())
	}
}
