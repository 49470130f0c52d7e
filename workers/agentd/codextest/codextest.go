// Package codextest finds the pinned Codex binary and writes a Codex home that
// points at a fake model server, for tests that drive the real app-server.
package codextest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// EnvBin names the variable that overrides where the codex binary is.
const EnvBin = "SVCD_CODEX_BIN"

// Bin returns the codex binary: $SVCD_CODEX_BIN, else .tools/codex (installed
// by .ci/run) at the module root. Absent, the test skips loudly, except under
// CI=true where it fails.
func Bin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvBin); p != "" {
		return p
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".tools", "codex", "node_modules", ".bin", "codex")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil || filepath.Dir(d) == d {
			break
		}
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p
	}
	msg := "CODEX NOT INSTALLED: run `npm install --prefix .tools/codex @openai/codex@0.169.0` (as .ci/run does) or set " + EnvBin
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPING: " + msg)
	return ""
}

// Home writes a CODEX_HOME whose only model provider is the fake server at
// baseURL (http://127.0.0.1:port/v1), so Codex makes no outside connection.
func Home(t testing.TB, baseURL string) string {
	t.Helper()
	dir := killedTreeDir(t, "codex-home-")
	if err := WriteConfig(dir, baseURL); err != nil {
		t.Fatal(err)
	}
	return dir
}

// killedTreeDir is a temporary folder for a process that dies after the
// test's own clean-up killed the daemon: SIGKILL reaches the daemon at
// once, but its workers and their Codex child die in turn by their parent-
// death signals, and Codex may still write its session files meanwhile.
// t.TempDir's removal fails on such a late file ("directory not empty");
// this one retries for up to 5 s, then reports what is left.
func killedTreeDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove %s: %v (a process of the killed daemon still writes there)", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

// WriteConfig writes config.toml for the fake provider into home.
func WriteConfig(home, baseURL string) error {
	cfg := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
approval_policy = "never"

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
`, baseURL)
	return os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600)
}

// ShellHomeEnv is a HOME=… entry for the environment of a test's Codex
// child: an empty home of the test's own. Codex runs commands in a login
// shell, which sources the machine's dotfiles; pyenv's init there runs
// `pyenv rehash` under a lock file, and a shell killed mid-rehash (the
// agentd kill tests do that) leaves the lock, so every later login shell
// on the machine waits 60 s for it — an accepted command then times out.
func ShellHomeEnv(t testing.TB) string {
	return "HOME=" + killedTreeDir(t, "codex-shell-home-")
}
