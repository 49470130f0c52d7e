package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A symlink at the log path is refused, and its target is left untouched.
func TestOpenRefusesSymlink(t *testing.T) {
	dir := privateDir(t)
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "svcd.log")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("Open over a symlink = %v, want a refusal naming the link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
}

// A log file another user owns is refused (root only: it hands the file to
// nobody).
func TestOpenRefusesForeignOwnedFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	path := filepath.Join(privateDir(t), "svcd.log")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, -1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "is owned by uid 65534") {
		t.Fatalf("Open of nobody's file = %v, want a refusal naming the owner", err)
	}
}

// A log directory group or others can write (not sticky) is refused: they
// could plant a link there between two rotations.
func TestOpenRefusesDirectoryOthersCanWrite(t *testing.T) {
	dir := privateDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Path: filepath.Join(dir, "svcd.log")})
	if err == nil || !strings.Contains(err.Error(), "group or others can write") {
		t.Fatalf("Open in a 0777 dir = %v, want a refusal", err)
	}
}

// A pre-existing 0644 log is narrowed to 0600 and reported; a new one is 0600.
func TestOpenTightensWideModeAndCreatesPrivate(t *testing.T) {
	dir := privateDir(t)
	wide := filepath.Join(dir, "wide.log")
	if err := os.WriteFile(wide, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(wide, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(Options{Path: wide})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if was, ok := w.Tightened(); !ok || was != 0o644 {
		t.Fatalf("Tightened = %v %v, want 0644 true", was, ok)
	}
	if st, _ := os.Stat(wide); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after Open = %04o, want 0600", st.Mode().Perm())
	}
	fresh := filepath.Join(dir, "fresh.log")
	w2, err := Open(Options{Path: fresh})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o600 {
		t.Fatalf("new log mode = %04o, want 0600", st.Mode().Perm())
	}
	if _, ok := w2.Tightened(); ok {
		t.Fatal("a new file reported as tightened")
	}
}

// Reopen is logrotate's create mode: after the file was renamed, lines go to
// a new file at the configured path and the renamed one keeps the old lines.
func TestReopenAfterRenameWritesToTheNewFile(t *testing.T) {
	path := filepath.Join(privateDir(t), "svcd.log")
	w, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+"-rotated"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("between\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path + "-rotated")
	cur, _ := os.ReadFile(path)
	if string(old) != "before\nbetween\n" || string(cur) != "after\n" {
		t.Fatalf("rotated = %q, live = %q", old, cur)
	}
	// A link planted at the path before a reopen is refused; the old file
	// stays live.
	if err := os.Rename(path, path+"-2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "x"), path); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err == nil {
		t.Fatal("Reopen followed a planted symlink")
	}
	if _, err := w.Write([]byte("still\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path + "-2"); string(b) != "after\nstill\n" {
		t.Fatalf("after a refused reopen the old file has %q", b)
	}
}

// Rotated files are not kept forever by default: the default keeps
// DefaultMaxFiles, and config without log_file still validates with it.
func TestDefaultRetentionIsBounded(t *testing.T) {
	if DefaultMaxFiles <= 0 {
		t.Fatalf("DefaultMaxFiles = %d: rotated logs kept forever", DefaultMaxFiles)
	}
	if err := (Options{MaxFiles: DefaultMaxFiles}).Validate(); err != nil {
		t.Fatalf("the default without log_file: %v", err)
	}
	path := filepath.Join(privateDir(t), "svcd.log")
	w, err := Open(Options{Path: path, RotateBytes: 10, MaxFiles: DefaultMaxFiles})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 3 * DefaultMaxFiles {
		if _, err := w.Write([]byte("0123456789\n")); err != nil {
			t.Fatal(err)
		}
	}
	rotated, _ := filepath.Glob(path + ".*")
	if len(rotated) != DefaultMaxFiles {
		t.Fatalf("%d rotated files kept, want %d", len(rotated), DefaultMaxFiles)
	}
}
