package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// descendants lists every live process below pid (children, theirs, …),
// read from /proc's parent ids.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if alive(p) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// agentdWorkerPid is the agentd worker's pid from /v1/workers (0: none).
func agentdWorkerPid(t testing.TB, r *agentRig) int {
	for _, w := range workersOf(t, r.d) {
		if w.Name == "agentd" && w.State == "running" {
			return w.Pid
		}
	}
	return 0
}

// TestAgentdSIGKILLLeavesNoCodexChild: agentd SIGKILLed in the middle of a
// turn takes its whole Codex child with it (the launcher and the native
// app-server below it: parent-death signal, process group, and the stale
// group killed on agentd's next start); the supervisor brings agentd back
// and the session answers and takes turns again.
func TestAgentdSIGKILLLeavesNoCodexChild(t *testing.T) {
	r := startAgentRig(t)
	d := r.d
	s := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir(), "purpose": "kill"}))
	id := s["sessionId"].(string)
	// A slow reply: the turn is running when agentd dies.
	r.fm.Push(fakemodel.Reply{Text: strings.Repeat("slow ", 40), Chunks: 40, ChunkDelayMS: 500})
	if resp := d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "take your time"}); resp.Status != 200 {
		t.Fatalf("turn: %d %s", resp.Status, resp.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := sessionOf(t, d.Do("GET", "/v1/agent/sessions/"+id, nil))
		if out, _ := s["lastTurnOutput"].(string); s["status"] == "running" && out != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn never started streaming: %v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := agentdWorkerPid(t, r)
	if pid == 0 {
		t.Fatal("no running agentd worker")
	}
	kids := descendants(pid)
	if len(kids) == 0 {
		t.Fatalf("agentd %d has no Codex child while a turn runs", pid)
	}
	var desc []string
	for _, k := range kids {
		desc = append(desc, describeProcess(k))
	}
	t.Logf("agentd %d and its Codex processes before the kill: %s", pid, strings.Join(desc, "; "))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, 15*time.Second, "the Codex child and its children after agentd was SIGKILLed", append(kids, pid)...)

	r.waitAgent()
	if s := sessionOf(t, d.Do("GET", "/v1/agent/sessions/"+id, nil)); s["lastTurnStatus"] != "failed" {
		t.Fatalf("the turn agentd died in is not failed: %v", s)
	}
	r.fm.Push(fakemodel.Reply{Text: "back again"})
	if s := sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "again", "waitMs": 30000})); s["lastTurnOutput"] != "back again" {
		t.Fatalf("turn after agentd came back: %v", s)
	}
}
