package hostops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// A refused config leaves every operation as it was: each bad edit below
// is refused with a reason naming the key, and the worker keeps writing
// where it wrote before.
func TestReconfigureRefusesBadConfigAndChangesNothing(t *testing.T) {
	rootA := t.TempDir()
	l := newTestLocal(t, func(c *Config) {
		c.AllowedRoots = []string{rootA}
		c.Sandbox.WriteRoots = sandbox.WriteRootsFor([]string{rootA}, nil, c.Sandbox.ScratchRoot)
	})
	start := l.now()
	bad := []struct {
		name, want string
		mod        func(*Config)
	}{
		{"relative root", "not an absolute path", func(c *Config) { c.Sandbox.WriteRoots = []string{"rel/dir"} }},
		{"missing root", "no such file", func(c *Config) { c.AllowedRoots = []string{filepath.Join(rootA, "gone")} }},
		{"missing read root", "exec_read_roots", func(c *Config) { c.Sandbox.ReadRoots = []string{"/nonexistent-svcd-read-root"} }},
		{"limit over max", "exec_limits", func(c *Config) { c.Sandbox.Limits.Pids = c.Sandbox.MaxLimits.Pids + 1 }},
		{"unknown rlimit", "exec_rlimits", func(c *Config) { c.Rlimits = map[string]uint64{"bogus": 1} }},
		{"zero timeout max", "exec_timeout_max_ms", func(c *Config) { c.MaxTimeoutMs = 0 }},
		{"sandbox mode", "need a restart", func(c *Config) { c.Sandbox.Mode = sandbox.ModeOff }},
		{"output cap", "need a restart", func(c *Config) { c.OutputCap *= 2 }},
		{"identity", "need a restart", func(c *Config) { c.RunAsUID = 12345 }},
		{"new cpu controller", "cpu controller", func(c *Config) { c.Sandbox.Limits.CPU, c.Sandbox.MaxLimits.CPU = 1, 2 }},
	}
	for _, b := range bad {
		next := start.cfg
		next.Sandbox.WriteRoots = append([]string(nil), start.cfg.Sandbox.WriteRoots...)
		b.mod(&next)
		err := l.Reconfigure(context.Background(), next)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: want an error containing %q, got %v", b.name, b.want, err)
		}
		if l.now() != start {
			t.Fatalf("%s: a refused config replaced the live one", b.name)
		}
	}
	w, err := l.WriteFile(context.Background(), WriteRequest{Path: filepath.Join(rootA, "f"), Content: []byte("x"), Overwrite: true})
	if err != nil || !w.OK {
		t.Fatalf("write under the unchanged root: %+v %v", w, err)
	}
}

// A good config reaches the next operation: the file routes move from
// root A to root B, a new command's default pids limit is the new one, and
// a spawner built for the old roots is retired rather than reused (its
// Landlock domain would still allow A).
func TestReconfigureMovesRootsAndLimitsForNewOperations(t *testing.T) {
	rootA, rootB := t.TempDir(), t.TempDir()
	l := newTestLocal(t, func(c *Config) {
		c.AllowedRoots = []string{rootA}
		c.Sandbox.WriteRoots = sandbox.WriteRootsFor([]string{rootA}, nil, c.Sandbox.ScratchRoot)
		c.Sandbox.Limits.Pids = 32
	})
	needLandlock(t, l)
	if res := runIn(t, l, rootA, "echo a > "+rootA+"/before"); !res.OK {
		t.Fatalf("write under A before the reload: %+v", res)
	}
	next := l.now().cfg
	next.AllowedRoots = []string{rootB}
	next.Sandbox.WriteRoots = sandbox.WriteRootsFor([]string{rootB}, nil, next.Sandbox.ScratchRoot)
	next.Sandbox.Limits.Pids = 8
	if err := l.Reconfigure(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if res := runIn(t, l, rootB, "echo b > "+rootB+"/after && echo ok"); !res.OK {
		t.Fatalf("write under B after the reload: %+v", res)
	}
	if res := runIn(t, l, rootB, "echo a > "+rootA+"/after"); res.OK || !strings.Contains(string(res.Stderr), "Permission denied") {
		t.Fatalf("write under A after the reload: want Permission denied, got %+v", res)
	}
	if w, _ := l.WriteFile(context.Background(), WriteRequest{Path: filepath.Join(rootA, "file"), Content: []byte("x")}); w.OK || w.ErrorCode != CodePathNotAllowed {
		t.Fatalf("file write under A after the reload: %+v", w)
	}
	if w, _ := l.WriteFile(context.Background(), WriteRequest{Path: filepath.Join(rootB, "file"), Content: []byte("x")}); !w.OK {
		t.Fatalf("file write under B after the reload: %+v", w)
	}
	if l.sandbox.tree != nil && hasCtl(l.sandbox.tree.Controllers(), "pids") {
		res := runIn(t, l, rootB, "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 1 & done; wait")
		if !res.PidsLimitHit {
			t.Fatalf("13 processes under the reloaded pids=8 were not held: %+v", res)
		}
	}
}

// A command started before a reload keeps its limits: its cgroup was
// made with pids=32 and stays so while a new command gets pids=8.
func TestReconfigureLeavesRunningCommandAlone(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.Sandbox.Limits.Pids = 32 })
	if l.sandbox.tree == nil || !hasCtl(l.sandbox.tree.Controllers(), "pids") {
		t.Skip("no pids controller")
	}
	marker := filepath.Join(t.TempDir(), "go")
	done := make(chan ExecResult, 1)
	started := make(chan Started, 1)
	go func() {
		res, err := l.Exec(context.Background(), ExecRequest{Command: "while [ ! -e " + marker + " ]; do sleep 0.05; done; for i in $(seq 16); do sleep 0.5 & done; wait", Cwd: "/", Timeout: 60 * time.Second}, func(s Started) { started <- s })
		if err != nil {
			res.Error = err.Error()
		}
		done <- res
	}()
	select {
	case <-started:
	case res := <-done: // it never started: waiting for started would hang (seen under qemu-user)
		t.Fatalf("the command did not start: %+v", res)
	}
	next := l.now().cfg
	next.Sandbox.Limits.Pids = 8
	if err := l.Reconfigure(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !res.OK || res.PidsLimitHit {
		t.Fatalf("the command started under pids=32 was held by the reload's pids=8: %+v", res)
	}
}

