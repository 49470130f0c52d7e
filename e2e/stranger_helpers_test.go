package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// Issue 32 asks every "a command is a stranger to the daemon" attack to be
// tried three ways: the daemon as root with no exec_user (the default), as
// root with an exec_user, and as an unprivileged user (the shipped unit's
// User=svcd; nobody here).
type daemonWay struct {
	name  string
	start func(t *testing.T, opts harness.Options) *harness.Daemon
}

const nobodyID = "65534"

func strangerWays(t *testing.T) []daemonWay {
	t.Helper()
	if os.Geteuid() != 0 {
		msg := "the three ways need the tests to run as root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return []daemonWay{
		{"root", func(t *testing.T, o harness.Options) *harness.Daemon { return harness.Start(t, o) }},
		{"root with exec_user", func(t *testing.T, o harness.Options) *harness.Daemon {
			o.Env = append(o.Env, "SVC_EXEC_USER=nobody")
			return harness.Start(t, o)
		}},
		{"unprivileged daemon", func(t *testing.T, o harness.Options) *harness.Daemon {
			dir := openDir(t)
			o.Bin = harness.BinaryCopy(t, dir, "svcd")
			o.DataDir = filepath.Join(dir, "data")
			if err := os.Mkdir(o.DataDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(o.DataDir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			o.Prefix = []string{"setpriv", "--reuid=" + nobodyID, "--regid=" + nobodyID, "--clear-groups"}
			return harness.Start(t, o)
		}},
	}
}

// openDir is a new temporary directory every user can reach and list. Only
// the directories t.TempDir made are opened, never the system's temporary
// directory itself (1777 must stay).
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != "/" && p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	return dir
}

// buildProbe compiles a one-file Go program (standard library only) into a
// directory every user can reach, and returns the binary's path.
func buildProbe(t *testing.T, name, src string) string {
	t.Helper()
	dir := openDir(t)
	file := filepath.Join(dir, name+".go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, file)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// lineWith is the first line of out containing s ("" when none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
