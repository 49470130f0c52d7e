// Package harness starts the real svcd binary for end-to-end tests: it builds
// the binary once per test process, runs it on a free loopback port with a
// temporary data dir, and gives tests a small HTTP client for it.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/svcd once per test process and returns its path. Set
// SVCD_E2E_RACE=1 to build it with the race detector.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "svcd-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "svcd")
		args := []string{"build", "-o", binPath}
		if os.Getenv("SVCD_E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/svcd")
		cmd := exec.Command("go", args...)
		cmd.Dir = RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// BinaryCopy copies the binary to dir/name, for a long run whose
// processes must not match a name-based kill (`pkill -f "svcd serve"`,
// `killall svcd`) that other test processes on a shared machine may send.
func BinaryCopy(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Main runs a test package's tests, then removes the binary Binary built.
// Call it from TestMain: os.Exit(harness.Main(m)).
//
// Every daemon the tests start (they inherit this environment) writes the
// errors its handlers answered that their routes do not list (the
// supervisor's ErrorTapDirEnv) into one folder; any line there fails the
// run, as the supervisor's own tests fail on one.
func Main(m *testing.M) int {
	tapDir, err := os.MkdirTemp("", "svcd-errortap-")
	if err == nil {
		os.Setenv(supervisor.ErrorTapDirEnv, tapDir)
		defer os.RemoveAll(tapDir)
	}
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	if undeclared := tappedErrors(tapDir); len(undeclared) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: daemons answered errors their routes do not list (Route.Errors in supervisor/; name method path status code):")
		for _, l := range undeclared {
			fmt.Fprintln(os.Stderr, "  "+l)
		}
		if code == 0 {
			code = 1
		}
	}
	return code
}

// tappedErrors reads the distinct lines the daemons wrote into dir.
func tappedErrors(dir string) []string {
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				seen[l] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// RepoRoot is the module root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// FreePort returns a loopback address with a port free at the time of the call.
func FreePort(t testing.TB) string {
	t.Helper()
	return FreePortOn(t, "127.0.0.1")
}

// Options configure one daemon.
type Options struct {
	DataDir string // default: a new t.TempDir()
	// AliveOnly starts the daemon with Daemon.AliveOnly set: Start waits
	// for /healthz, not /readyz (a node that can never catch up).
	AliveOnly bool
	Token     string // default: a fixed test token passed as SVC_SHARED_TOKEN
	// GeneratedToken starts the daemon with no configured token, so it
	// generates one into the data dir; Daemon.Token is read from that file.
	GeneratedToken bool
	Args           []string // extra flags after "serve"
	// Addr fixes the listen address (kept across Restart); default a new
	// free 127.0.0.1 port at every start.
	Addr string
	// KeepAddr lets the harness pick the first free port (see start) and
	// keeps it across Restart, for clients that must find the restarted
	// daemon where it was (a browser extension).
	KeepAddr bool
	// Prefix runs the daemon through another command, e.g.
	// ["ip", "netns", "exec", "NS"] for a node in a network namespace.
	Prefix []string
	Env    []string // extra KEY=VALUE pairs
	// Bin runs another copy of the binary (default Binary(t)): see
	// BinaryCopy.
	Bin string
	// DefaultTokenLevel runs the daemon at its default require_token
	// level ("writes"). Without it the harness sets SPEC.md's "host-ops",
	// the level the tests written before the default changed assume (they
	// post state-changing routes without the token); a test's own
	// SVC_REQUIRE_TOKEN in Env comes later and wins either way.
	DefaultTokenLevel bool
	// TTY, when set, is the daemon's controlling terminal and stdin, as
	// when it is started from a shell (`svcd serve &`, tmux): the daemon
	// leads a session on it.
	TTY *os.File
}

// Daemon is one running `svcd serve`.
type Daemon struct {
	t       testing.TB
	opts    Options
	Addr    string
	URL     string
	Token   string
	DataDir string
	// agentdAddr is the agentd listen address the harness gave the daemon.
	agentdAddr string
	cmd        *exec.Cmd
	logs       *syncBuffer
	done       chan struct{}
	exitErr    error
	// AliveOnly makes starts wait for /healthz only, not /readyz: a node
	// that cannot catch up (no leader to learn the commit index from) is
	// never ready (issue 33).
	AliveOnly bool
}

// Start runs `svcd serve` and waits until /healthz answers ok. The daemon is
// killed when the test ends.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Token == "" && !opts.GeneratedToken {
		opts.Token = "test-token-0123456789abcdef"
	}
	d := &Daemon{t: t, opts: opts, Token: opts.Token, DataDir: opts.DataDir, logs: &syncBuffer{}, AliveOnly: opts.AliveOnly}
	d.start()
	t.Cleanup(func() {
		d.Kill()
		// A test that failed shows what the daemon said: a flake seen once
		// under load is diagnosed from this or not at all.
		if t.Failed() {
			t.Logf("svcd %s log (%s):\n%s", d.Addr, d.DataDir, LogTail(d.Logs(), failLogBytes))
		}
	})
	return d
}

