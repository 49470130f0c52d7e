package agentd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The Codex child runs in its own process group with a parent-death signal
// (codexrpc). The signal reaches only the direct child; what it started (the
// npm launcher's native binary, the shell Codex runs in a session of its
// own, a command a turn runs) is orphaned when agentd is SIGKILLed. So every
// child gets a marker in its environment, which its descendants inherit,
// and agentd records marker and group in its data dir: its next start kills
// every process that still carries the marker, and the group.
const (
	childFile = "codex-child"
	// ChildMarkerEnv names the environment entry that marks the processes
	// of one agentd instance's Codex child.
	ChildMarkerEnv = "SVCD_AGENTD_CHILD"
)

// recordChild notes the instance's marker and the child's group.
func recordChild(dir, marker string, pgid int) {
	_ = os.WriteFile(filepath.Join(dir, childFile), fmt.Appendf(nil, "%s %d\n", marker, pgid), 0o600)
}

// forgetChild removes the record once the child was ended in order.
func forgetChild(dir string) { _ = os.Remove(filepath.Join(dir, childFile)) }

// reapStaleChild kills what a previous agentd's child left and returns the
// pids it signalled. The marker is a random id, so only that child's
// processes carry it; the group is killed as well (members that replaced
// their environment), but only while its leader is gone or still carries
// the marker, since a group id whose leader is gone cannot be reused while
// any member lives.
func reapStaleChild(dir string) []int {
	path := filepath.Join(dir, childFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	defer os.Remove(path)
	f := strings.Fields(string(b))
	if len(f) != 2 || !strings.HasPrefix(f[0], "agc_") {
		return nil
	}
	entry := []byte(ChildMarkerEnv + "=" + f[0])
	killed := killMarked(f[0])
	if pgid, err := strconv.Atoi(f[1]); err == nil && pgid > 1 {
		if _, err := os.Stat("/proc/" + f[1]); os.IsNotExist(err) || hasEnv(pgid, entry) {
			if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
				killed = append(killed, -pgid)
			}
		}
	}
	return killed
}

// killMarked SIGKILLs every process carrying marker and returns their pids.
func killMarked(marker string) []int {
	entry := []byte(ChildMarkerEnv + "=" + marker)
	var killed []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if hasEnv(pid, entry) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// hasEnv says whether pid's environment holds entry exactly.
func hasEnv(pid int, entry []byte) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}
