package e2e

import (
	"context"
	"errors"
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

// A raft address in use fails the same way, before anything exists, and
// names -raft-addr and SVC_RAFT_ADDR.
func TestStartupRaftPortInUseFailsFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dataDir := filepath.Join(t.TempDir(), "fresh")
	out, err := runSvcd(t, nil, "serve", "-listen", harness.FreePort(t), "-raft-addr", ln.Addr().String(), "-data-dir", dataDir)
	if err == nil {
		t.Fatalf("svcd started on a raft port in use:\n%s", out)
	}
	for _, want := range []string{"raft listen on " + ln.Addr().String(), "address already in use", "-raft-addr", "SVC_RAFT_ADDR"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s exists after the failed start", dataDir)
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
	// Offline tools refuse a running node's dir too, writing nothing.
	for _, args := range [][]string{
		{"recover", "-data-dir", first.DataDir, "-raft-addr", "127.0.0.1:1"},
		{"snapshot", "save", "-data-dir", first.DataDir, filepath.Join(t.TempDir(), "snap")},
	} {
		out, err := runSvcd(t, nil, args...)
		if err == nil || !strings.Contains(out, "needs a stopped node") || !strings.Contains(out, "pid "+strconv.Itoa(first.Pid())) {
			t.Errorf("svcd %s on a running node's dir: err %v\n%s", args[0], err, out)
		}
		// The advice is for an operator who wants this node's data, not
		// for a second daemon: never "another data dir".
		if strings.Contains(out, "another data dir") {
			t.Errorf("svcd %s advises another data dir:\n%s", args[0], out)
		}
		if args[0] == "snapshot" && !strings.Contains(out, "svcctl snapshot save") {
			t.Errorf("svcd snapshot save on a running node does not point at svcctl snapshot save:\n%s", out)
		}
	}
	if _, err := os.Stat(filepath.Join(first.DataDir, "peers.json")); err == nil {
		t.Errorf("svcd recover wrote peers.json under a running daemon")
	}
	// SIGKILL leaves no chance to clean up: the kernel drops the lock.
	first.Kill()
	second := harness.Start(t, harness.Options{DataDir: first.DataDir})
	if resp := second.Do("GET", "/healthz", nil); resp.Status != 200 {
		t.Fatalf("daemon after the holder died: /healthz %d", resp.Status)
	}
}

// svcd --help, -h and help print the overview on stdout with status 0;
// `help serve` lists serve's flags; a mistyped flag names the nearest one.
func TestStartupHelpAndFlagSuggestion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--help", "-h", "help"} {
		out, err := runSvcd(t, nil, arg)
		if err != nil || !strings.Contains(out, "usage: svcd <command>") || !strings.Contains(out, "serve") {
			t.Errorf("svcd %s: err %v, output:\n%s", arg, err, out)
		}
	}
	out, err := runSvcd(t, nil, "help", "serve")
	if err != nil || !strings.Contains(out, "-listen") || !strings.Contains(out, "-data-dir") {
		t.Errorf("svcd help serve: err %v, output:\n%s", err, out)
	}
	dataDir := filepath.Join(t.TempDir(), "d")
	out, err = runSvcd(t, nil, "serve", "-lisen", harness.FreePort(t), "-data-dir", dataDir)
	if err == nil || !strings.Contains(out, "did you mean -listen?") {
		t.Errorf("svcd serve -lisen: err %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("a refused flag still created %s", dataDir)
	}
}