// failLogBytes bounds the daemon log a failed test prints: the end of it,
// where the failure is, without flooding the output of a long test.
const failLogBytes = 64 << 10

// LogTail is the last n bytes of s, starting at a line, with a note of
// what was cut.
func LogTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 {
		cut += i + 1
	}
	return fmt.Sprintf("[… %d bytes before]\n%s", cut, s[cut:])
}

func (d *Daemon) start() {
	t := d.t
	t.Helper()
	// A port FreePort picked is free only when it looks: until the daemon
	// binds it, any connect on the machine may take it as its ephemeral
	// source port (CI runs several test processes at once). A port the
	// harness picked is picked again when the daemon reports it taken; an
	// address the test fixed, or one a Restart must keep, is not.
	pick := d.opts.Addr == "" && (!d.opts.KeepAddr || d.Addr == "")
	for attempt := 1; ; attempt++ {
		if pick {
			d.Addr = FreePort(t)
		} else if d.opts.Addr != "" {
			d.Addr = d.opts.Addr
		}
		from := len(d.Logs())
		err := d.launch()
		if err == nil {
			break
		}
		if pick && attempt < 5 && strings.Contains(d.Logs()[from:], "listen on "+d.Addr+": ") && strings.Contains(d.Logs()[from:], "address already in use") {
			t.Logf("port %s was taken before svcd bound it; picking another", d.Addr)
			continue
		}
		t.Fatalf("svcd did not become healthy: %v\nlogs:\n%s", err, d.Logs())
	}
	if d.opts.GeneratedToken {
		b, err := os.ReadFile(filepath.Join(d.DataDir, "shared_token"))
		if err != nil {
			t.Fatalf("generated token file: %v", err)
		}
		d.Token = strings.TrimSpace(string(b))
	}
}

// launch runs the binary on d.Addr and waits until it is healthy; on an
// error the process is gone.
func (d *Daemon) launch() error {
	t := d.t
	t.Helper()
	d.URL = "http://" + d.Addr
	args := append([]string{"serve", "-listen", d.Addr, "-data-dir", d.DataDir}, d.opts.Args...)
	bin := d.opts.Bin
	if bin == "" {
		bin = Binary(t)
	}
	argv := append(append([]string{}, d.opts.Prefix...), append([]string{bin}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if d.agentdAddr == "" {
		// agentd runs by default: give each daemon its own port for it (kept
		// across Restart) so parallel tests do not queue on 4319. A test's
		// own SVC_AGENTD_LISTEN in Env comes later and wins.
		d.agentdAddr = FreePort(t)
	}
	cmd.Env = append(os.Environ(), "SVC_SHARED_TOKEN="+d.opts.Token, "SVC_AGENTD_LISTEN="+d.agentdAddr)
	// The tests written before pairing codes pair fake plugins with the
	// shared token; the pairing tests set SVC_BROWSER_PAIRING=codes in Env,
	// which comes later and wins.
	cmd.Env = append(cmd.Env, "SVC_BROWSER_PAIRING=token")
	if !d.opts.DefaultTokenLevel {
		cmd.Env = append(cmd.Env, "SVC_REQUIRE_TOKEN=host-ops")
	}
	cmd.Env = append(cmd.Env, d.opts.Env...)
	cmd.Stdout = d.logs
	cmd.Stderr = d.logs
	// Pdeathsig: a test binary that dies (go test's -timeout panic, a
	// killed run) takes its daemons with it instead of leaving them on
	// their ports, busy, under the next run (seen after a killed make test).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if d.opts.TTY != nil {
		cmd.Stdin = d.opts.TTY
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start svcd: %v", err)
	}
	d.cmd = cmd
	done := make(chan struct{})
	d.done = done
	go func() { d.exitErr = cmd.Wait(); close(done) }()
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		d.Kill()
		return err
	}
	return nil
}

