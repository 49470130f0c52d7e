package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestTokenFoundFromAnyDirectory runs svcctl exec from another working
// directory against a daemon that generated its token: -data-dir and
// SVC_DATA_DIR find it, and with neither the error names every place looked.
func TestTokenFoundFromAnyDirectory(t *testing.T) {
	d := harness.Start(t, harness.Options{GeneratedToken: true})
	t.Chdir(t.TempDir())
	noEnv := func(string) string { return "" }

	var out, errb bytes.Buffer
	if code := run([]string{"-addr", d.URL, "-data-dir", d.DataDir, "exec", "--", "echo", "via-flag"}, &out, &errb, noEnv); code != 0 || !strings.Contains(out.String(), "via-flag") {
		t.Fatalf("-data-dir: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	viaEnv := func(k string) string {
		if k == "SVC_DATA_DIR" {
			return d.DataDir
		}
		return ""
	}
	if code := run([]string{"-addr", d.URL, "exec", "--", "echo", "via-env"}, &out, &errb, viaEnv); code != 0 || !strings.Contains(out.String(), "via-env") {
		t.Fatalf("SVC_DATA_DIR: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code := run([]string{"-addr", d.URL, "exec", "--", "true"}, &out, &errb, noEnv)
	wd, _ := os.Getwd()
	msg := errb.String()
	if code != exitNoRun || !strings.Contains(msg, "SVC_SHARED_TOKEN") || !strings.Contains(msg, filepath.Join(wd, "data", "shared_token")) || !strings.Contains(msg, "-data-dir") {
		t.Fatalf("no token anywhere: exit %d, %q", code, msg)
	}
}

// TestEveryTokenLevel runs svcctl's everyday commands against daemons with
// each require_token level: svcctl sends the token it finds on every call,
// so reads under "all" and writes under "writes" keep working.
func TestEveryTokenLevel(t *testing.T) {
	for _, level := range []string{"host-ops", "writes", "all"} {
		t.Run(level, func(t *testing.T) {
			d := harness.Start(t, harness.Options{Env: []string{"SVC_REQUIRE_TOKEN=" + level}})
			for _, args := range [][]string{
				{"system", "pause", "--reason", "level " + level},
				{"system", "state"},
				{"status"},
				{"tasks", "ls"},
				{"system", "resume"},
			} {
				if code, out, errOut := svcctl(t, d, args...); code != 0 {
					t.Errorf("svcctl %s under %s: exit %d\n%s%s", strings.Join(args, " "), level, code, out, errOut)
				}
			}
		})
	}
}
