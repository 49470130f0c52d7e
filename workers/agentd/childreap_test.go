package agentd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// What a killed agentd's child left — a process in the child's group and one
// in a session of its own, both carrying the marker — is killed by the next
// start's reapStaleChild; a process without the marker outside the group is
// not touched, and the record is gone afterwards.
func TestReapStaleChild(t *testing.T) {
	dir := t.TempDir()
	marker := newID("agc_")
	pidFile := filepath.Join(dir, "pids")
	// The "child": its own group; it starts a grandchild in a new session
	// (as Codex does for its shell) and one in its group, then exits.
	child := exec.Command("/bin/sh", "-c", "setsid sleep 300 & echo $! > "+pidFile+"; sleep 300 & echo $! >> "+pidFile+"; wait")
	child.Env = append(os.Environ(), ChildMarkerEnv+"="+marker)
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	go child.Wait()
	bystander := exec.Command("sleep", "300")
	bystander.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()
	recordChild(dir, marker, child.Process.Pid)

	var pids []int
	for deadline := time.Now().Add(10 * time.Second); len(pids) < 2; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchildren not started: %q", b)
		}
	}
	pids = append(pids, child.Process.Pid)
	if got := reapStaleChild(dir); len(got) == 0 {
		t.Fatal("nothing reaped")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, p := range pids {
			if running(p) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %v still running", left, pids)
		}
	}
	if !running(bystander.Process.Pid) {
		t.Fatal("a process without the marker was killed")
	}
	if _, err := os.Stat(filepath.Join(dir, childFile)); !os.IsNotExist(err) {
		t.Fatalf("record left: %v", err)
	}
	if got := reapStaleChild(dir); got != nil {
		t.Fatalf("second reap killed %v", got)
	}
}