// ready reports /readyz?standbyok=true: a standby is ready, a leader only
// once it has recovered what an earlier run left.
func (d *Daemon) ready(client *http.Client) bool {
	resp, err := client.Get(d.URL + "/readyz?standbyok=true")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// WaitHealthy polls /healthz until it answers ok and /readyz until the node
// is ready, or the timeout passes.
func (d *Daemon) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("svcd exited: %v", d.exitErr)
		default:
		}
		resp, err := client.Get(d.URL + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "ok" && (d.AliveOnly || d.ready(client)) {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("no ok from %s/healthz within %s", d.URL, timeout)
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Kill sends SIGKILL to the daemon (not its process group: tests of orphan
// cleanup rely on the daemon's own guarantees) and waits for it to exit.
func (d *Daemon) Kill() {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// Stop freezes the daemon with SIGSTOP: it reads, answers and records
// nothing more, while its sockets stay open (a plugin's frames are taken
// by the kernel and never seen). Kill or Restart ends it.
func (d *Daemon) Stop() {
	_ = d.cmd.Process.Signal(syscall.SIGSTOP)
}

// Terminate sends SIGTERM and waits up to timeout for exit, returning the
// process's exit error (nil for exit 0).
func (d *Daemon) Terminate(timeout time.Duration) error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.exitErr
	case <-time.After(timeout):
		d.Kill()
		return fmt.Errorf("svcd did not exit within %s of SIGTERM", timeout)
	}
}

// Restart starts the daemon again on the same data dir (after Kill or
// Terminate): on Options.Addr when one was given, on the address it had
// with KeepAddr (a plugin reconnecting to a known address), else on a new
// free port.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Kill()
	d.start()
}

// Logs is everything the daemon wrote to stdout and stderr so far.
func (d *Daemon) Logs() string { return d.logs.String() }

// WaitLog waits until the daemon's output contains substr: log lines reach
// the test through a pipe, a little after the request that caused them.
func (d *Daemon) WaitLog(substr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(d.Logs(), substr) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map, failing the test if it is not JSON.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode response (%v): %s", err, r.Body)
	}
}

// Do sends one request. body may be nil, a string or []byte (sent as is), or
// any other value (sent as JSON). headers are "Key: value" strings.
func (d *Daemon) Do(method, path string, body any, headers ...string) *Response {
	d.t.Helper()
	return Do(d.t, method, d.URL+path, body, headers...)
}

// DoAuth is Do with the daemon's bearer token.
func (d *Daemon) DoAuth(method, path string, body any, headers ...string) *Response {
	d.t.Helper()
	return d.Do(method, path, body, append(headers, "Authorization: Bearer "+d.Token)...)
}

// Do sends one request to an absolute URL with a 30 s bound. It is a
// well-behaved client (docs/ha.md "What a client should retry"): a GET of
// the API answered 503 catching_up or starting with Retry-After — a read
// that could not be proved current yet, a node still opening its store — is
// sent again after the wait the answer names, for at most retryReadsFor;
// the last answer is returned either way. A test that asserts on such a
// 503 itself uses DoOnce.
func Do(t testing.TB, method, url string, body any, headers ...string) *Response {
	t.Helper()
	return doRetrying(t, retryReadsFor, method, url, body, headers...)
}

// doRetrying is Do with its bound on the retries.
func doRetrying(t testing.TB, within time.Duration, method, url string, body any, headers ...string) *Response {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := DoOnce(t, method, url, body, headers...)
		wait, again := retryRead(method, url, r)
		if !again || time.Now().Add(wait).After(deadline) {
			return r
		}
		time.Sleep(wait)
	}
}

// DoOnce sends one request to an absolute URL with a 30 s bound and
// returns its answer, whatever it is.
func DoOnce(t testing.TB, method, url string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(k), "Host") {
			req.Host = strings.TrimSpace(v)
			continue
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// DoOnce is Daemon.Do without the retry of a read that was not current
// yet: for a test about that 503 itself.
func (d *Daemon) DoOnce(method, path string, body any, headers ...string) *Response {
	d.t.Helper()
	return DoOnce(d.t, method, d.URL+path, body, headers...)
}

// retryReadsFor bounds how long Do retries a read: a node that is still not
// current after it is a finding, and the test sees the 503.
const retryReadsFor = 20 * time.Second

// retryRead says whether r is an answer docs/ha.md tells a client to retry
// and after how long (api.NotCurrentYet, the rule svcctl follows too).
func retryRead(method, rawURL string, r *Response) (time.Duration, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, false
	}
	wait, _, again := api.NotCurrentYet(method, u.Path, r.Status, r.Header, r.Body)
	return wait, again
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Get fetches url within timeout and returns the body of a 200 answer; any
// other status or a transport error is an error. Unlike Do it never fails
// the test, for pollers that run while nodes are killed.
func Get(url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return b, nil
}
