// Command guestcheck runs inside the VM test's Debian guest (make test-vm,
// scripts/vm/run), as root, against svcd started by the shipped unit with
// systemctl. It prints one marker line per check on the serial console:
//
//	VMTEST INFO <what> <value>
//	VMTEST PASS <check>
//	VMTEST FAIL <check>: <why>
//	VMTEST DONE passed=N failed=M
//
// and powers the guest off; the host script reads the markers.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

const (
	api     = "http://127.0.0.1:4317"
	dataDir = "/var/lib/svcd"
	unitCg  = "/sys/fs/cgroup/system.slice/svcd.service"
)

type checker struct {
	token          string
	passed, failed int
}

func main() {
	c := &checker{}
	c.run()
	fmt.Printf("VMTEST DONE passed=%d failed=%d\n", c.passed, c.failed)
	if os.Getenv("VMTEST_NO_POWEROFF") == "" {
		_ = exec.Command("systemctl", "poweroff", "--no-block").Run()
	}
}

func (c *checker) pass(name string) { c.passed++; fmt.Printf("VMTEST PASS %s\n", name) }
func (c *checker) fail(name string, format string, a ...any) {
	c.failed++
	fmt.Printf("VMTEST FAIL %s: %s\n", name, strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " | "))
}
func info(what string, v any) { fmt.Printf("VMTEST INFO %s %v\n", what, v) }

func (c *checker) run() {
	var u unix.Utsname
	_ = unix.Uname(&u)
	info("kernel", unix.ByteSliceToString(u.Release[:]))
	out, _ := exec.Command("systemctl", "--version").Output()
	first, _, _ := strings.Cut(string(out), "\n")
	info("systemd", first)
	var st unix.Statfs_t
	mode := "unknown"
	if unix.Statfs("/sys/fs/cgroup", &st) == nil {
		switch st.Type {
		case unix.CGROUP2_SUPER_MAGIC:
			mode = "pure-v2 (unified)"
		case unix.TMPFS_MAGIC:
			mode = "v1 or hybrid"
		}
	}
	info("cgroup_mode", mode)
	info("landlock_abi", sandbox.LandlockABI())
	if !c.waitUp() {
		return
	}
	if b, err := os.ReadFile(unitCg + "/cgroup.subtree_control"); err == nil {
		info("svcd.service_subtree_control", strconv.Quote(strings.TrimSpace(string(b))))
	}
	c.runtime()
	c.leaf()
	c.execHi()
	c.pidsLimit()
	c.oom()
	c.landlock()
	c.cleanup()
	c.stop()
}

// waitUp waits for /healthz and the token file (the first start writes it).
func (c *checker) waitUp() bool {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if tok, err := os.ReadFile(filepath.Join(dataDir, "shared_token")); err == nil && resp.StatusCode == 200 {
				c.token = strings.TrimSpace(string(tok))
				c.pass("svcd_up")
				return true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ := exec.Command("systemctl", "status", "--no-pager", "-n", "20", "svcd").CombinedOutput()
	c.fail("svcd_up", "no /healthz within 90 s: %s", out)
	return false
}

func (c *checker) call(method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, api+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("HTTP %d: %v", resp.StatusCode, err)
	}
	return m, nil
}

