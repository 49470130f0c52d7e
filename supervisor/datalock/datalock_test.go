package datalock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A second Acquire on the same dir (another open file description, as a
// second daemon would have) is refused with this pid; after Release it works.
func TestSecondAcquireNamesHolder(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q (%v), want this pid %d", b, err, os.Getpid())
	}
	_, err = Acquire(dir)
	var held *HeldError
	if !errors.As(err, &held) || held.Pid != os.Getpid() || held.Dir != dir {
		t.Fatalf("second acquire: %v, want a HeldError naming pid %d", err, os.Getpid())
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(os.Getpid()), "-data-dir", "SVC_DATA_DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	again.Release()
}
