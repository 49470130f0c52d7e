package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRestrictThread: a thread restricted to one write root cannot create
// a file outside it, directly or through a symlink, and can inside; other
// threads are not restricted.
func TestRestrictThread(t *testing.T) {
	abi := LandlockABI()
	if abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Landlock on this kernel")
		}
		t.Skip("no Landlock on this kernel")
	}
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	errc := make(chan []error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the restricted thread is thrown away
		if _, err := RestrictThread(Ruleset{Write: []string{root}}, abi); err != nil {
			errc <- []error{err}
			return
		}
		errc <- []error{
			os.WriteFile(filepath.Join(root, "in"), nil, 0o644),
			os.WriteFile(filepath.Join(outside, "out"), nil, 0o644),
			os.WriteFile(filepath.Join(root, "link", "via"), nil, 0o644),
		}
	}()
	errs := <-errc
	if len(errs) == 1 {
		t.Fatal(errs[0])
	}
	if errs[0] != nil || !errors.Is(errs[1], os.ErrPermission) || !errors.Is(errs[2], os.ErrPermission) {
		t.Fatalf("inside, outside, via symlink: %v", errs)
	}
	if err := os.WriteFile(filepath.Join(outside, "other-thread"), nil, 0o644); err != nil {
		t.Fatalf("an unrestricted thread could not write: %v", err)
	}
}

// TestLinkAndRenameOutOfRoots: what the kernel answers for links and
// renames that cross the write roots' border, errno by errno. Out of the
// roots (the destination lacks the MAKE_* right) Landlock answers EACCES
// before it considers REFER; a hard link of an outside file into a root
// is a REFER denial (the link would gain write rights), EXDEV. Nothing is
// created either way.
func TestLinkAndRenameOutOfRoots(t *testing.T) {
	abi := LandlockABI()
	if abi < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d has no REFER", abi)
		}
		t.Skipf("Landlock ABI %d has no REFER", abi)
	}
	root, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(root, "f"), filepath.Join(root, "g"), filepath.Join(outside, "existing")} {
		if err := os.WriteFile(f, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		name string
		err  error
	}
	resc := make(chan []result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the restricted thread is thrown away
		if _, err := RestrictThread(Ruleset{Write: []string{root}}, abi); err != nil {
			resc <- []result{{"restrict", err}}
			return
		}
		resc <- []result{
			{"link out", unix.Link(filepath.Join(root, "f"), filepath.Join(outside, "linked"))},
			{"rename out", unix.Rename(filepath.Join(root, "g"), filepath.Join(outside, "moved"))},
			{"symlink out", unix.Symlink(filepath.Join(root, "f"), filepath.Join(outside, "sym"))},
			{"link in", unix.Link(filepath.Join(outside, "existing"), filepath.Join(root, "hard"))},
			{"rename in", unix.Rename(filepath.Join(outside, "existing"), filepath.Join(root, "taken"))},
		}
	}()
	res := <-resc
	want := map[string]error{"link out": unix.EACCES, "rename out": unix.EACCES, "symlink out": unix.EACCES,
		"link in": unix.EXDEV, "rename in": unix.EACCES}
	for _, r := range res {
		if r.name == "restrict" {
			t.Fatal(r.err)
		}
		if !errors.Is(r.err, want[r.name]) {
			t.Errorf("%s: got %v, want %v", r.name, r.err, want[r.name])
		}
	}
	for _, p := range []string{filepath.Join(outside, "linked"), filepath.Join(outside, "moved"), filepath.Join(outside, "sym"), filepath.Join(root, "hard"), filepath.Join(root, "taken")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	for _, p := range []string{filepath.Join(root, "g"), filepath.Join(outside, "existing")} {
		if b, _ := os.ReadFile(p); string(b) != "keep" {
			t.Errorf("%s changed: %q", p, b)
		}
	}
}
