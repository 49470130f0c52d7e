package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// TestLogFileSymlinkOrForeignOwnerIsRefusedAtStart (issue 34 item 6): a root
// daemon given a -log-file that is a symlink appended its log to the link's
// target, and kept a pre-existing 0644 file readable by all. Now it refuses
// to start on a link or on a file another user owns, with a message that
// names the problem and leaves the target alone; a 0644 file is made 0600.
func TestLogFileSymlinkOrForeignOwnerIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	serve := func(logFile string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, harness.Binary(t), "serve", "-listen", harness.FreePort(t),
			"-data-dir", t.TempDir(), "-log-file", logFile)
		cmd.Env = append(os.Environ(), "SVC_AGENTD_SPAWN=false", "SVC_SHARED_TOKEN=test-token-0123456789abcdef-0123456789")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	logDir := func() string {
		d := filepath.Join(t.TempDir(), "log")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(logDir(), "svcd.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	out, err := serve(link)
	if err == nil || !strings.Contains(out, "log_file "+link+" is a symbolic link") {
		t.Fatalf("serve with a symlinked log file: err=%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the link's target was written to: %q", b)
	}

	if os.Geteuid() == 0 {
		foreign := filepath.Join(logDir(), "svcd.log")
		if err := os.WriteFile(foreign, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, -1); err != nil {
			t.Fatal(err)
		}
		out, err = serve(foreign)
		if err == nil || !strings.Contains(out, "log_file "+foreign+" is owned by uid 65534") {
			t.Fatalf("serve with nobody's log file: err=%v\n%s", err, out)
		}
		if st, _ := os.Stat(foreign); st.Size() != 0 {
			t.Fatalf("nobody's file was written to (%d bytes)", st.Size())
		}
	} else {
		t.Log("not root: the foreign-owner half needs root to give a file to another user")
	}

	// A pre-existing world-readable log is narrowed to 0600 and the daemon
	// says so.
	wide := filepath.Join(logDir(), "svcd.log")
	if err := os.WriteFile(wide, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(wide, 0o644); err != nil {
		t.Fatal(err)
	}
	d := harness.Start(t, harness.Options{Args: []string{"-log-file", wide}})
	if st, _ := os.Stat(wide); st.Mode().Perm() != 0o600 {
		t.Fatalf("log file mode after start = %04o, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(d.Logs(), "log_file was readable by others; made it 0600") {
		t.Errorf("no line saying the mode was narrowed:\n%s", d.Logs())
	}
}
