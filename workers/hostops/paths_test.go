package hostops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolverRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	r, err := newResolver([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, filepath.Join(root, "a"), filepath.Join(root, "new", "deeper", "file")} {
		if err := r.check(p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	for _, p := range []string{outside, filepath.Join(root, "out"), filepath.Join(root, "out", "missing", "x"), root + "-sibling", "/"} {
		if err := r.check(p); !errors.Is(err, errNotAllowed) {
			t.Errorf("%s allowed (err %v)", p, err)
		}
	}
	open, _ := newResolver(nil)
	if err := open.check("/etc/passwd"); err != nil {
		t.Fatalf("no roots must allow everything: %v", err)
	}
	if p, _ := r.path("/base", "rel/x"); p != "/base/rel/x" {
		t.Fatalf("relative path: %s", p)
	}
	if p, _ := r.path("/base", "/abs/../x"); p != "/x" {
		t.Fatalf("absolute path: %s", p)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		root, p string
		want    bool
	}{
		{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/ab", false}, {"/a", "/", false}, {"/a", "/a/..b", true},
	} {
		if got := within(tc.root, tc.p); got != tc.want {
			t.Errorf("within(%q, %q) = %v", tc.root, tc.p, got)
		}
	}
}

func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/bin", "SVC_SHARED_TOKEN=t", "SVCD_HOSTOPS_CONFIG={}", "PLUGIN_CLIENT_CERT=c", "SVCD_WORKER_COOKIE=x", "HOME=/root"}
	got := childEnv(env, nil)
	if len(got) != 2 || got[0] != "PATH=/bin" || got[1] != "HOME=/root" {
		t.Fatalf("default: %v", got)
	}
	if got := childEnv(env, []string{"HOME", "SVC_SHARED_TOKEN"}); len(got) != 1 || got[0] != "HOME=/root" {
		t.Fatalf("allow-list: %v", got)
	}
}
