package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// rig is the cluster under test and everything the load and faults share.
type rig struct {
	t         *testing.T
	c         *harness.Cluster
	nodes     []*node
	hist      *History
	workdir   string // cwd of every exec and file write, under which nothing may outlive the run
	client    *http.Client
	bin       string
	codexHome string // CODEX_HOME of the run's Codex processes
}

// node is one full member; its URL never changes (fixed address), so load
// goroutines keep using it while the fault loop restarts the daemon.
type node struct {
	name string
	d    *harness.Daemon
	url  string
	dir  string // this node's own work dir (exec cwd, files)
}

func newRig(t *testing.T, lab *harness.NetLab, env, env1 []string) *rig {
	// A copy named apart from svcd: other test processes on a shared
	// machine clean up after themselves by name (a run's nodes once all
	// got SIGTERM at the same instant, the witness, named the same but run
	// as "svcd witness", not).
	r := &rig{t: t, hist: &History{}, bin: harness.BinaryCopy(t, t.TempDir(), "chaosnode")}
	r.workdir = t.TempDir()
	// The AI replies' exec blocks append to logs here (convLog): a write
	// root of the nodes' commands, which may write only their scratch dir
	// by default (docs/sandbox.md).
	instrDir := filepath.Join(r.workdir, "instr")
	if err := os.MkdirAll(instrDir, 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env[:len(env):len(env)], "SVC_EXEC_WRITE_ROOTS="+instrDir)
	r.c = harness.StartClusterWith(t, harness.ClusterOptions{Env: env, Env1: env1, Bin: r.bin, Lab: lab})
	for _, d := range []*harness.Daemon{r.c.N1, r.c.N2} {
		name := "n1"
		if d == r.c.N2 {
			name = "n2"
		}
		dir := filepath.Join(r.workdir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r.nodes = append(r.nodes, &node{name: name, d: d, url: d.URL, dir: dir})
	}
	// One connection per request: a kept-alive connection to a killed
	// node would turn the next request's error into a stale-socket reset.
	r.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return r
}

// answer is what one HTTP call came back with.
type answer struct {
	status int
	body   []byte
	header http.Header
	err    error
}

// call sends one JSON request with the token and a deadline.
func (r *rig) call(ctx context.Context, n *node, method, path string, body any, timeout time.Duration) answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.url+path, rd)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+harness.ClusterToken)
	resp, err := r.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, header: resp.Header, err: err}
}

// errorCode is the error.code of a JSON error body, "" when it is none.
func errorCode(b []byte) string {
	var env struct {
		OK    *bool `json:"ok"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &env) != nil || env.OK == nil || *env.OK {
		return ""
	}
	return env.Error.Code
}

// errorMessage is the error.message of a JSON error body.
func errorMessage(b []byte) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &env)
	return truncate(env.Error.Message, 200)
}

// record fills op from an answer and adds it to the history: a 2xx is ok,
// another status a failure with its code, no answer ambiguous.
func (r *rig) record(op *Op, a answer) {
	op.End = time.Now()
	op.Status = a.status
	switch {
	case a.err != nil:
		op.Outcome, op.Err = "ambiguous", shortErr(a.err)
	case a.status >= 200 && a.status < 300:
		op.Outcome = "ok"
	default:
		op.Outcome, op.Code = "failed", errorCode(a.body)
		op.Detail = merge(op.Detail, map[string]any{"message": errorMessage(a.body)})
		if op.Code == "" {
			op.Detail = merge(op.Detail, map[string]any{"body": truncate(string(a.body), 300)})
		}
	}
	r.hist.Add(op)
}

func merge(a, b map[string]any) map[string]any {
	if a == nil {
		a = map[string]any{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func shortErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "broken pipe"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return truncate(s, 200)
}
