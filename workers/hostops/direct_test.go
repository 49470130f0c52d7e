package hostops

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func requireDash(t testing.TB) {
	t.Helper()
	if !ShellIsDash() {
		t.Skipf("%s is not dash: every command goes through it", Shell)
	}
}

// directFixture is a folder with programs the cases run: scripts with and
// without #!, one not executable, one that kills itself with a signal.
func directFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"args.sh":   {"#!/bin/sh\nprintf '[%s]' \"$0\" \"$@\"; echo; printf 'pwd=%s\\n' \"$PWD\"\n", 0o755},
		"noshebang": {"echo run by the shell: $0\n", 0o755},
		"notexec":   {"#!/bin/sh\necho never\n", 0o644},
		"badinterp": {"#!/nonexistent/interpreter\n", 0o755},
		"killme":    {"#!/bin/sh\necho before >&2\nkill -$1 $$\necho after\n", 0o755},
	}
	for name, f := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scratchLine: each command has its own scratch folder; the rest of the
// environment must match.
var scratchLine = regexp.MustCompile(`(?m)^TMPDIR=.*\n`)

// TestDirectMatchesTheShell runs each command twice, directly where the
// worker would and always through /bin/sh, and wants the same result:
// output, exit status, signal, error code.
func TestDirectMatchesTheShell(t *testing.T) {
	requireDash(t)
	dir := directFixture(t)
	direct := newTestLocal(t, nil)
	shell := newTestLocal(t, func(c *Config) { c.ShellAlways = true })
	cases := []struct {
		cmd, cwd string
		direct   bool // the worker runs it without the shell
	}{
		{cmd: "true", direct: true},
		{cmd: "false", direct: true},
		{cmd: "true --version"},
		{cmd: "echo -e a b"},
		{cmd: "ls", direct: true},
		{cmd: "ls -la sub", direct: true},
		{cmd: "ls\t-d\t.  sub ", direct: true},
		{cmd: "ls -d x=y", direct: true},
		{cmd: "env", direct: true},
		{cmd: "/usr/bin/env", direct: true},
		{cmd: "env", cwd: "link", direct: true},
		{cmd: "printenv PWD", cwd: "sub", direct: true},
		{cmd: "./args.sh a b,c d=e", direct: true},
		{cmd: "../args.sh x", cwd: "sub", direct: true},
		{cmd: "./noshebang", direct: true},
		{cmd: "./notexec", direct: true},
		{cmd: "./badinterp", direct: true},
		{cmd: "./missing"},
		{cmd: "no-such-command-xyz"},
		{cmd: "sub", direct: false},
		{cmd: "./killme SEGV", direct: true},
		{cmd: "./killme TERM", direct: true},
		{cmd: "./killme ABRT", direct: true},
		{cmd: "./killme INT", direct: true},
		{cmd: "./killme PIPE", direct: true},
		{cmd: "./killme HUP", direct: true},
		{cmd: "./killme 37", direct: true},
		{cmd: "./killme 32", direct: true},
		{cmd: "id -u", direct: true},
		{cmd: "FOO=1 env"},
		{cmd: "ls | wc -l"},
	}
	for _, c := range cases {
		cwd := filepath.Join(dir, c.cwd)
		if got := planExec(c.cmd, cwd, direct.now().env).direct; got != c.direct {
			t.Errorf("%q: direct = %v, want %v", c.cmd, got, c.direct)
		}
		req := ExecRequest{Command: c.cmd, Cwd: cwd, Timeout: 20 * time.Second}
		a, err := direct.Exec(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := shell.Exec(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		outA, outB := scratchLine.ReplaceAllString(string(a.Stdout), ""), scratchLine.ReplaceAllString(string(b.Stdout), "")
		if strings.HasSuffix(c.cmd, "env") {
			// dash exports its variables in its hash table's order.
			outA, outB = sortedLines(outA), sortedLines(outB)
		}
		if outA != outB || string(a.Stderr) != string(b.Stderr) || a.ExitCode != b.ExitCode || a.Signal != b.Signal ||
			a.ErrorCode != b.ErrorCode || a.OK != b.OK {
			t.Errorf("%q in %s:\n direct: ok=%v exit=%d signal=%q code=%q stdout=%q stderr=%q\n  shell: ok=%v exit=%d signal=%q code=%q stdout=%q stderr=%q",
				c.cmd, c.cwd, a.OK, a.ExitCode, a.Signal, a.ErrorCode, outA, a.Stderr, b.OK, b.ExitCode, b.Signal, b.ErrorCode, outB, b.Stderr)
		}
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// A program the worker ran itself and then killed (timeout) is reported as
// killed, as the shell's group was; its pid leads its own process group.
func TestDirectProgramKilledOnTimeout(t *testing.T) {
	requireDash(t)
	l := newTestLocal(t, nil)
	if !planExec("sleep 30", "/", l.now().env).direct {
		t.Fatal("sleep 30 should run without the shell")
	}
	var pid int
	res, err := l.Exec(context.Background(), ExecRequest{Command: "sleep 30", Cwd: "/", Timeout: 200 * time.Millisecond},
		func(st Started) { pid = st.Pid })
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal != "SIGKILL" || res.ErrorCode != CodeTimedOut || res.Pid != pid || pid == 0 {
		t.Fatalf("timed-out direct program: %+v (started pid %d)", res, pid)
	}
}

// Limits set by tracing the child to its execve (rlimit_trace.go) hold for
// a program run without the shell, and a program that does not start there
// goes to the shell with its limits too.
func TestDirectProgramGetsTracedLimits(t *testing.T) {
	requireDash(t)
	dir := directFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "nofile.sh"), []byte("#!/bin/sh\nulimit -n\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nofile-noshebang"), []byte("ulimit -n\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := newTestLocal(t, func(c *Config) { c.Rlimits = map[string]uint64{"nofile": 123} })
	if !l.traceLimits() {
		t.Skip("tracing is not allowed here: limits go through the shim, and commands through the shell")
	}
	for _, cmd := range []string{"./nofile.sh", "./nofile-noshebang"} {
		if !l.plan(cmd, dir).direct {
			t.Fatalf("%s should be tried without the shell", cmd)
		}
		res, err := l.Exec(context.Background(), ExecRequest{Command: cmd, Cwd: dir, Timeout: 10 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK || strings.TrimSpace(string(res.Stdout)) != "123" {
			t.Errorf("%s: %+v (stdout %q)", cmd, res, res.Stdout)
		}
	}
}

// The words the worker leaves to the shell are exactly the ones /bin/sh
// does not look up in PATH: asked of the shell itself, for every name in
// shellWords and every program on this machine's default PATH.
func TestShellWordsAreTheShells(t *testing.T) {
	requireDash(t)
	names := map[string]bool{}
	for n := range shellWords {
		names[n] = true
	}
	for _, d := range filepath.SplitList(shellDefaultPath) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if _, ok := plainWords(e.Name()); ok && !strings.ContainsRune(e.Name(), '=') {
				names[e.Name()] = true
			}
		}
	}
	sorted := slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	})
	var script strings.Builder
	for _, n := range sorted {
		script.WriteString("type " + n + "\n")
	}
	out, _ := exec.Command(Shell, "-c", script.String()).CombinedOutput()
	special := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		name, what, ok := strings.Cut(line, " is ")
		if ok && (strings.Contains(what, "builtin") || strings.Contains(what, "keyword")) {
			special[name] = true
		}
	}
	for _, n := range sorted {
		if special[n] != shellWords[n] {
			t.Errorf("%q: the shell says builtin/keyword = %v, shellWords says %v", n, special[n], shellWords[n])
		}
	}
}

func TestPlainWords(t *testing.T) {
	for cmd, want := range map[string][]string{
		"ls -l /srv":         {"ls", "-l", "/srv"},
		"  git\tstatus  ":    {"git", "status"},
		"cp a,b c:d e@f g%h": {"cp", "a,b", "c:d", "e@f", "g%h"},
		"ls x=y":             {"ls", "x=y"},
		"X=1 ls":             nil,
		"ls *":               nil,
		"ls ~":               nil,
		"ls #c":              nil,
		"ls 'a'":             nil,
		"ls $HOME":           nil,
		"ls\nrm x":           nil,
		"ls;rm":              nil,
		"ls > f":             nil,
		"ls é":               nil,
		"!ls":                nil,
		"":                   nil,
		" \t ":               nil,
	} {
		got, ok := plainWords(cmd)
		if ok != (want != nil) || !slices.Equal(got, want) {
			t.Errorf("plainWords(%q) = %q, %v; want %q", cmd, got, ok, want)
		}
	}
}

// FuzzPlainWords: words come back only from commands of literal bytes and
// blanks, non-empty, without blanks, and joined they split the same way.
func FuzzPlainWords(f *testing.F) {
	for _, s := range []string{"ls -l /srv", "true", "X=1 ls", "ls | wc", "a\tb  c", "é", "ls ~", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		words, ok := plainWords(cmd)
		if !ok {
			if words != nil {
				t.Fatalf("%q: words without ok", cmd)
			}
			return
		}
		if len(words) == 0 || strings.ContainsRune(words[0], '=') {
			t.Fatalf("%q: %q", cmd, words)
		}
		for _, w := range words {
			if w == "" {
				t.Fatalf("%q: empty word", cmd)
			}
			for i := 0; i < len(w); i++ {
				if !literalByte(w[i]) {
					t.Fatalf("%q: word %q has byte %q", cmd, w, w[i])
				}
			}
		}
		if again, ok := plainWords(strings.Join(words, " ")); !ok || !slices.Equal(again, words) {
			t.Fatalf("%q: %q joined splits as %q", cmd, words, again)
		}
	})
}
