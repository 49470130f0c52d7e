package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// opOutcome is data of the host-operation routes: {ok, result, error, code}.
type opOutcome[R any] struct {
	OK     bool   `json:"ok"`
	Result R      `json:"result"`
	Error  string `json:"error"`
	Code   string `json:"code"`
}

type execRes struct {
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	ExitCode        *int    `json:"exitCode"`
	Signal          *string `json:"signal"`
	DurationMs      *int64  `json:"durationMs"`
	StartedAt       string  `json:"startedAt"`
	FinishedAt      string  `json:"finishedAt"`
	TimedOut        *bool   `json:"timedOut"`
	StdoutTruncated bool    `json:"stdoutTruncated"`
	StderrTruncated bool    `json:"stderrTruncated"`
	StdoutBase64    string  `json:"stdoutBase64"`
	Pid             int     `json:"pid"`
	Error           string  `json:"error"`
	ErrorCode       string  `json:"errorCode"`
	// The sandbox's counters (sandbox_test.go).
	OOMKilled       bool   `json:"oomKilled"`
	PidsLimitHit    bool   `json:"pidsLimitHit"`
	PeakMemoryBytes *int64 `json:"peakMemoryBytes"`
	CPUTimeUs       *int64 `json:"cpuTimeUs"`
}

type fileRes struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Size      int64  `json:"size"`
	Mode      string `json:"mode"`
	ModTime   string `json:"modTime"`
	Created   *bool  `json:"created"`
	Error     string `json:"error"`
	ErrorCode string `json:"errorCode"`
}

type workerInfo struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Pid       int    `json:"pid"`
	StartedAt string `json:"started_at"`
	Restarts  int    `json:"restarts"`
	LastExit  *struct {
		Pid    int    `json:"pid"`
		Code   int    `json:"code"`
		Signal string `json:"signal"`
		At     string `json:"at"`
	} `json:"last_exit"`
}

// execOK runs command and returns the outcome, failing on a non-200.
func execCall(t testing.TB, d *harness.Daemon, body map[string]any) opOutcome[execRes] {
	t.Helper()
	resp := d.DoAuth("POST", "/v1/exec", body)
	if resp.Status != 200 {
		t.Fatalf("POST /v1/exec %v: status %d: %s", body, resp.Status, resp.Body)
	}
	var env envelope[opOutcome[execRes]]
	resp.Decode(t, &env)
	checkExecFields(t, resp.Body)
	return env.Data
}

// checkExecFields asserts SPEC.md's stable fields are all present.
func checkExecFields(t testing.TB, body []byte) {
	t.Helper()
	var raw struct {
		Data struct {
			OK     *bool                      `json:"ok"`
			Result map[string]json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("exec body: %v: %s", err, body)
	}
	if raw.Data.OK == nil {
		t.Fatalf("data.ok missing: %s", body)
	}
	for _, f := range []string{"stdout", "stderr", "exitCode", "signal", "durationMs", "startedAt", "finishedAt", "timedOut"} {
		if _, ok := raw.Data.Result[f]; !ok {
			t.Fatalf("data.result.%s missing: %s", f, body)
		}
	}
	for _, f := range []string{"startedAt", "finishedAt"} {
		var s string
		_ = json.Unmarshal(raw.Data.Result[f], &s)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Fatalf("data.result.%s = %q is not RFC 3339: %s", f, s, body)
		}
	}
}

func fileCall(t testing.TB, d *harness.Daemon, path string, body map[string]any) opOutcome[fileRes] {
	t.Helper()
	resp := d.DoAuth("POST", path, body)
	if resp.Status != 200 {
		t.Fatalf("POST %s: status %d: %s", path, resp.Status, resp.Body)
	}
	var env envelope[opOutcome[fileRes]]
	resp.Decode(t, &env)
	return env.Data
}

func workersOf(t testing.TB, d *harness.Daemon) []workerInfo {
	t.Helper()
	resp := d.Do("GET", "/v1/workers", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/workers: %d %s", resp.Status, resp.Body)
	}
	var env envelope[struct {
		Workers []workerInfo `json:"workers"`
	}]
	resp.Decode(t, &env)
	return env.Data.Workers
}

func hostopsWorker(t testing.TB, d *harness.Daemon) workerInfo {
	t.Helper()
	for _, w := range workersOf(t, d) {
		if w.Name == "hostops" {
			return w
		}
	}
	t.Fatal("no hostops worker in GET /v1/workers")
	return workerInfo{}
}

// waitWorker polls until the hostops worker satisfies cond.
func waitWorker(t testing.TB, d *harness.Daemon, within time.Duration, what string, cond func(workerInfo) bool) workerInfo {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		w := hostopsWorker(t, d)
		if cond(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("hostops worker not %s within %s: %+v\nlogs:\n%s", what, within, w, d.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S …: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// processesWithEnv lists the processes whose environment holds entry
// (KEY=value) exactly, or ends with it (SVC_AGENTD_CODEX_HOME=… for
// CODEX_HOME=…).
func processesWithEnv(entry string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if strings.HasSuffix(kv, entry) && (kv == entry || strings.HasSuffix(kv, "_"+entry)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitDead waits until none of pids is alive.
func waitDead(t testing.TB, within time.Duration, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, p := range left {
				desc = append(desc, describeProcess(p))
			}
			t.Fatalf("%s: processes still running after %s: %s", what, within, strings.Join(desc, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describeProcess names a process for a failure message: pid, command line
// and the /proc status lines that say who its parent is and what it waits on.
func describeProcess(pid int) string {
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	var keep []string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "PPid:") || strings.HasPrefix(l, "SigCgt:") || strings.HasPrefix(l, "SigBlk:") {
			keep = append(keep, strings.Join(strings.Fields(l), " "))
		}
	}
	return fmt.Sprintf("%d %q [%s]", pid, strings.ReplaceAll(string(cmd), "\x00", " "), strings.Join(keep, ", "))
}

// readPids reads whitespace-separated pids from a file the command wrote.
func readPids(t testing.TB, path string, want int, within time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		if len(pids) >= want {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s holds %q, want %d pids", path, b, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jsonUnmarshal(b []byte, v any) error   { return json.Unmarshal(b, v) }
func stringsReader(s string) io.Reader      { return strings.NewReader(s) }
func bytesContains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
func stringsContains(s, sub string) bool    { return strings.Contains(s, sub) }