// find returns the first value under key anywhere in v (the envelope's
// nesting is not this test's concern).
func find(v any, key string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x[key]; ok {
			return r, true
		}
		for _, e := range x {
			if r, ok := find(e, key); ok {
				return r, true
			}
		}
	case []any:
		for _, e := range x {
			if r, ok := find(e, key); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// waitWorkers waits (bounded) until every worker is running again.
func (c *checker) waitWorkers() {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		m, err := c.call("GET", "/v1/status", nil)
		if err == nil {
			b, _ := json.Marshal(m)
			if !strings.Contains(string(b), `"state":"starting"`) && !strings.Contains(string(b), `"state":"restarting"`) {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *checker) runtime() {
	m, err := c.call("GET", "/v1/runtime", nil)
	if err != nil {
		c.fail("runtime", "%v", err)
		return
	}
	sb, ok := find(m, "sandbox")
	if !ok {
		c.fail("runtime", "no sandbox section")
		return
	}
	b, _ := json.Marshal(sb)
	info("runtime_sandbox", string(b))
	// What the guest's kernel lacks is said, with what covers each gap: one
	// landlock_gaps entry per ABI above the kernel's that adds a right.
	abi := sandbox.LandlockABI()
	var report struct {
		Gaps []struct {
			Right   string `json:"right"`
			NeedABI int    `json:"need_abi"`
			Covered string `json:"covered"`
		} `json:"landlock_gaps"`
	}
	_ = json.Unmarshal(b, &report)
	listed := map[int]bool{}
	for _, g := range report.Gaps {
		if g.NeedABI <= abi || g.Covered == "" {
			c.fail("runtime", "landlock gap %q (ABI %d) on an ABI %d kernel, covered %q", g.Right, g.NeedABI, abi, g.Covered)
			return
		}
		listed[g.NeedABI] = true
	}
	// ABIs 2 to 6 each add a right a command could use (REFER, TRUNCATE,
	// TCP rules, IOCTL_DEV, scopes); 7 adds audit logging only.
	for need := max(abi+1, 2); need <= 6 && abi > 0; need++ {
		if !listed[need] {
			c.fail("runtime", "the kernel's Landlock ABI is %d, but /v1/runtime lists no gap of ABI %d", abi, need)
			return
		}
	}
	c.pass("runtime")
}

// leaf: svcd and its workers live in svcd.service/supervisor, svcd.service
// itself holds none (so it can give memory to the command cgroups).
func (c *checker) leaf() {
	procs, _ := os.ReadFile(unitCg + "/cgroup.procs")
	leaf, _ := os.ReadFile(unitCg + "/" + sandbox.LeafName + "/cgroup.procs")
	info("svcd.service_procs", strconv.Quote(strings.Join(strings.Fields(string(procs)), " ")))
	info("svcd.service/supervisor_procs", strconv.Quote(strings.Join(strings.Fields(string(leaf)), " ")))
	if strings.TrimSpace(string(procs)) == "" && len(strings.Fields(string(leaf))) >= 2 {
		c.pass("leaf")
	} else {
		c.fail("leaf", "svcd.service holds %q, the leaf %q", procs, leaf)
	}
}

func (c *checker) exec(name string, body map[string]any) (map[string]any, bool) {
	m, err := c.call("POST", "/v1/exec", body)
	// A worker the supervisor restarted mid-call (under TCG a busy guest
	// can miss health pings) answers retryable: retry as the API says,
	// and say so.
	for try := 1; err == nil && try <= 2; try++ {
		if r, _ := find(m, "retryable"); r != true {
			break
		}
		b, _ := json.Marshal(m)
		info("retry_"+name, string(b))
		c.waitWorkers()
		m, err = c.call("POST", "/v1/exec", body)
	}
	if err != nil {
		c.fail(name, "%v", err)
		return nil, false
	}
	r, ok := find(m, "result")
	rm, _ := r.(map[string]any)
	if !ok || rm == nil {
		b, _ := json.Marshal(m)
		c.fail(name, "no result: %s", b)
		return nil, false
	}
	return rm, true
}

func (c *checker) execHi() {
	cmd := exec.Command("/usr/local/bin/svcctl", "-data-dir", dataDir, "exec", "-sh", "echo hi")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil && out.String() == "hi\n" {
		c.pass("exec_hi")
		return
	}
	c.fail("exec_hi", "svcctl exec -sh 'echo hi': %v, stdout %q, stderr %q", err, out.String(), errb.String())
}

// pidsLimit: a fork loop under {pids: 16} stops at 16 tasks (the shell and
// 15 children); echo is a builtin, so the last number is what was started.
func (c *checker) pidsLimit() {
	r, ok := c.exec("pids_limit", map[string]any{
		"command":   `n=0; while [ $n -lt 40 ]; do sleep 30 & n=$((n+1)); echo $n; done`,
		"timeoutMs": 20000,
		"limits":    map[string]any{"pids": 16},
	})
	if !ok {
		return
	}
	lines := strings.Fields(fmt.Sprint(r["stdout"]))
	last := ""
	if len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	info("pids_limit_children_started", last)
	if r["pidsLimitHit"] == true && last == "15" {
		c.pass("pids_limit")
		return
	}
	c.fail("pids_limit", "pidsLimitHit %v, children %q, errorCode %v, error %v, stderr %q", r["pidsLimitHit"], last, r["errorCode"], r["error"], r["stderr"])
}

func (c *checker) oom() {
	r, ok := c.exec("oom_killed", map[string]any{
		"command":   "dd if=/dev/zero of=/dev/null bs=200M count=1",
		"timeoutMs": 30000,
		"limits":    map[string]any{"memoryBytes": 64 << 20},
	})
	if !ok {
		return
	}
	if r["oomKilled"] == true && r["errorCode"] == "oom_killed" {
		c.pass("oom_killed")
		return
	}
	c.fail("oom_killed", "oomKilled %v, errorCode %v, error %v", r["oomKilled"], r["errorCode"], r["error"])
}

// landlock: a command cannot write into svcd's data dir (the token's), which
// the unit itself lets svcd write; only the sandbox's Landlock rules stop it.
func (c *checker) landlock() {
	target := filepath.Join(dataDir, "vmtest-landlock")
	r, ok := c.exec("landlock_roots", map[string]any{"command": "echo x > " + target})
	if !ok {
		return
	}
	if _, err := os.Stat(target); err == nil {
		c.fail("landlock_roots", "the command wrote %s (exitCode %v)", target, r["exitCode"])
		_ = os.Remove(target)
		return
	}
	if sandbox.LandlockABI() == 0 {
		info("landlock_roots", "no Landlock in this kernel")
	}
	if n, _ := r["exitCode"].(float64); n != 0 && strings.Contains(fmt.Sprint(r["stderr"]), "ermission denied") {
		c.pass("landlock_roots")
		return
	}
	c.fail("landlock_roots", "exitCode %v, stderr %q, error %v", r["exitCode"], r["stderr"], r["error"])
}

// cleanup: a setsid'd child a command leaves behind is gone once the
// command's answer is back (the cgroup is killed), and no command cgroup
// holds a process.
func (c *checker) cleanup() {
	r, ok := c.exec("cleanup", map[string]any{"command": "setsid sleep 321 >/dev/null 2>&1 & echo started"})
	if !ok {
		return
	}
	if strings.TrimSpace(fmt.Sprint(r["stdout"])) != "started" {
		c.fail("cleanup", "stdout %q, error %v", r["stdout"], r["error"])
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	var left string
	for {
		out, _ := exec.Command("pgrep", "-f", "sleep 321").Output()
		left = strings.TrimSpace(string(out))
		if left == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	busy := populated(filepath.Join(unitCg, sandbox.DetectedParentName))
	if left == "" && len(busy) == 0 {
		c.pass("cleanup")
		return
	}
	c.fail("cleanup", "left: pids %q, populated command cgroups %v", left, busy)
}

// populated lists the cgroups under dir that hold a process.
func populated(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs")); strings.TrimSpace(string(b)) != "" {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// stop: systemctl stop svcd leaves no process and no cgroup.
func (c *checker) stop() {
	if out, err := exec.Command("systemctl", "stop", "svcd").CombinedOutput(); err != nil {
		c.fail("stop", "systemctl stop svcd: %v %s", err, out)
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	var procs, cg string
	for {
		out, _ := exec.Command("pgrep", "-x", "svcd").Output()
		procs = strings.TrimSpace(string(out))
		cg = ""
		if _, err := os.Stat(unitCg); err == nil {
			cg = unitCg
		}
		if procs == "" && cg == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if procs == "" && cg == "" {
		c.pass("stop")
		return
	}
	c.fail("stop", "after systemctl stop: svcd pids %q, cgroup %q left", procs, cg)
}
