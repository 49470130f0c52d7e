package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestExecIsTheRemoteCommand runs svcctl exec against the real daemon: the
// command's stdout, stderr and exit code are svcctl's, the argv survives
// the daemon's /bin/sh unchanged, and -sh runs a shell string.
func TestExecIsTheRemoteCommand(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_OUTPUT_CAP_BYTES=128"}})

	code, out, errOut := svcctl(t, d, "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 || out != "out\n" || errOut != "err\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 3, \"out\\n\", \"err\\n\"", code, out, errOut)
	}

	args := []string{"it's", "a  b", "$HOME", `"q"`, "", `back\slash`, "*", "semi;colon", "$(id)", "new\nline"}
	code, out, errOut = svcctl(t, d, append([]string{"exec", "--", "printf", "[%s]"}, args...)...)
	want := ""
	for _, a := range args {
		want += "[" + a + "]"
	}
	if code != 0 || out != want {
		t.Fatalf("argv: exit %d\n got %q\nwant %q\n%s", code, out, want, errOut)
	}

	if code, out, _ = svcctl(t, d, "exec", "-sh", "echo abc | tr b X"); code != 0 || out != "aXc\n" {
		t.Fatalf("-sh pipeline: exit %d %q", code, out)
	}

	// Bytes that are not UTF-8 come back as they are (the daemon sends base64).
	if code, out, _ = svcctl(t, d, "exec", "-sh", `printf '\377\376x'`); code != 0 || out != "\xff\xfex" {
		t.Fatalf("binary stdout: exit %d %q", code, out)
	}

	code, out, errOut = svcctl(t, d, "exec", "-sh", "head -c 300 /dev/zero | tr '\\0' a")
	if code != 0 || out != strings.Repeat("a", 128) || !strings.Contains(errOut, "stdout was truncated") {
		t.Fatalf("truncated: exit %d %q %q", code, out, errOut)
	}

	code, _, errOut = svcctl(t, d, "exec", "-sh", "kill -TERM $$")
	if code != 128+15 || !strings.Contains(errOut, "killed by SIGTERM") {
		t.Fatalf("signaled: exit %d %q", code, errOut)
	}

	code, out, errOut = svcctl(t, d, "exec", "-timeout-ms", "300", "--", "sleep", "5")
	if code != exitTimedOut || out != "" || !strings.Contains(errOut, "timed out after") {
		t.Fatalf("timeout: exit %d %q %q", code, out, errOut)
	}

	// -format=json, global or per command: the envelope, same exit code.
	for _, argv := range [][]string{{"-format=json", "exec", "-sh", "echo j; exit 5"}, {"exec", "-format=json", "-sh", "echo j; exit 5"}} {
		code, out, _ = svcctl(t, d, argv...)
		var env execAnswer
		if code != 5 || json.Unmarshal([]byte(out), &env) != nil || env.Data.Result.Stdout != "j\n" || env.Data.Result.ExitCode != 5 {
			t.Fatalf("%v: exit %d\n%s", argv, code, out)
		}
	}

	if code, _, errOut = svcctl(t, d, "exec", "-sh", "true", "extra"); code != 2 {
		t.Fatalf("-sh with arguments: exit %d %s", code, errOut)
	}
	code, _, errOut = svcctl(t, d, "exec", "-cwd", "/nonexistent/dir", "--", "true")
	if code != exitNoRun || !strings.Contains(errOut, "svcctl exec:") {
		t.Fatalf("bad cwd: exit %d %q", code, errOut)
	}
}

// TestWrongTokenNamesItsSource: a 401 says which source svcctl took the
// token from and where the daemon keeps its own.
func TestWrongTokenNamesItsSource(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	code, _, errOut := svcctl(t, d, "-token", "wrong", "exec", "--", "true")
	if code != exitNoRun || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "the -token flag") || !strings.Contains(errOut, "<its data dir>/shared_token") {
		t.Fatalf("-token: exit %d\n%s", code, errOut)
	}
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "SVC_SHARED_TOKEN" {
			return "also-wrong"
		}
		return ""
	}
	code = run([]string{"-addr", d.URL, "workers", "restart", "hostops"}, &out, &errb, env)
	if code != 1 || !strings.Contains(errb.String(), "from SVC_SHARED_TOKEN") {
		t.Fatalf("env: exit %d\n%s", code, errb.String())
	}
	// A token file in a data dir is named by its path.
	dir := t.TempDir()
	if err := writeFile(dir+"/shared_token", "stale-token\n"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	code = run([]string{"-addr", d.URL, "-data-dir", dir, "workers", "restart", "hostops"}, &out, &errb, func(string) string { return "" })
	if code != 1 || !strings.Contains(errb.String(), "from "+dir+"/shared_token") {
		t.Fatalf("token file: exit %d\n%s", code, errb.String())
	}
}

// TestNoTokenSentSaysSo: a daemon that wants the token on reads, and an
// svcctl that found none: the 401 says no token was sent and where to look.
func TestNoTokenSentSaysSo(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_REQUIRE_TOKEN=all"}})
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	code := run([]string{"-addr", d.URL, "status"}, &out, &errb, func(string) string { return "" })
	if code != 1 || !strings.Contains(errb.String(), "401") || !strings.Contains(errb.String(), "svcctl sent no token") {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"plain": "plain", "it's": `'it'\''s'`, "": "''", "a b": "'a b'", "$x": "'$x'", "-n": "-n", "/a/b.c": "/a/b.c"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
