package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// runSvcd runs the real binary to its end (a start-up that must fail) and
// returns what it printed and how it exited.
func runSvcd(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
	cmd.Env = append(append(os.Environ(), "SVC_AGENTD_SPAWN=false"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A port in use fails before anything is created: no data dir, no token
// file, no raft.db, and the message names the address and both ways to move
// the listener (the -listen flag and SVC_LISTEN).
func TestStartupPortInUseFailsFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	dataDir := filepath.Join(t.TempDir(), "fresh")

	out, err := runSvcd(t, nil, "serve", "-listen", addr, "-data-dir", dataDir)
	if err == nil {
		t.Fatalf("svcd started on a port in use:\n%s", out)
	}
	for _, want := range []string{"listen on " + addr, "address already in use", "-listen", "SVC_LISTEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Nothing else ran first: no raft election warning, no token line.
	for _, not := range []string{"not_leader", "token", "raft"} {
		if strings.Contains(strings.ToLower(out), not) {
			t.Errorf("output mentions %q, so something started before the bind:\n%s", not, out)
		}
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dataDir)
		t.Fatalf("data dir %s exists after the failed start (stat err %v, entries %v)", dataDir, err, entries)
	}
}

// A second daemon on a data dir a running one holds fails at once, naming
// the dir and the holder's pid (it used to say "open raft log store:
// timeout"); once the first is gone the dir is free again, with no stale lock.
func TestStartupSecondDaemonNamesLockHolder(t *testing.T) {
	t.Parallel()
	first := harness.Start(t, harness.Options{})
	out, err := runSvcd(t, []string{"SVC_SHARED_TOKEN=test-token-0123456789abcdef"},
		"serve", "-listen", harness.FreePort(t), "-data-dir", first.DataDir)
	if err == nil {
		t.Fatalf("a second daemon started on a held data dir:\n%s", out)
	}
	for _, want := range []string{"data dir " + first.DataDir + " is in use by pid " + strconv.Itoa(first.Pid()), "-data-dir", "SVC_DATA_DIR"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "timeout") {
		t.Errorf("output still speaks of a timeout:\n%s", out)
	}
	if resp := first.Do("GET", "/healthz", nil); resp.Status != 200 {
		t.Fatalf("the first daemon suffered: /healthz %d", resp.Status)
	}
	// SIGKILL leaves no chance to clean up: the kernel drops the lock.
	first.Kill()
	second := harness.Start(t, harness.Options{DataDir: first.DataDir})
	if resp := second.Do("GET", "/healthz", nil); resp.Status != 200 {
		t.Fatalf("daemon after the holder died: /healthz %d", resp.Status)
	}
}
