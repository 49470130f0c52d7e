package hostops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// escapes recognises os.Root's refusal by its text; this pins it.
func TestEscapesMatchesOSRoot(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	os.Symlink("../outside", filepath.Join(dir, "up"))
	_, err = root.Open("up")
	if !escapes(err) {
		t.Fatalf("os.Root's escape error %v is not recognised by escapes", err)
	}
	if escapes(os.ErrNotExist) || escapes(nil) {
		t.Fatal("escapes matches other errors")
	}
}

// beneath follows an absolute link that stays inside the roots (os.Root
// alone refuses it) and refuses one that leaves them.
func TestBeneathAbsoluteLinks(t *testing.T) {
	rootDir, otherRoot, outside := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(otherRoot, "f"), []byte("in"), 0o644)
	os.WriteFile(filepath.Join(outside, "f"), []byte("out"), 0o644)
	os.Symlink(filepath.Join(otherRoot, "f"), filepath.Join(rootDir, "in"))
	os.Symlink(filepath.Join(outside, "f"), filepath.Join(rootDir, "out"))
	r, err := newResolver([]string{rootDir, otherRoot})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) (string, error) {
		var b []byte
		_, err := r.beneath(p, func(root *os.Root, rel string) (err error) {
			b, err = root.ReadFile(rel)
			return err
		})
		return string(b), err
	}
	if got, err := read(filepath.Join(rootDir, "in")); err != nil || got != "in" {
		t.Fatalf("absolute link into another root: %q %v", got, err)
	}
	if got, err := read(filepath.Join(rootDir, "out")); !errors.Is(err, errNotAllowed) || got != "" {
		t.Fatalf("absolute link out of the roots: %q %v", got, err)
	}
	if _, err := read(filepath.Join(outside, "f")); !errors.Is(err, errNotAllowed) {
		t.Fatalf("a path outside the roots: %v", err)
	}
}
