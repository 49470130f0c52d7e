package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needCgroups skips where this process cannot make cgroups (not root, no
// cgroup file system); under CI=true (this machine kind has them) it fails.
func needCgroups(t *testing.T, parents []string) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "not root"
	case len(parents) == 0:
		why = "no cgroup hierarchy is mounted"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the cgroup leak check needs cgroups: %s", why)
	}
	t.Skipf("the cgroup leak check needs cgroups (skipped: %s)", why)
}

// The leak check on real cgroups: what killed workers leave (a dead owner's
// w<pid>-… directory) is removed by the restart clean-up and passes; a
// process still in a cgroup, a live owner's directory and a directory that
// is no worker's are each reported; a clean run removes its parents.
func TestCgroupCheckFindsLeftovers(t *testing.T) {
	name := fmt.Sprintf("svcd-chaos-checktest-%d-%d", os.Getpid(), time.Now().UnixNano())
	parents := cgroupParents(name)
	needCgroups(t, parents)
	t.Logf("cgroup parents: %v", parents)
	t.Cleanup(func() {
		for _, p := range parents {
			ents, _ := os.ReadDir(p)
			for _, e := range ents {
				if e.IsDir() {
					sub, _ := os.ReadDir(filepath.Join(p, e.Name()))
					for _, s := range sub {
						_ = os.Remove(filepath.Join(p, e.Name(), s.Name()))
					}
					_ = os.Remove(filepath.Join(p, e.Name()))
				}
			}
			_ = os.Remove(p)
		}
	})
	// A worker pid that no longer runs: a child that has exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir := "w" + strconv.Itoa(gone.Process.Pid) + "-" + strconv.FormatInt(time.Now().Add(-time.Hour).UnixNano(), 36)
	mk := func(rel ...string) string {
		t.Helper()
		d := filepath.Join(rel...)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}

	// 1. Killed workers' directories only: the clean-up removes them, the
	// check passes and the parents are gone.
	for _, p := range parents {
		mk(p, deadDir, "c1")
		mk(p, deadDir, "c2")
	}
	broken, note := checkCgroups(parents)
	if len(broken) != 0 {
		t.Fatalf("killed workers' dirs only: %v", broken)
	}
	if !strings.Contains(note, fmt.Sprintf("%d worker dirs were left by killed workers, the restart clean-up removed %d", len(parents), len(parents))) {
		t.Fatalf("note: %s", note)
	}
	for _, p := range parents {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("parent %s still there after a clean check", p)
		}
	}

	// 2. A command left running in a dead worker's cgroup: reported (and
	// killed by the clean-up).
	parents = cgroupParents(name)
	cg := mk(parents[0], deadDir, "c7")
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
		t.Fatalf("move the sleeper into %s: %v", cg, err)
	}
	broken, _ = checkCgroups(parents)
	if len(broken) != 1 || !strings.Contains(broken[0], strconv.Itoa(sleeper.Process.Pid)) || !strings.Contains(broken[0], cg) {
		t.Fatalf("a process left in %s: %v", cg, broken)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the clean-up did not kill the leftover process")
	}

	// 3. A directory whose owner still runs (this process) and one that is
	// no worker's: both reported, the parents kept.
	live := "w" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mk(parents[0], live, "c1")
	mk(parents[len(parents)-1], "stray")
	broken, _ = checkCgroups(parents)
	all := strings.Join(broken, "\n")
	if !strings.Contains(all, filepath.Join(parents[0], live)) || !strings.Contains(all, filepath.Join(parents[len(parents)-1], "stray")) {
		t.Fatalf("a live owner's dir and a stray dir: %v", broken)
	}
	if _, err := os.Stat(parents[0]); err != nil {
		t.Fatalf("the parent of a leftover was removed: %v", err)
	}
}