// A worker confined by Landlock at start cannot widen its reach in place:
// Reconfigure says ErrRespawn through the gRPC halves' prefix.
func TestReconfigureOutsideConfinementAsksForRespawn(t *testing.T) {
	rootA, rootB := t.TempDir(), t.TempDir()
	scratch := filepath.Join(t.TempDir(), "exec-scratch")
	old := DefaultConfig()
	old.AllowedRoots = []string{rootA}
	old.Sandbox.ScratchRoot = scratch
	old.Sandbox.WriteRoots = sandbox.WriteRootsFor(nil, old.AllowedRoots, scratch)
	next := old
	next.AllowedRoots = []string{rootB}
	if got := outsideConfinement(old, next); got != rootB {
		t.Fatalf("outsideConfinement = %q, want %q", got, rootB)
	}
	next.AllowedRoots = []string{filepath.Join(rootA)}
	if got := outsideConfinement(old, next); got != "" {
		t.Fatalf("a root inside the confinement: %q", got)
	}
	err := (&GRPCClient{}).mapReconfigureError(respawnPrefix + rootB + " is outside")
	if !errors.Is(err, ErrRespawn) {
		t.Fatalf("%v is not ErrRespawn", err)
	}
}

func runIn(t *testing.T, l *Local, cwd, command string) ExecResult {
	t.Helper()
	res, err := l.Exec(context.Background(), ExecRequest{Command: command, Cwd: cwd, Timeout: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// FuzzReconfigureConfig is the worker's Reconfigure input: the config JSON
// a supervisor sends (GRPCServer.Reconfigure decodes it as ConfigEnv). No
// input panics; an accepted one changes only the reloadable keys and keeps
// its limits within their maximum.
func FuzzReconfigureConfig(f *testing.F) {
	old := DefaultConfig()
	old.Sandbox.ScratchRoot = "/tmp/svcd-fuzz-scratch"
	old.Sandbox.WriteRoots = sandbox.WriteRootsFor(nil, nil, old.Sandbox.ScratchRoot)
	enc, err := old.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add(strings.Replace(enc, `"pids":256`, `"pids":8`, 1))
	f.Add(strings.Replace(enc, `"mode":"best-effort"`, `"mode":"off"`, 1))
	f.Add(`{"allowed_roots":["relative"],"rlimits":{"nofile":64}}`)
	f.Add(`{"sandbox":{"limits":{"pids":-1}}}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, in string) {
		next, err := DecodeConfig(in)
		if err != nil {
			return
		}
		if ValidateReconfigure(old, next) != nil {
			return
		}
		if !reflect.DeepEqual(fixedPart(old), fixedPart(next)) {
			t.Fatalf("accepted a change outside the reloadable keys: %+v", next)
		}
		if err := next.Sandbox.Limits.Within(next.Sandbox.MaxLimits); err != nil {
			t.Fatalf("accepted limits over their maximum: %v", err)
		}
	})
}
