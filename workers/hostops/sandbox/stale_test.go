package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestOwnerAlive(t *testing.T) {
	now := strconv.FormatInt(time.Now().UnixNano(), 36)
	if !ownerAlive(os.Getpid(), now) {
		t.Fatal("this process is not alive")
	}
	if !ownerAlive(1, now) {
		t.Fatal("pid 1, started before the stamp, is not alive")
	}
	// A process started after the directory was made owns nothing in it.
	old := strconv.FormatInt(time.Now().Add(-time.Hour).UnixNano(), 36)
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if ownerAlive(cmd.Process.Pid, old) {
		t.Fatal("a process younger than the directory counted as its owner")
	}
	if ownerAlive(1<<22+7, now) {
		t.Fatal("a pid that does not run counted as alive")
	}
}
