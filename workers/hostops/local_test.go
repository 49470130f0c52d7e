package hostops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/hostops/sandbox"
	"github.com/svcd/svcd/workers/pluginkit"
)

func newTestLocal(t testing.TB, mod func(*Config)) *Local {
	t.Helper()
	cfg := DefaultConfig()
	// As the supervisor resolves it with neither exec_write_roots nor
	// hostops_allowed_roots set: commands write their scratch dir only.
	cfg.Sandbox.ScratchRoot = filepath.Join(t.TempDir(), "exec-scratch")
	cfg.Sandbox.WriteRoots = sandbox.WriteRootsFor(nil, nil, cfg.Sandbox.ScratchRoot)
	if mod != nil {
		mod(&cfg)
	}
	sp := pluginkit.NewSpawner()
	t.Cleanup(sp.Close)
	l, err := NewLocal(cfg, hclog.NewNullLogger(), sp, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestLocalExec(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.OutputCap = 10 })
	var startedPid int
	res, err := l.Exec(context.Background(), ExecRequest{Command: "printf 0123456789abc; exit 2", Timeout: 5 * time.Second}, func(st Started) { startedPid = st.Pid })
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.ExitCode != 2 || string(res.Stdout) != "0123456789" || !res.StdoutTruncated || res.Pid != startedPid || startedPid == 0 {
		t.Fatalf("%+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res, _ = l.Exec(ctx, ExecRequest{Command: "sleep 30", Timeout: 10 * time.Second}, nil)
	if res.OK || res.TimedOut || res.ErrorCode != CodeCanceled || time.Since(start) > 3*time.Second {
		t.Fatalf("cancel: %+v after %s", res, time.Since(start))
	}
}

func TestLocalWriteRead(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.ReadCap = 8 })
	dir := t.TempDir()
	w, _ := l.WriteFile(context.Background(), WriteRequest{Path: "f.txt", Cwd: dir, Content: []byte("12345678"), Overwrite: true})
	if !w.OK || !w.Created || w.Info.Path != filepath.Join(dir, "f.txt") {
		t.Fatalf("write: %+v", w)
	}
	r, _ := l.ReadFile(context.Background(), ReadRequest{Path: filepath.Join(dir, "f.txt")})
	if !r.OK || string(r.Content) != "12345678" {
		t.Fatalf("read: %+v", r)
	}
	// A symlink target is written through, the link stays a link.
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "f.txt"), link)
	if w, _ := l.WriteFile(context.Background(), WriteRequest{Path: link, Content: []byte("via"), Overwrite: true}); !w.OK {
		t.Fatalf("write via link: %+v", w)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "via" {
		t.Fatalf("target content %q", b)
	}
	os.WriteFile(filepath.Join(dir, "big"), []byte("123456789"), 0o644)
	if r, _ := l.ReadFile(context.Background(), ReadRequest{Path: filepath.Join(dir, "big")}); r.OK || r.ErrorCode != CodeTooLarge || !strings.Contains(r.Error, "cap") {
		t.Fatalf("over cap: %+v", r)
	}
}