// -listen on a non-loopback address logs one warning naming what becomes
// reachable and what guards it. The daemon runs in a network namespace of
// its own (only lo inside), so 0.0.0.0 exposes nothing of this machine; a
// loopback listen stays silent.
func TestStartupNonLoopbackListenWarns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root on this machine kind; this test needs a network namespace")
		}
		t.Skip("needs root for a network namespace")
	}
	const warnKey = "which is not loopback"
	start := func(listen string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		script := `ip link set lo up && exec "$0" serve -listen "$1" -data-dir "$2"`
		cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", script, harness.Binary(t), listen, t.TempDir())
		cmd.Env = append(os.Environ(), "SVC_AGENTD_SPAWN=false", "SVC_SHARED_TOKEN=test-token-0123456789abcdef")
		// The process writes while this test reads: a locked buffer.
		var logs syncBufferE
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		// The warning comes before raft; the "listening" line (or the deadline) marks
		// a finished start-up either way.
		deadline := time.After(15 * time.Second)
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-deadline:
				break wait
			case <-time.After(100 * time.Millisecond):
				if s := logs.String(); strings.Contains(s, "listening: address=") {
					break wait
				}
			}
		}
		cmd.Process.Kill()
		<-done
		return logs.String()
	}
	out := start("0.0.0.0:4317")
	if n := strings.Count(out, warnKey); n != 1 {
		t.Fatalf("0.0.0.0: %d warnings, want 1:\n%s", n, out)
	}
	for _, want := range []string{"reachable from other hosts", "Host allow-list", "require_token=writes", "write guard", "allowed_hosts"} {
		if !strings.Contains(out, want) {
			t.Errorf("warning lacks %q:\n%s", want, out)
		}
	}
	out = start("127.0.0.1:4317")
	if !strings.Contains(out, "listening: address=") {
		t.Fatalf("loopback daemon never came up:\n%s", out)
	}
	if strings.Contains(out, warnKey) {
		t.Errorf("loopback listen warned:\n%s", out)
	}
}

// The start-up log names the panel's URL and, with no browser paired, how
// to pair one; GET / sends a browser there and HEAD answers on GET routes,
// on the real binary.
func TestStartupPanelURLRootAndHead(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_BROWSER_PAIRING=codes"}})
	panel := d.URL + "/v1/status/ui"
	if !d.WaitLog("status panel: open "+panel, 5*time.Second) {
		t.Fatalf("the start-up log does not name %s:\n%s", panel, d.Logs())
	}
	if !strings.Contains(d.Logs(), "svcctl browser pair") {
		t.Errorf("no pairing hint with no browser paired:\n%s", d.Logs())
	}
	resp := d.Do("GET", "/", nil, "Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
	if resp.Status != 200 || !strings.Contains(string(resp.Body), "<html") {
		t.Fatalf("browser GET / did not land on the panel: %d %.200s", resp.Status, resp.Body)
	}
	idx := d.Do("GET", "/", nil).JSON(t)
	if data, _ := idx["data"].(map[string]any); data["panel"] != "/v1/status/ui" {
		t.Fatalf("JSON GET /: %v", idx)
	}
	for _, path := range []string{"/", "/healthz", "/v1/status", "/v1/status/ui", "/v1/workers"} {
		head := d.Do("HEAD", path, nil)
		if head.Status != 200 || len(head.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes", path, head.Status, len(head.Body))
		}
	}
}

// A mistyped svcd command names the one probably meant, exit 2.
func TestSvcdUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	out, err := runSvcd(t, nil, "snapshto", "save")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, `unknown command "snapshto" (did you mean snapshot?)`) {
		t.Fatalf("svcd snapshto: %v\n%s", err, out)
	}
}

// `svcd witness -h` lists what a witness uses, not every flag of serve.
func TestWitnessHelpListsWitnessFlags(t *testing.T) {
	t.Parallel()
	out, err := runSvcd(t, nil, "witness", "-h")
	if err != nil {
		t.Fatalf("svcd witness -h: %v\n%s", err, out)
	}
	for _, want := range []string{"-join", "-raft-addr", "-data-dir", "-node-id", "SVC_SHARED_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("svcd witness -h lacks %s:\n%s", want, out)
		}
	}
	for _, not := range []string{"-listen", "-exec-rlimits", "-hostops-allowed-roots", "-daemon-url"} {
		if strings.Contains(out, "  "+not+" ") {
			t.Errorf("svcd witness -h lists serve's %s:\n%s", not, out)
		}
	}
}
