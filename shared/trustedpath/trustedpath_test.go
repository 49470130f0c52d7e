package trustedpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckDirs(t *testing.T) {
	base := t.TempDir()
	private := filepath.Join(base, "private")
	open := filepath.Join(base, "open")
	sticky := filepath.Join(base, "sticky")
	for dir, mode := range map[string]os.FileMode{private: 0o700, open: 0o777, sticky: 0o777 | os.ModeSticky} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	euid := os.Geteuid()
	if err := CheckDirs(private, euid); err != nil {
		t.Fatalf("private dir: %v", err)
	}
	var e *Error
	if err := CheckDirs(open, euid); !errors.As(err, &e) || e.Kind != WritableByOthers || e.Dir != open {
		t.Fatalf("0777 dir: %v", err)
	}
	if err := CheckDirs(filepath.Join(sticky), euid); err != nil {
		t.Fatalf("sticky dir: %v", err)
	}
	if euid == 0 {
		if err := os.Chown(private, 65534, -1); err != nil {
			t.Fatal(err)
		}
		if err := CheckDirs(private, euid); !errors.As(err, &e) || e.Kind != ForeignOwner || e.UID != 65534 {
			t.Fatalf("nobody's dir: %v", err)
		}
	}
}
