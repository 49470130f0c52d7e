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

// The daemon refuses, at start, a token file or data dir another user owns
// or can write: whoever can replace the token file chooses the token that
// runs commands as the daemon's user (an outside check had root's daemon
// accept nobody's 0600 token file in a 0777 dir). -insecure-token-file
// stays the escape hatch. Needs root to hand files to another user.
func TestDataDirAndTokenFileOwnership(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root on this machine kind; this test needs it")
		}
		t.Skip("needs root to give files to another user")
	}
	const nobody = 65534
	serve := func(dir string, extra ...string) (string, error) {
		args := append([]string{"serve", "-listen", harness.FreePort(t), "-data-dir", dir}, extra...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
		cmd.Env = append(os.Environ(), "SVC_AGENTD_SPAWN=false")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mk := func(mode os.FileMode, uid int) string {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, -1); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	worldWritable := mk(0o777, 0)
	ownedByNobody := mk(0o700, nobody)
	nobodysToken := mk(0o700, 0)
	if err := os.WriteFile(filepath.Join(nobodysToken, "shared_token"), []byte("nobody-chose-this-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(nobodysToken, "shared_token"), nobody, -1); err != nil {
		t.Fatal(err)
	}
	parentOfNobody := filepath.Join(t.TempDir(), "nobodys")
	if err := os.Mkdir(parentOfNobody, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parentOfNobody, nobody, -1); err != nil {
		t.Fatal(err)
	}
	underNobody := filepath.Join(parentOfNobody, "data")
	if err := os.Mkdir(underNobody, 0o700); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, dir string
		want      []string
	}{
		{"a data dir others can write", worldWritable, []string{"mode 0777", "chmod go-w"}},
		{"a data dir another user owns", ownedByNobody, []string{"owned by uid 65534", "chown"}},
		{"a token file another user owns", nobodysToken, []string{"token file", "owned by uid 65534"}},
		{"a parent another user owns", underNobody, []string{"owned by uid 65534", "parent of the data dir"}},
	} {
		out, err := serve(c.dir)
		if err == nil {
			t.Errorf("%s: the daemon started", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message lacks %q:\n%s", c.name, w, out)
			}
		}
		if strings.Contains(out, "nobody-chose-this-token") {
			t.Errorf("%s: the token reached the output", c.name)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "raft.db")); err == nil {
			t.Errorf("%s: a raft log was created before the refusal", c.name)
		}
	}

	// The escape hatch: it starts, and says the token file is another's.
	d := harness.Start(t, harness.Options{DataDir: nobodysToken, GeneratedToken: true, Args: []string{"-insecure-token-file"}})
	if r := d.Do("GET", "/healthz", nil); r.Status != 200 {
		t.Fatalf("with -insecure-token-file: %d", r.Status)
	}
}
