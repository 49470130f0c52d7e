package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
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
