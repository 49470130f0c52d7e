package workermgr

import (
	"os/exec"
	"testing"
	"time"
)

func TestPidExitFiresOnExitOnly(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited, stop := pidExit(cmd.Process.Pid)
	defer stop()
	if exited == nil {
		t.Skip("no pidfd on this kernel; watch polls instead")
	}
	select {
	case <-exited:
		t.Fatal("fired while the process runs")
	case <-time.After(50 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("did not fire after the process was killed")
	}
	_ = cmd.Wait()
}

func TestPidExitStopReleasesTheWaiter(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	exited, stop := pidExit(cmd.Process.Pid)
	if exited == nil {
		t.Skip("no pidfd on this kernel; watch polls instead")
	}
	stop()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end the wait")
	}
}
